package worker

import (
	"errors"
	"fmt"
)

// ErrNoProgress is returned (wrapped) when no chunk completes for Config.ProgressTimeout: a peer
// worker, the PS or the switch has stopped. The worker's sequence state is then undefined and the
// job cannot continue.
var ErrNoProgress = errors.New("worker: all-reduce made no progress")

// ErrOverflow is returned (wrapped by *OverflowError) when an int32 sum does not fit in int32.
var ErrOverflow = errors.New("worker: int32 sum overflows")

// OverflowError lists the chunks whose exact sum does not fit in int32. Their values in the tensor
// are saturated; every other chunk holds its exact sum.
type OverflowError struct {
	Job uint16
	// Chunks are chunk indexes within the call: for AllReduceInt32, values [64*i, 64*i+64) of the
	// tensor; for AllReduceMany, chunks of the buckets taken in order.
	Chunks []int
	// Tensors are the indexes of the tensors holding saturated values ([0] for AllReduceInt32).
	// Only values at an int32 bound in those chunks are saturated; the others are exact.
	Tensors []int
}

func (e *OverflowError) Error() string {
	return fmt.Sprintf("worker: job %d: the int32 sum of %d chunk(s) does not fit in int32 (first: chunk %d); those values are saturated",
		e.Job, len(e.Chunks), e.Chunks[0])
}

// Unwrap makes errors.Is(err, ErrOverflow) work.
func (e *OverflowError) Unwrap() error { return ErrOverflow }

// ErrClosedWorker is returned by AllReduce after a previous call failed with ErrNoProgress.
var ErrClosedWorker = errors.New("worker: a previous all-reduce failed; the job's sequence state is lost")
