// Command inactl runs the INA controller and talks to it: run, apply, validate, status, job.
package main

import (
	"errors"
	"fmt"
	"os"
)

const usage = `inactl: INA switch controller

  inactl run      --config F    push the pipeline, install and keep reconciling the config,
                                serve the job API and Prometheus metrics
  inactl apply    --config F    push and reconcile once, print what changed, exit
  inactl validate --config F    check the config (and the P4Info and device configs it names)
  inactl derive   --topology T --endpoints E [-o F]
                                write the config for a topology.json (bmv2/topologies)
  inactl derive   --topology T --check
                                only check a topology.json (what bmv2/run.py does first)
  inactl status                 per switch and job: counters and slots held (from the API)
  inactl job add --file J       add a job (YAML or JSON, as an entry of the config's jobs list)
  inactl job remove ID          remove a job: its entries and the slots it holds
  inactl job priority ID CAP    change a job's priority cap
  inactl job ina ID on|off      enable or disable INA for a job

Client commands take --api ADDR (default 127.0.0.1:9560), --token-file F (or $INACTL_TOKEN)
and --ca F for an API served over TLS.
`

func main() {
	if len(os.Args) < 2 {
		fmt.Fprint(os.Stderr, usage)
		os.Exit(2)
	}
	var err error
	args := os.Args[2:]
	switch os.Args[1] {
	case "run":
		err = cmdRun(args)
	case "apply":
		err = cmdApply(args)
	case "validate":
		err = cmdValidate(args)
	case "derive":
		err = cmdDerive(args)
	case "status":
		err = cmdStatus(args)
	case "job":
		err = cmdJob(args)
	case "help", "-h", "--help":
		fmt.Print(usage)
		return
	default:
		fmt.Fprintf(os.Stderr, "inactl: unknown command %q\n\n%s", os.Args[1], usage)
		os.Exit(2)
	}
	if errors.Is(err, errUsage) {
		os.Exit(2)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "inactl:", err)
		os.Exit(1)
	}
}

// errUsage: the usage text is printed already; exit 2 as the flag package does.
var errUsage = errors.New("usage")
