package refswitch

import (
	"sync"
	"sync/atomic"
)

// egressQueue is a port's bounded FIFO of frames waiting for its writer. depth counts the frames
// queued and those the writer has taken but not yet sent: it is the model's enq_qdepth, and a
// frame that finds it at the bound is tail-dropped.
type egressQueue struct {
	mu    sync.Mutex
	buf   [][]byte // ring; its length, set once, is the bound
	head  int
	n     int
	depth atomic.Int64
	wake  chan struct{}
}

func newEgressQueue(n int) egressQueue {
	return egressQueue{buf: make([][]byte, n), wake: make(chan struct{}, 1)}
}

func (q *egressQueue) capacity() int { return len(q.buf) }

// push appends f unless the queue is at its bound. The caller signals the writer afterwards.
func (q *egressQueue) push(f []byte) bool {
	if q.depth.Load() >= int64(q.capacity()) {
		return false
	}
	q.mu.Lock()
	if q.n == len(q.buf) {
		q.mu.Unlock()
		return false
	}
	q.buf[(q.head+q.n)%len(q.buf)] = f
	q.n++
	q.depth.Add(1)
	q.mu.Unlock()
	return true
}

// signal wakes the writer if it is not already awake.
func (q *egressQueue) signal() {
	select {
	case q.wake <- struct{}{}:
	default:
	}
}

// popAll moves every queued frame to dst, oldest first.
func (q *egressQueue) popAll(dst [][]byte) [][]byte {
	q.mu.Lock()
	for ; q.n > 0; q.n-- {
		dst = append(dst, q.buf[q.head])
		q.buf[q.head] = nil
		q.head = (q.head + 1) % len(q.buf)
	}
	q.mu.Unlock()
	return dst
}

// framePool recycles the buffers of frames the model emits: INA frames and other small ones
// come from one size class, anything up to maxFrame from another.
type framePool struct{ small, large sync.Pool }

const smallFrame = 2048

func (fp *framePool) get(n int) []byte {
	if n <= smallFrame {
		if b, ok := fp.small.Get().(*[smallFrame]byte); ok {
			return b[:n]
		}
		return new([smallFrame]byte)[:n]
	}
	if b, ok := fp.large.Get().(*[maxFrame]byte); ok {
		return b[:n]
	}
	return new([maxFrame]byte)[:n]
}

// put returns a buffer that get made (by its capacity); others are left to the collector.
func (fp *framePool) put(f []byte) {
	switch cap(f) {
	case smallFrame:
		fp.small.Put((*[smallFrame]byte)(f[:smallFrame]))
	case maxFrame:
		fp.large.Put((*[maxFrame]byte)(f[:maxFrame]))
	}
}
