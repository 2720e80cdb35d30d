// Command ina-cluster runs the scheduler on an emulated cluster (network namespaces, the
// reference switch or BMv2, the controller): demo replays a short trace under NetPack and a
// baseline and prints the JCTs beside the simulator's; validate compares measured job
// throughput and JCT with the simulator's and the estimator's predictions. Both need root.
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
`

func main() {
	cli.Main("ina-cluster", usage, map[string]func([]string) error{
		"demo":     experiment.Demo,
		"validate": experiment.Validate,
	})
}
