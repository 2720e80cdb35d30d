// Command inactl runs the INA controller and talks to it: run, apply, validate, status, job.
package main

import "github.com/inapack/inapack/internal/cli"

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
	cli.Main("inactl", usage, map[string]func([]string) error{
		"run":      cmdRun,
		"apply":    cmdApply,
		"validate": cmdValidate,
		"derive":   cmdDerive,
		"status":   cmdStatus,
		"job":      cmdJob,
	})
}
