package ps

import (
	"errors"
	"fmt"
	"net"

	"github.com/inapack/inapack/p4src/wire"
)

// JobConfig describes one job the PS serves.
type JobConfig struct {
	Job     uint16
	Workers int // members; the full bitmap is bits 0..Workers-1
	// Window is the job's worker window in chunks (Config.Window of its workers). The PS keeps the
	// results of the last Horizon completed chunks, default 2*Window (at least 64): no worker can
	// still need an older one (see README.md).
	Window  int
	Horizon int
	// NoIntegrity turns off the integrity check (docs/protocol.md, "Integrity"): every packet
	// is merged as it comes. The job's workers must agree (worker.Config.NoIntegrity).
	NoIntegrity bool
}

// Config is the PS's addressing and its jobs.
type Config struct {
	MAC net.HardwareAddr // source of results
	IP  net.IP
	// ResultMAC and ResultIP are the destination of results (default broadcast). The switch
	// replicates results to the job's group by table; these only matter to hosts' filters.
	ResultMAC net.HardwareAddr
	ResultIP  net.IP
	Jobs      []JobConfig
}

// ErrConfig wraps every configuration error.
var ErrConfig = errors.New("ps: bad config")

func (j *JobConfig) check() error {
	switch {
	case j.Job == 0 || j.Job >= wire.MaxJobs:
		return fmt.Errorf("%w: job %d outside 1..%d", ErrConfig, j.Job, wire.MaxJobs-1)
	case j.Workers < 1 || j.Workers > wire.MaxWorkers:
		return fmt.Errorf("%w: job %d: %d workers outside 1..%d", ErrConfig, j.Job, j.Workers, wire.MaxWorkers)
	case j.Window < 0 || j.Window > wire.NumSlots:
		return fmt.Errorf("%w: job %d: window %d outside 1..%d", ErrConfig, j.Job, j.Window, wire.NumSlots)
	}
	if j.Window == 0 {
		j.Window = wire.NumSlots
	}
	if j.Horizon == 0 {
		j.Horizon = max(2*j.Window, 64)
	}
	if j.Horizon < 2*j.Window {
		return fmt.Errorf("%w: job %d: horizon %d below 2*window %d", ErrConfig, j.Job, j.Horizon, 2*j.Window)
	}
	return nil
}

func (j *JobConfig) mask() uint32 {
	if j.Workers == 32 {
		return ^uint32(0)
	}
	return 1<<uint(j.Workers) - 1
}
