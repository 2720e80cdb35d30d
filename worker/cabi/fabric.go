package main

// #include "status.h"
import "C"

import (
	"context"
	"encoding/binary"
	"fmt"
	"net"
	"sync"

	"github.com/inapack/inapack/p4src/wire"
	"github.com/inapack/inapack/ps"
	"github.com/inapack/inapack/transport"
)

// A local fabric is an in-process PS that the workers of this process reach through memory: data
// frames go straight to the PS (as through a switch with INA disabled), results to every worker.
// It lets the bridge be tested and benchmarked without root, a switch or a network.
type fabric struct {
	job, workers, window int
	integrity            bool
	srv                  *ps.Server
	psEnd                *transport.Mem
	cancel               context.CancelFunc
	done                 chan struct{}

	mu   sync.Mutex
	ends [][]*transport.Mem // by rank, an endpoint per thread; nil until attached
}

var (
	fabricMAC = net.HardwareAddr{2, 0, 0, 0, 0, 0x64}
	fabricIP  = net.IPv4(10, 0, 0, 100)

	fabricsMu sync.Mutex
	fabrics   = map[int64]*fabric{}
	lastFab   int64
)

// inapack_local_fabric starts an in-process PS serving one job of `workers` workers with the given
// window (0: the default), checking the integrity lane unless integrity is 0, and writes its id,
// for the "fabric" config field, to *id.
//
//export inapack_local_fabric
func inapack_local_fabric(job, workers, window, integrity C.int, id *C.int64_t, errBuf *C.char, errLen C.int) C.int {
	if window == 0 {
		window = defaultWindow
	}
	if job < 1 || job > 0xffff {
		return status(fmt.Errorf("%w: job %d", errConfig, job), errBuf, errLen)
	}
	srv, err := ps.New(ps.Config{MAC: fabricMAC, IP: fabricIP,
		Jobs: []ps.JobConfig{{Job: uint16(job), Workers: int(workers), Window: int(window), NoIntegrity: integrity == 0}}})
	if err != nil {
		return status(err, errBuf, errLen)
	}
	f := &fabric{job: int(job), workers: int(workers), window: int(window), integrity: integrity != 0, srv: srv,
		ends: make([][]*transport.Mem, workers), done: make(chan struct{})}
	f.psEnd = transport.NewMem(func(b []byte) error {
		// A result goes to the thread that owns its chunk, seq mod the rank's threads, as
		// transport.LaneFilter hands results out on an interface.
		var seq uint32
		if len(b) >= wire.FrameLen {
			seq = binary.BigEndian.Uint32(b[42+8:])
		}
		f.mu.Lock()
		defer f.mu.Unlock()
		for _, es := range f.ends {
			if len(es) > 0 {
				es[seq%uint32(len(es))].Deliver(b)
			}
		}
		return nil
	}, 4096)
	var ctx context.Context
	ctx, f.cancel = context.WithCancel(context.Background())
	go func() { defer close(f.done); _ = srv.Serve(ctx, f.psEnd) }()
	fabricsMu.Lock()
	defer fabricsMu.Unlock()
	lastFab++
	fabrics[lastFab] = f
	*id = C.int64_t(lastFab)
	return C.INAPACK_OK
}

// inapack_fabric_close stops a local fabric (its workers then fail with the no-progress error).
//
//export inapack_fabric_close
func inapack_fabric_close(id C.int64_t, errBuf *C.char, errLen C.int) C.int {
	fabricsMu.Lock()
	f := fabrics[int64(id)]
	delete(fabrics, int64(id))
	fabricsMu.Unlock()
	if f == nil {
		return status(fmt.Errorf("%w: no local fabric %d", errConfig, id), errBuf, errLen)
	}
	f.cancel()
	<-f.done
	return C.INAPACK_OK
}

func fabricByID(id int64) (*fabric, error) {
	fabricsMu.Lock()
	defer fabricsMu.Unlock()
	if f := fabrics[id]; f != nil {
		return f, nil
	}
	return nil, fmt.Errorf("%w: no local fabric %d", errConfig, id)
}

// attach connects rank's endpoints, one per thread; the worker's job must be the fabric's.
func (f *fabric) attach(rank, job, workers, window int, integrity bool, threads int) ([]*transport.Mem, error) {
	switch {
	case job != f.job || workers != f.workers || window != f.window || integrity != f.integrity:
		return nil, fmt.Errorf("%w: worker of job %d (%d workers, window %d, integrity %v) on a local fabric for job %d (%d workers, window %d, integrity %v)",
			errConfig, job, workers, window, integrity, f.job, f.workers, f.window, f.integrity)
	case rank < 0 || rank >= f.workers:
		return nil, fmt.Errorf("%w: rank %d outside 0..%d", errConfig, rank, f.workers-1)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.ends[rank] != nil {
		return nil, fmt.Errorf("%w: rank %d already attached to local fabric", errConfig, rank)
	}
	for range threads {
		f.ends[rank] = append(f.ends[rank], transport.NewMem(func(b []byte) error { f.psEnd.Deliver(b); return nil }, 4096))
	}
	return f.ends[rank], nil
}
