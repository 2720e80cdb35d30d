// Command ina-kube-scheduler is kube-scheduler with the NetPack plugin built in: the upstream
// scheduler app, its flags and its KubeSchedulerConfiguration, plus a plugin named NetPack that
// profiles enable (deploy/scheduler has one profile, inapack-scheduler, that does).
package main

import (
	"os"

	"k8s.io/component-base/cli"
	_ "k8s.io/component-base/logs/json/register" // the JSON log format, as upstream's command has it
	_ "k8s.io/component-base/metrics/prometheus/clientgo"
	_ "k8s.io/component-base/metrics/prometheus/version"
	"k8s.io/kubernetes/cmd/kube-scheduler/app"

	"github.com/inapack/inapack/kube/plugin"
)

func main() {
	cmd := app.NewSchedulerCommand(app.WithPlugin(plugin.Name, plugin.New))
	os.Exit(cli.Run(cmd))
}
