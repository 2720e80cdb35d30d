package worker

import "math"

type intCodec struct{ data []int32 }

func (c intCodec) load(i int, v *[K]int32, _ bool) {
	n := copy(v[:], c.data[i*K:min(len(c.data), (i+1)*K)])
	clear(v[n:])
}

func (c intCodec) store(i int, v *[K]int32, _ bool) {
	copy(c.data[i*K:min(len(c.data), (i+1)*K)], v[:])
}

func (intCodec) isFloat() bool { return false }

type floatCodec struct {
	data  []float32
	scale float64
}

func (c floatCodec) load(i int, v *[K]int32, bypass bool) {
	src := c.data[i*K : min(len(c.data), (i+1)*K)]
	for j, x := range src {
		if bypass {
			v[j] = int32(math.Float32bits(x))
		} else {
			v[j] = toFixed(x, c.scale)
		}
	}
	clear(v[len(src):])
}

func (c floatCodec) store(i int, v *[K]int32, float bool) {
	dst := c.data[i*K : min(len(c.data), (i+1)*K)]
	for j := range dst {
		if float {
			dst[j] = math.Float32frombits(uint32(v[j]))
		} else {
			dst[j] = fromFixed(v[j], c.scale)
		}
	}
}

func (floatCodec) isFloat() bool { return true }
