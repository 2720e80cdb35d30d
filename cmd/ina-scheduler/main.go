// Command ina-scheduler runs the cluster's job scheduler (serve) and talks to it (submit, jobs,
// cancel): the standalone mode for emulation and small clusters. On Kubernetes, NetPack is the
// kube module's scheduler plugin (ina-kube-scheduler) or extender (ina-kube-extender).
package main

import "github.com/inapack/inapack/internal/cli"

const usage = `ina-scheduler: NetPack job scheduler for INA clusters

  ina-scheduler serve --topology T --hosts H --controller ADDR [--policy netpack] [--state DIR]
                      place jobs, drive the switch controller and the agents, serve the job API
  ina-scheduler submit [--file J | --gpus N --model M --iterations I ...]
                      submit a job (JSON as POST /v1/jobs takes it)
  ina-scheduler jobs  every job: state, placement, measured throughput, JCT
  ina-scheduler cancel ID
                      leave the queue, or stop a running job and free what it holds

Client commands take --api ADDR (default 127.0.0.1:9570), --token-file F (or $INA_SCHEDULER_TOKEN)
and --ca F for an API served over TLS.
`

func main() {
	cli.Main("ina-scheduler", usage, map[string]func([]string) error{
		"serve":  cmdServe,
		"submit": cmdSubmit,
		"jobs":   cmdJobs,
		"cancel": cmdCancel,
	})
}
