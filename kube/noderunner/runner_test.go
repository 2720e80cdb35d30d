package noderunner_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"

	"github.com/inapack/inapack/kube/gang"
	"github.com/inapack/inapack/kube/internal/kubetest"
	"github.com/inapack/inapack/kube/noderunner"
	"github.com/inapack/inapack/scheduler"
)

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

func pod(name, node string, cmd ...string) *v1.Pod {
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name, Annotations: map[string]string{}, Labels: map[string]string{}},
		Spec: v1.PodSpec{NodeName: node, RestartPolicy: v1.RestartPolicyNever,
			Containers: []v1.Container{{Name: "main", Image: "inapack/agents", Command: cmd}}},
	}
}

func create(ctx context.Context, t *testing.T, cs kubernetes.Interface, p *v1.Pod) {
	t.Helper()
	_, err := cs.CoreV1().Pods(p.Namespace).Create(ctx, p, metav1.CreateOptions{})
	kubetest.Fatal(t, err)
}

// waitPod polls a pod until cond holds (at most 30 s: a bound for a broken run, not a speed).
func waitPod(ctx context.Context, t *testing.T, cs kubernetes.Interface, name string, cond func(*v1.Pod) bool) *v1.Pod {
	t.Helper()
	var cur *v1.Pod
	err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		p, err := cs.CoreV1().Pods("default").Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		cur = p
		return cond(p), nil
	})
	if err != nil {
		t.Fatalf("pod %s: %v; last status %+v", name, err, cur.Status)
	}
	return cur
}

func terminated(p *v1.Pod) *v1.ContainerStateTerminated {
	if len(p.Status.ContainerStatuses) == 1 {
		return p.Status.ContainerStatuses[0].State.Terminated
	}
	return nil
}

// TestPhases: on a real API server, pods bound to the runner's node run with the kubelet's
// environment and command line, the binary taken from the bin directory, and report Running then
// Succeeded, or Failed with the exit code and the last line of output; a pod that cannot run
// fails saying why; a deleted pod's process is killed and the deletion completed; a pod on
// another node is left alone. (The node here is this machine's own network namespace.)
func TestPhases(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	api := kubetest.StartAPI(t)
	cs := api.Client
	bin, logs := t.TempDir(), t.TempDir()
	// "greet" is in the image (the bin directory), wherever the pod's command says it lives.
	script := "#!/bin/sh\necho \"hello $1 from $POD, job $INAPACK_JOB\"\n"
	kubetest.Fatal(t, os.WriteFile(filepath.Join(bin, "greet"), []byte(script), 0o755))
	r, err := noderunner.Start(ctx, cs, noderunner.Config{Nodes: map[string]scheduler.HostAccess{"n1": {}}, Bin: bin, LogDir: logs,
		MaxGrace: 2 * time.Second, Logger: quiet})
	kubetest.Fatal(t, err)
	defer r.Stop()

	ok := pod("ok", "n1", "/opt/app/bin/greet", "$(WHO)")
	ok.Annotations[gang.SwitchJobAnnotation] = "12"
	ok.Spec.Containers[0].Env = []v1.EnvVar{{Name: "WHO", Value: "world"},
		{Name: "POD", ValueFrom: &v1.EnvVarSource{FieldRef: &v1.ObjectFieldSelector{FieldPath: "metadata.name"}}},
		{Name: "INAPACK_JOB", ValueFrom: &v1.EnvVarSource{FieldRef: &v1.ObjectFieldSelector{FieldPath: "metadata.annotations['" + gang.SwitchJobAnnotation + "']"}}}}
	create(ctx, t, cs, ok)
	create(ctx, t, cs, pod("fail", "n1", "sh", "-c", "echo working; echo boom: no such tensor; exit 3"))
	pidFile := filepath.Join(t.TempDir(), "pid")
	// $$$$ is the shell's $$ once the kubelet's expansion has unescaped it.
	create(ctx, t, cs, pod("sleeper", "n1", "sh", "-c", "echo $$$$ > "+pidFile+"; exec sleep 60"))
	create(ctx, t, cs, pod("noimage", "n1"))
	create(ctx, t, cs, pod("elsewhere", "n2", "true"))

	p := waitPod(ctx, t, cs, "ok", func(p *v1.Pod) bool { return p.Status.Phase == v1.PodSucceeded })
	if tm := terminated(p); tm == nil || tm.ExitCode != 0 || tm.Reason != "Completed" {
		t.Errorf("ok: container state %+v, want terminated with exit code 0", p.Status.ContainerStatuses)
	}
	b, err := os.ReadFile(r.LogPath("default", "ok"))
	kubetest.Fatal(t, err)
	if !strings.Contains(string(b), "hello world from ok, job 12\n") {
		t.Errorf("ok's log %q: want the greeting with the pod's name and the job from its annotation", b)
	}

	p = waitPod(ctx, t, cs, "fail", func(p *v1.Pod) bool { return p.Status.Phase == v1.PodFailed })
	if tm := terminated(p); tm == nil || tm.ExitCode != 3 || tm.Message != "boom: no such tensor" {
		t.Errorf("fail: container state %+v, want exit code 3 and the last line as message", p.Status.ContainerStatuses)
	}

	p = waitPod(ctx, t, cs, "noimage", func(p *v1.Pod) bool { return p.Status.Phase == v1.PodFailed })
	if !strings.Contains(p.Status.Message, "no command") {
		t.Errorf("noimage: message %q, want it to say the container has no command", p.Status.Message)
	}

	p = waitPod(ctx, t, cs, "sleeper", func(p *v1.Pod) bool {
		return p.Status.Phase == v1.PodRunning && len(p.Status.ContainerStatuses) == 1 && p.Status.ContainerStatuses[0].State.Running != nil
	})
	var pid int
	err = wait.PollUntilContextTimeout(ctx, 20*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		b, _ := os.ReadFile(pidFile)
		pid, _ = strconv.Atoi(strings.TrimSpace(string(b)))
		return pid > 0, nil
	})
	kubetest.Fatal(t, err)
	kubetest.Fatal(t, cs.CoreV1().Pods("default").Delete(ctx, "sleeper", metav1.DeleteOptions{}))
	err = wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		_, err := cs.CoreV1().Pods("default").Get(ctx, "sleeper", metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	})
	if err != nil {
		t.Errorf("the deleted pod is still there: the runner did not complete its deletion")
	}
	if syscall.Kill(pid, 0) == nil {
		t.Errorf("the deleted pod's process %d still runs", pid)
	}

	p, err = cs.CoreV1().Pods("default").Get(ctx, "elsewhere", metav1.GetOptions{})
	kubetest.Fatal(t, err)
	if p.Status.Phase != v1.PodPending {
		t.Errorf("a pod on another node is %s; the runner must leave it alone", p.Status.Phase)
	}
}

