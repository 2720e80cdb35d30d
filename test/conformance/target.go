package conformance

import "github.com/inapack/inapack/p4src/wire"

// Target is a switch the vectors run against: the Go model, BMv2 or the reference switch.
type Target interface {
	// Setup brings the switch to the state of a fresh pipeline push, then installs setup.
	Setup(setup *Setup) error
	// Send puts frame into port and returns every packet that leaves because of it.
	Send(port uint16, frame []byte) ([]Output, error)
	// Counters reads ina_events and the ina_job_events of the given jobs.
	Counters(jobs []uint16) (*Counters, error)
	// DeletePS removes the ina_ps entry of a job.
	DeletePS(job uint16) error
}

// Output is a packet that left the switch.
type Output struct {
	Port  uint16
	Frame []byte
}

// Count is one packets-and-bytes counter entry.
type Count struct {
	Packets, Bytes uint64
}

// Counters are counter entries indexed by wire.Event.
type Counters struct {
	Global [wire.NumEvents]Count
	Jobs   map[uint16][wire.NumEvents]Count
}
