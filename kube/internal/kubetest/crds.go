package kubetest

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// CRD is a custom resource definition as its project publishes it: a file of a Go module (at a
// version), read from the module cache (go mod download puts it there; no code of the module is
// linked into this one).
type CRD struct{ Module, Version, Path string }

// The CRDs of what users submit (deploy/'s samples, kube/e2e's gangs): scheduler-plugins'
// PodGroup, JobSet, Kubeflow Trainer's TrainJob and its runtimes, the Training Operator's
// PyTorchJob. The versions are those Kueue v0.17.0 (internal/kueuetest) is built with.
var (
	CoschedulingCRD = CRD{"sigs.k8s.io/scheduler-plugins", "v0.34.1-devel", "config/crd/bases/scheduling.x-k8s.io_podgroups.yaml"}
	JobSetCRD       = CRD{"sigs.k8s.io/jobset", "v0.11.1", "config/components/crd/bases/jobset.x-k8s.io_jobsets.yaml"}
	TrainerCRDs     = []CRD{
		{"github.com/kubeflow/trainer/v2", "v2.2.0", "manifests/base/crds/trainer.kubeflow.org_trainjobs.yaml"},
		{"github.com/kubeflow/trainer/v2", "v2.2.0", "manifests/base/crds/trainer.kubeflow.org_trainingruntimes.yaml"},
		{"github.com/kubeflow/trainer/v2", "v2.2.0", "manifests/base/crds/trainer.kubeflow.org_clustertrainingruntimes.yaml"},
	}
	PyTorchJobCRD = CRD{"github.com/kubeflow/training-operator", "v1.9.3", "manifests/base/crds/kubeflow.org_pytorchjobs.yaml"}
)

// ModuleDir is module@version's directory in the module cache, downloaded if need be.
func ModuleDir(module, version string) (string, error) {
	cmd := exec.Command("go", "mod", "download", "-json", module+"@"+version)
	cmd.Dir = os.TempDir() // outside this module: no go.mod decides
	out, err := cmd.Output()
	var m struct{ Dir, Error string }
	if jerr := json.Unmarshal(out, &m); jerr != nil || m.Dir == "" {
		return "", fmt.Errorf("go mod download %s@%s: %v %s", module, version, err, m.Error)
	}
	return m.Dir, nil
}

// InstallCRDs installs crds on api and waits until they are served.
func InstallCRDs(t testing.TB, api *API, crds ...CRD) {
	t.Helper()
	var paths []string
	for _, c := range crds {
		dir, err := ModuleDir(c.Module, c.Version)
		Fatal(t, err)
		paths = append(paths, filepath.Join(dir, c.Path))
	}
	if _, err := envtest.InstallCRDs(api.Config, envtest.CRDInstallOptions{Paths: paths, ErrorIfPathMissing: true}); err != nil {
		t.Fatalf("installing CRDs %v: %v", paths, err)
	}
}
