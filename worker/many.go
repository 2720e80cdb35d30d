package worker

import (
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"sort"
)

// Tensor is one tensor of an AllReduceMany call: exactly one of Int32 and Float32 is set (an
// empty tensor is allowed and left alone).
type Tensor struct {
	Int32   []int32
	Float32 []float32
	// Scale is a Float32 tensor's fixed-point scale (0: DefaultScale); every worker must use the
	// same one. See AllReduceFloat32.
	Scale float64
}

// AllReduceMany replaces every tensor with its element-wise sum over all workers, as one pipelined
// call. Consecutive tensors of the same type (and, for float32, the same scale) form a bucket
// whose values are packed into chunks end to end, so small tensors share packets; every bucket's
// chunks share one window, so the tail of one bucket is in flight with the head of the next.
// Every worker must pass the same list of tensor types, lengths and scales. Sums and error bounds
// are those of AllReduceInt32 and AllReduceFloat32; an int32 sum that does not fit is reported
// with an *OverflowError naming the tensors, after every other chunk has completed.
func (w *Worker) AllReduceMany(ctx context.Context, ts []Tensor) error {
	cd, err := newManyCodec(ts, w.cfg.width())
	if err != nil {
		return err
	}
	return w.run(ctx, cd)
}

// manyCodec maps the chunks of a call onto its tensors: chunk c is chunk c-b.first of bucket b,
// whose values are the concatenation of the bucket's tensors, width values a chunk.
type manyCodec struct {
	buckets []bucket
	chunks  int
	width   int
}

type bucket struct {
	first, chunks int // chunk range in the call
	float         bool
	scale         float64
	parts         []part
}

// part is one tensor inside a bucket's value stream.
type part struct {
	tensor int // index in the call's list
	off, n int // value offset in the bucket stream, and length
	i32    []int32
	f32    []float32
}

func newManyCodec(ts []Tensor, width int) (*manyCodec, error) {
	cd := &manyCodec{width: width}
	var cur *bucket
	size := 0 // values in cur
	closeBucket := func() {
		if cur != nil {
			cur.chunks = (size + width - 1) / width
			cd.chunks += cur.chunks
		}
	}
	for i, t := range ts {
		if t.Int32 != nil && t.Float32 != nil {
			return nil, fmt.Errorf("%w: tensor %d has both Int32 and Float32 set", ErrConfig, i)
		}
		float, n := t.Float32 != nil, max(len(t.Int32), len(t.Float32))
		scale := t.Scale
		if float && scale == 0 {
			scale = DefaultScale
		}
		if float && (!(scale > 0) || math.IsInf(scale, 0)) {
			return nil, fmt.Errorf("%w: tensor %d: scale %v must be positive and finite", ErrConfig, i, t.Scale)
		}
		if n == 0 {
			continue
		}
		if cur == nil || cur.float != float || (float && cur.scale != scale) {
			closeBucket()
			cd.buckets = append(cd.buckets, bucket{first: cd.chunks, float: float, scale: scale})
			cur, size = &cd.buckets[len(cd.buckets)-1], 0
		}
		cur.parts = append(cur.parts, part{tensor: i, off: size, n: n, i32: t.Int32, f32: t.Float32})
		size += n
	}
	closeBucket()
	return cd, nil
}

func (cd *manyCodec) numChunks() int { return cd.chunks }

// locate returns chunk c's bucket and the value range [lo, hi) of the bucket stream it carries.
func (cd *manyCodec) locate(c int) (b *bucket, lo, hi int) {
	b = &cd.buckets[0]
	if len(cd.buckets) > 1 {
		i := sort.Search(len(cd.buckets), func(i int) bool { return cd.buckets[i].first+cd.buckets[i].chunks > c })
		b = &cd.buckets[i]
	}
	lo = (c - b.first) * cd.width
	return b, lo, lo + cd.width
}

// each calls fn for every tensor piece of [lo, hi): values [s, e) of part p land at v[at:].
func (b *bucket) each(lo, hi int, fn func(p *part, s, e, at int)) {
	j := 0
	if len(b.parts) > 1 {
		j = sort.Search(len(b.parts), func(i int) bool { return b.parts[i].off+b.parts[i].n > lo })
	}
	for ; j < len(b.parts) && b.parts[j].off < hi; j++ {
		p := &b.parts[j]
		s, e := max(lo, p.off)-p.off, min(hi, p.off+p.n)-p.off
		fn(p, s, e, p.off+s-lo)
	}
}

// load writes chunk c's values big-endian into v, converted in place (float32 to fixed point, or
// their bit patterns on the PS's exact path), and leaves the lanes past them zero (the sender
// fills the integrity lane).
func (cd *manyCodec) load(c int, v *[4 * K]byte, bypass bool) {
	b, lo, hi := cd.locate(c)
	filled := 0
	b.each(lo, hi, func(p *part, s, e, at int) {
		out := v[4*at : 4*(at+e-s)]
		switch {
		case !b.float:
			encodeInt32(out, p.i32[s:e])
		case bypass:
			for j, x := range p.f32[s:e] {
				binary.BigEndian.PutUint32(out[4*j:], math.Float32bits(x))
			}
		default:
			encodeFixed(out, p.f32[s:e], b.scale)
		}
		filled = at + e - s
	})
	clear(v[4*filled:])
}

// store writes a result's big-endian values into chunk c; float says they are float32 bit patterns.
func (cd *manyCodec) store(c int, v *[4 * K]byte, float bool) {
	b, lo, hi := cd.locate(c)
	b.each(lo, hi, func(p *part, s, e, at int) {
		in := v[4*at : 4*(at+e-s)]
		switch {
		case !b.float:
			decodeInt32(p.i32[s:e], in)
		case float:
			for j := range p.f32[s:e] {
				p.f32[s+j] = math.Float32frombits(binary.BigEndian.Uint32(in[4*j:]))
			}
		default:
			decodeFixed(p.f32[s:e], in, b.scale)
		}
	})
}

func (cd *manyCodec) isFloat(c int) bool {
	b, _, _ := cd.locate(c)
	return b.float
}

// saturated lists, in order, the int32 tensors with a value at an int32 bound in the overflowed
// chunks: the PS saturates only the values that do not fit, so the others there are exact.
func (cd *manyCodec) saturated(chunks []int) []int {
	seen := map[int]bool{}
	var out []int
	for _, c := range chunks {
		b, lo, hi := cd.locate(c)
		b.each(lo, hi, func(p *part, s, e, _ int) {
			if seen[p.tensor] || p.i32 == nil {
				return
			}
			for _, v := range p.i32[s:e] {
				if v == math.MaxInt32 || v == math.MinInt32 {
					seen[p.tensor] = true
					out = append(out, p.tensor)
					return
				}
			}
		})
	}
	sort.Ints(out)
	return out
}