// TestLocalLink: a PS and a worker on the same node marked local get the private veth link in
// the node's network namespace (made once, for whichever starts first), and the link goes when
// the PS ends.
func TestLocalLink(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("SKIP: needs root (a network namespace and veth links)")
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ns := fmt.Sprintf("nrt%d", os.Getpid()%100000)
	if out, err := exec.Command("ip", "netns", "add", ns).CombinedOutput(); err != nil {
		t.Fatalf("ip netns add %s: %v: %s", ns, err, out)
	}
	defer exec.Command("ip", "netns", "del", ns).Run()
	api := kubetest.StartAPI(t)
	cs := api.Client
	r, err := noderunner.Start(ctx, cs, noderunner.Config{Nodes: map[string]scheduler.HostAccess{"h1": {Netns: ns}},
		LogDir: t.TempDir(), MaxGrace: 2 * time.Second, Logger: quiet})
	kubetest.Fatal(t, err)
	defer r.Stop()
	lp, lw := scheduler.LocalLink(7)
	local := func(p *v1.Pod, role string) *v1.Pod {
		p.Labels[gang.RoleLabel] = role
		p.Annotations[gang.LocalAnnotation] = "true"
		p.Annotations[gang.SwitchJobAnnotation] = "7"
		return p
	}
	create(ctx, t, cs, local(pod("ps", "h1", "sleep", "60"), gang.RolePS))
	create(ctx, t, cs, local(pod("worker", "h1", "ip", "link", "show", lw), gang.RoleWorker))
	waitPod(ctx, t, cs, "ps", func(p *v1.Pod) bool { return p.Status.Phase == v1.PodRunning })
	if p := waitPod(ctx, t, cs, "worker", func(p *v1.Pod) bool { return p.Status.Phase != v1.PodPending && p.Status.Phase != v1.PodRunning }); p.Status.Phase != v1.PodSucceeded {
		b, _ := os.ReadFile(r.LogPath("default", "worker"))
		t.Fatalf("the worker did not see its end of the link in the node's namespace: %s, log %q", p.Status.Phase, b)
	}
	if err := exec.Command("ip", "-n", ns, "link", "show", lp).Run(); err != nil {
		t.Fatalf("the PS's end %s is not in namespace %s: %v", lp, ns, err)
	}
	kubetest.Fatal(t, cs.CoreV1().Pods("default").Delete(ctx, "ps", metav1.DeleteOptions{}))
	err = wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 20*time.Second, true, func(context.Context) (bool, error) {
		return exec.Command("ip", "-n", ns, "link", "show", lp).Run() != nil, nil
	})
	if err != nil {
		t.Errorf("link %s still in namespace %s after the PS ended", lp, ns)
	}
}
