// Command cabi is the worker's C ABI, built as a shared library for other languages (the Python
// package in python/ loads it with ctypes): go build -buildmode=c-shared -o libinapack.so ./worker/cabi
//
// Every function returns a status (0 ok, else one of the INAPACK_E* codes of status.h) and copies
// the Go error's text, NUL-terminated, into the caller's err buffer. Tensors are the caller's
// memory, used in place for the duration of the call and never kept. Calls on one worker are
// serialised. It needs cgo (a C compiler); without one, the package drops out of ./... builds and
// tests.
package main

// #include "status.h"
import "C"

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/inapack/inapack/ps"
	"github.com/inapack/inapack/worker"
)

func main() {}

// handle is one open worker and its transports.
type handle struct {
	mu    sync.Mutex // a Worker's calls must not overlap
	w     allReducer
	close func() error
}

// allReducer is a worker on one thread (worker.Worker) or several (worker.Group).
type allReducer interface {
	AllReduceInt32(ctx context.Context, data []int32) error
	AllReduceFloat32(ctx context.Context, data []float32, scale float64) error
	AllReduceFloat32Scaled(ctx context.Context, data []float32, bucket int) error
	AllReduceMany(ctx context.Context, ts []worker.Tensor) error
	AllReduceManyScaled(ctx context.Context, ts []worker.Tensor, bucket int) error
	Snapshot() worker.StatsSnapshot
}

// status maps err to a status code and writes its text into the caller's buffer.
func status(err error, buf *C.char, n C.int) C.int {
	if err == nil {
		return C.INAPACK_OK
	}
	if buf != nil && n > 0 {
		b := unsafe.Slice((*byte)(unsafe.Pointer(buf)), int(n))
		b[copy(b[:len(b)-1], err.Error())] = 0
	}
	switch {
	case errors.Is(err, worker.ErrConfig), errors.Is(err, ps.ErrConfig), errors.Is(err, errConfig):
		return C.INAPACK_ECONFIG
	case errors.Is(err, worker.ErrNoProgress), errors.Is(err, context.DeadlineExceeded):
		return C.INAPACK_ENOPROGRESS
	case errors.Is(err, worker.ErrOverflow):
		return C.INAPACK_EOVERFLOW
	case errors.Is(err, worker.ErrClosedWorker):
		return C.INAPACK_ECLOSED
	}
	return C.INAPACK_ERROR
}

var errConfig = errors.New("inapack: bad argument")

// handles maps the ids given to C to open workers. (runtime/cgo.Handle would panic on a stale id;
// a double close from Python must be an error, not a crash.)
var (
	handlesMu sync.Mutex
	handles   = map[int64]*handle{}
	lastID    atomic.Int64
)

func lookup(h C.int64_t) (*handle, error) {
	handlesMu.Lock()
	defer handlesMu.Unlock()
	if v := handles[int64(h)]; v != nil {
		return v, nil
	}
	return nil, fmt.Errorf("%w: no open worker %d (closed, or never opened)", errConfig, h)
}

// inapack_open starts a worker from a JSON config (see config.go) and writes its id to *id.
//
//export inapack_open
func inapack_open(configJSON *C.char, id *C.int64_t, errBuf *C.char, errLen C.int) C.int {
	var c config
	if err := decodeConfig(C.GoString(configJSON), &c); err != nil {
		return status(err, errBuf, errLen)
	}
	w, closeAll, err := c.open()
	if err != nil {
		return status(err, errBuf, errLen)
	}
	n := lastID.Add(1)
	handlesMu.Lock()
	handles[n] = &handle{w: w, close: closeAll}
	handlesMu.Unlock()
	*id = C.int64_t(n)
	return C.INAPACK_OK
}

// inapack_close releases a worker and its transport. Closing 0 or twice is an error, not a crash.
//
//export inapack_close
func inapack_close(h C.int64_t, errBuf *C.char, errLen C.int) C.int {
	handlesMu.Lock()
	v := handles[int64(h)]
	delete(handles, int64(h))
	handlesMu.Unlock()
	if v == nil {
		return status(fmt.Errorf("%w: no open worker %d (closed, or never opened)", errConfig, h), errBuf, errLen)
	}
	v.mu.Lock() // wait for a call in progress
	defer v.mu.Unlock()
	return status(v.close(), errBuf, errLen)
}

