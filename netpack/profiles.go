package netpack

// fp32 gradients: 4 bytes per parameter. Parameter counts are exact where a reference
// implementation publishes them. ComputeSec is forward+backward for BatchPerGPU samples on one
// V100-class GPU in FP32; these are ESTIMATES derived from published throughput (samples/s), i.e.
// ComputeSec = BatchPerGPU / throughput, and are marked so in Source. Replace them with measured
// numbers for your GPUs via a jobs file ("model": {...}).
var profiles = map[string]Model{
	"resnet50": {Name: "resnet50", Params: 25_557_032, GradientBytes: 4 * 25_557_032, ComputeSec: 0.170, BatchPerGPU: 64,
		Source: "params: He et al. CVPR'16 / torchvision resnet50 (25.6M, ~98 MB fp32); compute: estimated from ~380 img/s FP32 V100 (NVIDIA DeepLearningExamples ResNet-50 v1.5)"},
	"resnet152": {Name: "resnet152", Params: 60_192_808, GradientBytes: 4 * 60_192_808, ComputeSec: 0.420, BatchPerGPU: 64,
		Source: "params: He et al. CVPR'16 / torchvision resnet152 (60.2M, ~230 MB); compute: estimated, ~150 img/s FP32 V100 (tf_cnn_benchmarks class)"},
	"vgg16": {Name: "vgg16", Params: 138_357_544, GradientBytes: 4 * 138_357_544, ComputeSec: 0.280, BatchPerGPU: 64,
		Source: "params: Simonyan & Zisserman ICLR'15 / torchvision vgg16 (138M, ~528 MB); compute: estimated, ~230 img/s FP32 V100 (tf_cnn_benchmarks class); VGG16 is the communication-heavy model of the ATP and BytePS evaluations"},
	"inception3": {Name: "inception3", Params: 23_834_568, GradientBytes: 4 * 23_834_568, ComputeSec: 0.250, BatchPerGPU: 64,
		Source: "params: Szegedy et al. CVPR'16 / Keras InceptionV3 (23.8M, ~95 MB); compute: estimated, ~255 img/s FP32 V100 (tf_cnn_benchmarks class)"},
	"alexnet": {Name: "alexnet", Params: 61_100_840, GradientBytes: 4 * 61_100_840, ComputeSec: 0.060, BatchPerGPU: 128,
		Source: "params: Krizhevsky et al. NIPS'12 / torchvision alexnet (61.1M, ~244 MB); compute: estimated, ~2100 img/s FP32 V100"},
	"bert-base": {Name: "bert-base", Params: 110_000_000, GradientBytes: 4 * 110_000_000, ComputeSec: 0.250, BatchPerGPU: 32,
		Source: "params: Devlin et al. NAACL'19 (110M, ~440 MB); compute: estimated, seq 128, ~130 seq/s FP32 V100"},
	"bert-large": {Name: "bert-large", Params: 340_000_000, GradientBytes: 4 * 340_000_000, ComputeSec: 0.400, BatchPerGPU: 16,
		Source: "params: Devlin et al. NAACL'19 (340M, ~1.36 GB); compute: estimated, seq 128, ~40 seq/s FP32 V100"},
	"gpt2-small": {Name: "gpt2-small", Params: 124_439_808, GradientBytes: 4 * 124_439_808, ComputeSec: 0.450, BatchPerGPU: 8,
		Source: "params: Radford et al. 2019 / HuggingFace gpt2 (124M counted, 117M reported, ~498 MB); compute: estimated, seq 1024, ~18 seq/s FP32 V100"},
	"transformer": {Name: "transformer", Params: 65_000_000, GradientBytes: 4 * 65_000_000, ComputeSec: 0.150, BatchPerGPU: 4096,
		Source: "params: Vaswani et al. NIPS'17 Table 3 base (65M, ~260 MB); batch is tokens; compute: estimated, ~27k tokens/s FP32 V100"},
}
