package extender

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	extenderv1 "k8s.io/kube-scheduler/extender/v1"
)

// The testdata files are Kubernetes objects in the API server's JSON and ExtenderArgs as
// kube-scheduler marshals them (field names without JSON tags: "Pod", "Nodes", "NodeNames"):
// racks a and b of two 4-GPU nodes each (node-a2 with a 25 Gbit/s NIC annotation) and a node
// without GPUs; job "resnet" runs on node-a1; a finished pod of job "old" on node-b1 no longer
// counts; the pod to place is bert-0, first of an 8-GPU job ("inapack.io/job-gpus": "8").

// fileSource serves the testdata node and pod lists; pods can be added to model binding.
type fileSource struct {
	nodes []v1.Node
	pods  []v1.Pod
}

func (f *fileSource) Nodes(context.Context) ([]v1.Node, error) { return f.nodes, nil }
func (f *fileSource) Pods(context.Context, string) ([]v1.Pod, error) {
	return f.pods, nil
}

func readJSON(t testing.TB, name string, v any) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	if v != nil {
		if err := json.Unmarshal(b, v); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
	}
	return b
}

func newTestExtender(t testing.TB) (*Extender, *fileSource) {
	t.Helper()
	var nodes v1.NodeList
	var pods v1.PodList
	readJSON(t, "nodes.json", &nodes)
	readJSON(t, "pods.json", &pods)
	src := &fileSource{nodes: nodes.Items, pods: pods.Items}
	return New(Config{}, src, slog.New(slog.NewTextHandler(io.Discard, nil))), src
}

func post(t *testing.T, h http.Handler, path string, body []byte, out any) int {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, path, bytes.NewReader(body)))
	if out != nil && rec.Code == http.StatusOK {
		if err := json.Unmarshal(rec.Body.Bytes(), out); err != nil {
			t.Fatalf("%s answer %q: %v", path, rec.Body.String(), err)
		}
	}
	return rec.Code
}

func scores(l extenderv1.HostPriorityList) map[string]int64 {
	m := map[string]int64{}
	for _, h := range l {
		m[h.Host] = h.Score
	}
	return m
}

func TestFilterKeepsNetPackPlacement(t *testing.T) {
	e, _ := newTestExtender(t)
	var res extenderv1.ExtenderFilterResult
	if code := post(t, e.Handler(), "/filter", readJSON(t, "filter-bert-0.json", nil), &res); code != http.StatusOK {
		t.Fatalf("filter: HTTP %d", code)
	}
	if res.Error != "" || res.Nodes == nil {
		t.Fatalf("filter: %+v", res)
	}
	var kept []string
	for _, n := range res.Nodes.Items {
		kept = append(kept, n.Name)
	}
	// 8 GPUs fit one rack only where both nodes are free: rack b (the pod on node-b1 finished).
	if strings.Join(kept, ",") != "node-b1,node-b2" {
		t.Errorf("kept %v, want node-b1,node-b2", kept)
	}
	if msg := res.FailedNodes["node-a2"]; !strings.Contains(msg, "NetPack places job ml/bert on node-b1:4,node-b2:4") {
		t.Errorf("node-a2 failed with %q", msg)
	}
	if res.Nodes.Items[0].Status.Allocatable == nil {
		t.Error("nodes lost their status on the way back")
	}
}

func TestPrioritizeByPlan(t *testing.T) {
	e, src := newTestExtender(t)
	var list extenderv1.HostPriorityList
	body := readJSON(t, "prioritize-bert-0-names.json", nil)
	if code := post(t, e.Handler(), "/prioritize", body, &list); code != http.StatusOK {
		t.Fatalf("prioritize: HTTP %d", code)
	}
	got := scores(list)
	if len(got) != 3 || got["node-b1"] != extenderv1.MaxExtenderPriority || got["node-b2"] != extenderv1.MaxExtenderPriority || got["node-a2"] != 0 {
		t.Errorf("scores %v, want node-b1 and node-b2 10, node-a2 0", got)
	}
	// kube-scheduler bound bert-0 to node-b1: the job's second pod goes where the rest of the job
	// is planned, next to its first (the same rack, not node-a2 in the other).
	var args extenderv1.ExtenderArgs
	json.Unmarshal(body, &args)
	bound := *args.Pod
	bound.Spec.NodeName, bound.Status.Phase = "node-b1", v1.PodRunning
	src.pods = append(src.pods, bound)
	second := *args.Pod
	second.Name, second.UID = "bert-1", "uid-bert-1"
	names := []string{"node-a2", "node-b2"}
	list, err := e.Prioritize(context.Background(), &extenderv1.ExtenderArgs{Pod: &second, NodeNames: &names})
	if err != nil {
		t.Fatal(err)
	}
	if got := scores(list); got["node-b2"] != extenderv1.MaxExtenderPriority || got["node-a2"] != 0 {
		t.Errorf("second pod: scores %v, want node-b2 10, node-a2 0", got)
	}
}

