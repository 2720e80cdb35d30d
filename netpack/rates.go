package netpack

// Mode selects how the estimator treats links and switch INA capacity.
type Mode int

const (
	// Joint water-fills links and INA capacity as one coupled budget (NetPack).
	Joint Mode = iota
	// Separate estimates a bandwidth share (assuming INA never runs out) and an INA share
	// (ignoring links) independently and takes the smaller, as the paper's comparison does.
	Separate
)

func (m Mode) String() string {
	if m == Separate {
		return "separate"
	}
	return "joint"
}

// JobRate is the steady state of one running job.
type JobRate struct {
	FlowBps    float64 // gradient bytes/s each worker pushes (and pulls): the max-min fair quantity
	IterPerSec float64 // iterations per second = Model.IterPerSec(FlowBps), at most 1 / ComputeSec
	INABps     float64 // gradient bytes/s aggregated in switches, summed over the job's INA racks
	Bottleneck string  // what froze it: "compute", "nic:<machine>", "uplink:<rack>", "core", "ina:<rack>", "local"
}