// call runs f on worker h, after the worker's call in progress if any, and reports f's error.
func call(h C.int64_t, errBuf *C.char, errLen C.int, f func(w allReducer) error) C.int {
	v, err := lookup(h)
	if err != nil {
		return status(err, errBuf, errLen)
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	return status(f(v.w), errBuf, errLen)
}

// inapack_allreduce_int32 replaces data[0:n] with the sum over the job's workers.
//
//export inapack_allreduce_int32
func inapack_allreduce_int32(h C.int64_t, data *C.int32_t, n C.int64_t, errBuf *C.char, errLen C.int) C.int {
	return call(h, errBuf, errLen, func(w allReducer) error {
		if err := checkLen(unsafe.Pointer(data), n); err != nil {
			return err
		}
		return w.AllReduceInt32(context.Background(), unsafe.Slice((*int32)(unsafe.Pointer(data)), int(n)))
	})
}

// inapack_allreduce_float32 replaces data[0:n] with the sum over the job's workers, in fixed point:
// with scale > 0, that scale for every value (worker.AllReduceFloat32); with scale 0, a scale per
// bucket of `bucket` values agreed by the workers (worker.AllReduceFloat32Scaled; bucket 0: the
// default).
//
//export inapack_allreduce_float32
func inapack_allreduce_float32(h C.int64_t, data *C.float, n C.int64_t, scale C.double, bucket C.int64_t, errBuf *C.char, errLen C.int) C.int {
	return call(h, errBuf, errLen, func(w allReducer) error {
		if err := checkLen(unsafe.Pointer(data), n); err != nil {
			return err
		}
		return allReduceFloat(w, unsafe.Slice((*float32)(unsafe.Pointer(data)), int(n)), float64(scale), int(bucket))
	})
}

func allReduceFloat(w allReducer, data []float32, scale float64, bucket int) error {
	if scale == 0 {
		return w.AllReduceFloat32Scaled(context.Background(), data, bucket)
	}
	return w.AllReduceFloat32(context.Background(), data, scale)
}

// inapack_allreduce_many all-reduces count tensors in one pipelined call (worker.AllReduceMany):
// ptrs[i] holds lens[i] values, float32 if floats[i] != 0, else int32; float32 ones with the scale
// arguments of inapack_allreduce_float32 (scale 0: per-bucket scales, each tensor cut into its own
// buckets). Every worker must pass the same types and lengths in the same order.
//
//export inapack_allreduce_many
func inapack_allreduce_many(h C.int64_t, count C.int, ptrs *unsafe.Pointer, lens *C.int64_t, floats *C.int, scale C.double, bucket C.int64_t, errBuf *C.char, errLen C.int) C.int {
	return call(h, errBuf, errLen, func(w allReducer) error {
		if count < 0 || count > 0 && (ptrs == nil || lens == nil || floats == nil) {
			return fmt.Errorf("%w: %d tensors", errConfig, count)
		}
		ps, ns, fs := unsafe.Slice(ptrs, int(count)), unsafe.Slice(lens, int(count)), unsafe.Slice(floats, int(count))
		ts := make([]worker.Tensor, count)
		for i := range ts {
			if err := checkLen(ps[i], ns[i]); err != nil {
				return err
			}
			switch {
			case ns[i] == 0:
			case fs[i] != 0:
				ts[i] = worker.Tensor{Float32: unsafe.Slice((*float32)(ps[i]), int(ns[i])), Scale: float64(scale)}
			default:
				ts[i] = worker.Tensor{Int32: unsafe.Slice((*int32)(ps[i]), int(ns[i]))}
			}
		}
		if scale == 0 {
			return w.AllReduceManyScaled(context.Background(), ts, int(bucket))
		}
		return w.AllReduceMany(context.Background(), ts)
	})
}

func checkLen(p unsafe.Pointer, n C.int64_t) error {
	if n < 0 || n > 1<<40 || (p == nil && n > 0) {
		return fmt.Errorf("%w: tensor of %d values at %p", errConfig, n, p)
	}
	return nil
}

// inapack_stats writes the worker's counters (worker.StatsSnapshot) as JSON into buf.
//
//export inapack_stats
func inapack_stats(h C.int64_t, buf *C.char, n C.int, errBuf *C.char, errLen C.int) C.int {
	v, err := lookup(h)
	if err != nil {
		return status(err, errBuf, errLen)
	}
	j, _ := json.Marshal(v.w.Snapshot())
	if len(j) >= int(n) {
		return status(fmt.Errorf("%w: stats buffer of %d bytes, need %d", errConfig, n, len(j)+1), errBuf, errLen)
	}
	b := unsafe.Slice((*byte)(unsafe.Pointer(buf)), int(n))
	b[copy(b, j)] = 0
	return C.INAPACK_OK
}