func TestPodOfNoJob(t *testing.T) {
	e, _ := newTestExtender(t)
	var list extenderv1.HostPriorityList
	if code := post(t, e.Handler(), "/prioritize", readJSON(t, "prioritize-no-job.json", nil), &list); code != http.StatusOK {
		t.Fatalf("HTTP %d", code)
	}
	if got := scores(list); len(got) != 2 || got["node-a2"] != 0 || got["node-b1"] != 0 {
		t.Errorf("scores %v, want every candidate 0", got)
	}
	var args extenderv1.ExtenderArgs
	readJSON(t, "prioritize-no-job.json", &args)
	res := e.Filter(context.Background(), &args)
	if res.Error != "" || len(*res.NodeNames) != 2 || len(res.FailedNodes) != 0 {
		t.Errorf("filter of a pod of no job: %+v, want every candidate kept", res)
	}
}

func TestBadInput(t *testing.T) {
	e, src := newTestExtender(t)
	if code := post(t, e.Handler(), "/filter", []byte(`{"Pod": [}`), nil); code != http.StatusBadRequest {
		t.Errorf("malformed body: HTTP %d, want 400", code)
	}
	var args extenderv1.ExtenderArgs
	readJSON(t, "filter-bert-0.json", &args)
	args.Pod.Annotations[ModelAnnotation] = "no-such-model"
	if res := e.Filter(context.Background(), &args); !strings.Contains(res.Error, "unknown model") {
		t.Errorf("unknown model: %+v", res.Error)
	}
	readJSON(t, "filter-bert-0.json", &args)
	args.Pod.Annotations[JobGPUsAnnotation] = "eight"
	if _, err := e.Prioritize(context.Background(), &args); err == nil || !strings.Contains(err.Error(), JobGPUsAnnotation) {
		t.Errorf("bad job-gpus: %v", err)
	}
	src.nodes[1].Annotations[NICAnnotation] = "-3"
	readJSON(t, "filter-bert-0.json", &args)
	if res := e.Filter(context.Background(), &args); !strings.Contains(res.Error, NICAnnotation) {
		t.Errorf("bad NIC annotation: %q", res.Error)
	}
}

func TestAPIServerSource(t *testing.T) {
	nodes := readJSON(t, "nodes.json", nil)
	pods := readJSON(t, "pods.json", nil)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer tok" {
			http.Error(w, "Unauthorized", http.StatusUnauthorized)
			return
		}
		switch {
		case r.URL.Path == "/api/v1/nodes":
			w.Write(nodes)
		case r.URL.Path == "/api/v1/pods" && r.URL.Query().Get("labelSelector") == DefaultJobLabel:
			w.Write(pods)
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	tok := filepath.Join(t.TempDir(), "token")
	os.WriteFile(tok, []byte("tok\n"), 0o600)
	s, err := NewAPIServer(srv.URL, tok, "")
	if err != nil {
		t.Fatal(err)
	}
	ns, err := s.Nodes(context.Background())
	if err != nil || len(ns) != 5 || ns[1].Name != "node-a2" {
		t.Fatalf("nodes: %d, %v", len(ns), err)
	}
	ps, err := s.Pods(context.Background(), DefaultJobLabel)
	if err != nil || len(ps) != 2 || ps[0].Spec.NodeName != "node-a1" {
		t.Fatalf("pods: %d, %v", len(ps), err)
	}
	s.Token = "wrong"
	if _, err := s.Nodes(context.Background()); err == nil || !strings.Contains(err.Error(), "401") {
		t.Errorf("wrong token: %v", err)
	}
}
