// Command ina-cluster runs the scheduler on an emulated cluster (network namespaces, the
// reference switch or BMv2, the controller): demo replays a short trace under NetPack and a
// baseline and prints the JCTs beside the simulator's; validate compares measured job
// throughput and JCT with the simulator's and the estimator's predictions. Both need root.
package main

import (
	"fmt"
	"os"
)

const usage = `ina-cluster: the scheduler on an emulated cluster (needs root)

  ina-cluster demo     [--topology T] [--trace F] [--policies netpack,gpu-balance] [--switch auto]
                       replay a trace through the scheduler under each policy; JCTs beside the simulator's
  ina-cluster validate [--mixes 8] [--doc docs/validation.md] [--from results.json]
                       job mixes on fixed placements: measured throughput and JCT against predictions
`

func main() {
	if len(os.Args) < 2 {
		fmt.Fprint(os.Stderr, usage)
		os.Exit(2)
	}
	var err error
	switch os.Args[1] {
	case "demo":
		err = cmdDemo(os.Args[2:])
	case "validate":
		err = cmdValidate(os.Args[2:])
	case "help", "-h", "--help":
		fmt.Print(usage)
		return
	default:
		fmt.Fprintf(os.Stderr, "ina-cluster: unknown command %q\n\n%s", os.Args[1], usage)
		os.Exit(2)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "ina-cluster:", err)
		os.Exit(1)
	}
}
