package noderunner

import (
	"slices"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

type mapLookup map[string]string // "configmap/name/key" or "secret/name/key" -> value

func (m mapLookup) ConfigMapKey(_, name, key string) (string, bool, error) {
	v, ok := m["configmap/"+name+"/"+key]
	return v, ok, nil
}

func (m mapLookup) SecretKey(_, name, key string) (string, bool, error) {
	v, ok := m["secret/"+name+"/"+key]
	return v, ok, nil
}

func field(path string) *v1.EnvVarSource {
	return &v1.EnvVarSource{FieldRef: &v1.ObjectFieldSelector{FieldPath: path}}
}

// TestEnvAndArgvAsKubelet: a container's environment and command line come out as the kubelet
// builds them: $(VAR) expands to variables declared before (not after: those, and unknown ones,
// stay as written), $$ escapes, the downward API reads the pod's name, namespace, node, labels
// and annotations (a missing annotation is empty), ConfigMap and Secret keys resolve, an optional
// missing key leaves its variable out, and command then args are expanded from the result.
func TestEnvAndArgvAsKubelet(t *testing.T) {
	pod := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns1", Name: "job-worker-1", UID: "u-1",
			Labels:      map[string]string{"inapack.io/role": "worker"},
			Annotations: map[string]string{"inapack.io/switch-job": "7", "inapack.io/rank": "1"}},
		Spec: v1.PodSpec{NodeName: "h3"},
	}
	c := &v1.Container{Name: "worker",
		Command: []string{"/usr/bin/ina-worker", "-job", "$(INAPACK_JOB)"},
		Args:    []string{"-rank", "$(RANK)", "-id=$(POD).$(NS)", "$$(RANK)", "$(NOPE)", "-t", "$(TOKEN)"},
		Env: []v1.EnvVar{
			{Name: "INAPACK_JOB", ValueFrom: field("metadata.annotations['inapack.io/switch-job']")},
			{Name: "RANK", ValueFrom: field("metadata.annotations['inapack.io/rank']")},
			{Name: "POD", ValueFrom: field("metadata.name")},
			{Name: "NS", ValueFrom: field("metadata.namespace")},
			{Name: "NODE", ValueFrom: field("spec.nodeName")},
			{Name: "ROLE", ValueFrom: field("metadata.labels['inapack.io/role']")},
			{Name: "MISSING", ValueFrom: field("metadata.annotations['inapack.io/none']")},
			{Name: "GREETING", Value: "rank $(RANK) of job $(INAPACK_JOB) on $(NODE), $(LATER) later, $$(RANK) escaped"},
			{Name: "LATER", Value: "x"},
			{Name: "TOKEN", ValueFrom: &v1.EnvVarSource{SecretKeyRef: &v1.SecretKeySelector{
				LocalObjectReference: v1.LocalObjectReference{Name: "ctl"}, Key: "token"}}},
			{Name: "MODE", ValueFrom: &v1.EnvVarSource{ConfigMapKeyRef: &v1.ConfigMapKeySelector{
				LocalObjectReference: v1.LocalObjectReference{Name: "settings"}, Key: "mode"}}},
			{Name: "OPTIONAL", ValueFrom: &v1.EnvVarSource{ConfigMapKeyRef: &v1.ConfigMapKeySelector{
				LocalObjectReference: v1.LocalObjectReference{Name: "settings"}, Key: "absent", Optional: ptr.To(true)}}},
		},
	}
	lookup := mapLookup{"secret/ctl/token": "s3cret", "configmap/settings/mode": "fast"}
	env, err := Env(pod, c, lookup)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"INAPACK_JOB=7", "RANK=1", "POD=job-worker-1", "NS=ns1", "NODE=h3", "ROLE=worker", "MISSING=",
		"GREETING=rank 1 of job 7 on h3, $(LATER) later, $(RANK) escaped", "LATER=x", "TOKEN=s3cret", "MODE=fast"}
	var got []string
	for _, e := range env {
		got = append(got, e.Name+"="+e.Value)
	}
	if !slices.Equal(got, want) {
		t.Errorf("env:\n got %q\nwant %q", got, want)
	}
	argv, err := Argv(c, env)
	if err != nil {
		t.Fatal(err)
	}
	wantArgv := []string{"/usr/bin/ina-worker", "-job", "7", "-rank", "1", "-id=job-worker-1.ns1", "$(RANK)", "$(NOPE)", "-t", "s3cret"}
	if !slices.Equal(argv, wantArgv) {
		t.Errorf("argv:\n got %q\nwant %q", argv, wantArgv)
	}
	// The process environment: the image's base, with declared variables replacing its own.
	envv := environ([]string{"PATH=/bin", "RANK=9"}, env)
	if !slices.Contains(envv, "PATH=/bin") || !slices.Contains(envv, "RANK=1") || slices.Contains(envv, "RANK=9") {
		t.Errorf("process environment %q: want PATH kept and RANK=1 replacing RANK=9", envv)
	}

	for _, bad := range []struct {
		name string
		c    v1.Container
		want string
	}{
		{"required key missing", v1.Container{Name: "c", Command: []string{"x"}, Env: []v1.EnvVar{{Name: "V", ValueFrom: &v1.EnvVarSource{
			ConfigMapKeyRef: &v1.ConfigMapKeySelector{LocalObjectReference: v1.LocalObjectReference{Name: "settings"}, Key: "absent"}}}}},
			"couldn't find key absent"},
		{"envFrom", v1.Container{Name: "c", Command: []string{"x"}, EnvFrom: []v1.EnvFromSource{{}}}, "envFrom"},
		{"resource field", v1.Container{Name: "c", Command: []string{"x"}, Env: []v1.EnvVar{{Name: "V", ValueFrom: &v1.EnvVarSource{
			ResourceFieldRef: &v1.ResourceFieldSelector{Resource: "limits.cpu"}}}}}, "not supported"},
		{"pod IP", v1.Container{Name: "c", Command: []string{"x"}, Env: []v1.EnvVar{{Name: "V", ValueFrom: field("status.podIP")}}}, "no pod network"},
	} {
		if _, err := Env(pod, &bad.c, lookup); err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("%s: err %v, want one saying %q", bad.name, err, bad.want)
		}
	}
	if _, err := Argv(&v1.Container{Name: "c", Args: []string{"a"}}, nil); err == nil || !strings.Contains(err.Error(), "no command") {
		t.Errorf("a container without a command: err %v, want one saying it has no command", err)
	}
}
