// Command ina-cluster runs the scheduler on an emulated cluster (network namespaces, the
// reference switch or BMv2, the controller): demo replays a short trace under NetPack and a
// baseline and prints the JCTs beside the simulator's; validate compares measured job
// throughput and JCT with the simulator's and the estimator's predictions; chaos injects faults
// while jobs run and checks each job's end against the promise. All need root.
// The experiments live in package experiment.
package main

import (
	"github.com/inapack/inapack/experiment"
	"github.com/inapack/inapack/internal/cli"
)

const usage = `ina-cluster: the scheduler on an emulated cluster (needs root)

  ina-cluster demo     [--topology T] [--trace F] [--policies netpack,gpu-balance] [--switch auto]
                       replay a trace through the scheduler under each policy; JCTs beside the simulator's
  ina-cluster validate [--mixes 8] [--doc docs/validation.md] [--from results.json]
                       job mixes on fixed placements: measured throughput and JCT against predictions
  ina-cluster chaos    [--faults 110] [--seed 1] [--kinds K,...] [--switch auto]
                       jobs through the scheduler while faults hit every component; each job's end
                       checked against docs/faults.md, nothing leaked
`

func main() {
	cli.Main("ina-cluster", usage, map[string]func([]string) error{
		"demo":     experiment.Demo,
		"validate": experiment.Validate,
		"chaos":    experiment.Chaos,
	})
}
