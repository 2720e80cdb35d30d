package netpack

import "fmt"

// fp32 gradients: 4 bytes per parameter. Parameter counts are exact where a reference
// implementation publishes them.
//
// The image models (the paper's workload: "standard image models on a large image dataset") take
// their iteration time from a published measurement on a named GPU: TensorFlow's tf_cnn_benchmarks
// on one NVIDIA Tesla P100 of a DGX-1, synthetic ImageNet data, the batch per GPU listed there
// (tensorflow.org/performance/benchmarks, "Details for NVIDIA DGX-1 (NVIDIA Tesla P100)", May
// 2017): InceptionV3 142 images/s, ResNet-50 219, ResNet-152 91.8, AlexNet 2987 (batch 512),
// VGG16 154; ComputeSec = batch / throughput. The other profiles are ESTIMATES for a V100-class GPU
// (batch / typical published throughput), marked so in Source.
//
// ForwardSec = ComputeSec / 3 for every profile: the backward pass costs about twice the forward
// pass (it computes gradients with respect to both activations and weights; 2N vs 4N FLOPs per
// token in Kaplan et al., "Scaling Laws for Neural Language Models", 2020, §2.1), and gradients
// can be sent while it runs (BytePS, OSDI'20; ByteScheduler, SOSP'19) but the next forward pass
// needs the updated parameters. Replace them with measured numbers via a jobs file ("model": {...}).
var profiles = map[string]Model{
	"resnet50":  image("resnet50", 25_557_032, 64, 219, "He et al. CVPR'16 / torchvision resnet50 (25.6M, ~102 MB fp32)"),
	"resnet152": image("resnet152", 60_192_808, 64, 91.8, "He et al. CVPR'16 / torchvision resnet152 (60.2M, ~241 MB)"),
	"vgg16": image("vgg16", 138_357_544, 64, 154, "Simonyan & Zisserman ICLR'15 / torchvision vgg16 (138M, ~553 MB); "+
		"the communication-heavy model of the ATP and BytePS evaluations"),
	"inception3": image("inception3", 23_834_568, 64, 142, "Szegedy et al. CVPR'16 / Keras InceptionV3 (23.8M, ~95 MB)"),
	"alexnet":    image("alexnet", 61_100_840, 512, 2987, "Krizhevsky et al. NIPS'12 / torchvision alexnet (61.1M, ~244 MB)"),
	"bert-base": estimate("bert-base", 110_000_000, 0.250, 32,
		"params: Devlin et al. NAACL'19 (110M, ~440 MB); compute: estimated, seq 128, ~130 seq/s FP32 V100"),
	"bert-large": estimate("bert-large", 340_000_000, 0.400, 16,
		"params: Devlin et al. NAACL'19 (340M, ~1.36 GB); compute: estimated, seq 128, ~40 seq/s FP32 V100"),
	"gpt2-small": estimate("gpt2-small", 124_439_808, 0.450, 8,
		"params: Radford et al. 2019 / HuggingFace gpt2 (124M counted, 117M reported, ~498 MB); compute: estimated, seq 1024, ~18 seq/s FP32 V100"),
	"transformer": estimate("transformer", 65_000_000, 0.150, 4096,
		"params: Vaswani et al. NIPS'17 Table 3 base (65M, ~260 MB); batch is tokens; compute: estimated, ~27k tokens/s FP32 V100"),
}

// ImageModels are the profiles of the paper's image-model workload.
var ImageModels = []string{"alexnet", "inception3", "resnet152", "resnet50", "vgg16"}

// image is an image model measured by tf_cnn_benchmarks on one P100 (see above).
func image(name string, params float64, batch int, imgPerSec float64, paper string) Model {
	c := float64(batch) / imgPerSec
	return Model{Name: name, Params: params, GradientBytes: 4 * params, ComputeSec: c, ForwardSec: c / 3, BatchPerGPU: batch,
		Source: fmt.Sprintf("params: %s; compute: %g images/s at batch %d on one NVIDIA Tesla P100 (tf_cnn_benchmarks, DGX-1, synthetic data, tensorflow.org/performance/benchmarks, May 2017); forward pass a third of it", paper, imgPerSec, batch)}
}

func estimate(name string, params, computeSec float64, batch int, source string) Model {
	return Model{Name: name, Params: params, GradientBytes: 4 * params, ComputeSec: computeSec, ForwardSec: computeSec / 3,
		BatchPerGPU: batch, Source: source + "; forward pass a third of it"}
}
