package experiment

import (
	"encoding/json"
	"os"

	"github.com/inapack/inapack/scheduler"
	"github.com/inapack/inapack/sim/eval"
)

// The policies' comparison on packets is written as eval.Packets (ina-cluster demo --summary):
// every policy's mean JCT measured on the emulated cluster in each round, beside the simulator's
// for the same trace and calibration; the evaluation report's section 11.1 reads it.

func measuredMean(r *traceRun, trace []scheduler.TraceJob) float64 {
	s := 0.0
	for _, tj := range trace {
		s += r.jobs[tj.Name].JCTSec
	}
	return s / float64(len(trace))
}

func meanOf(byName map[string]float64, trace []scheduler.TraceJob) float64 {
	s := 0.0
	for _, tj := range trace {
		s += byName[tj.Name]
	}
	return s / float64(len(trace))
}

func writePackets(path string, p *eval.Packets) error {
	b, err := json.MarshalIndent(p, "", " ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}
