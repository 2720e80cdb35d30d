package scheduler

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestAPI(t *testing.T) {
	topo := loadTopo(t, "two-racks")
	c, err := NewCluster(topo, ClusterParams{})
	if err != nil {
		t.Fatal(err)
	}
	s := newTestService(t, t.TempDir(), controllerFor(t, topo), c, unreachableHosts(c))
	defer s.Close()
	srv := httptest.NewServer(Handler(s, "s3cret", quiet))
	defer srv.Close()
	ctx := context.Background()

	if _, err := NewClient(srv.URL, "wrong").Jobs(ctx); err == nil || !strings.Contains(err.Error(), "401") {
		t.Errorf("wrong token: %v, want 401", err)
	}
	cl := NewClient(srv.URL, "s3cret")
	bad := []struct {
		sub  Submission
		want string
	}{
		{Submission{GPUs: 11, Model: ModelSpec{mustProfile("vgg16")}, Iterations: 1}, "the cluster has 10"},
		{Submission{GPUs: 1, Model: ModelSpec{mustProfile("vgg16")}, Iterations: 0}, "iterations"},
		{Submission{GPUs: 1, Model: ModelSpec{mustProfile("vgg16")}, Iterations: 1, BytesPerIteration: 6}, "multiple of 4"},
		{Submission{GPUs: 1, Model: ModelSpec{mustProfile("vgg16")}, Iterations: 1, PriorityClass: 8}, "priority_class"},
		{Submission{GPUs: 2, Model: ModelSpec{mustProfile("vgg16")}, Iterations: 1,
			Pin: &Pin{PS: "h9", Workers: []PinnedWorker{{Host: "h1", GPUs: 2}}}}, `PS host "h9"`},
		{Submission{GPUs: 3, Model: ModelSpec{mustProfile("vgg16")}, Iterations: 1,
			Pin: &Pin{PS: "h3", Workers: []PinnedWorker{{Host: "h1", GPUs: 2}}}}, "job needs 3"},
		{Submission{GPUs: 3, Model: ModelSpec{mustProfile("vgg16")}, Iterations: 1,
			Pin: &Pin{PS: "h3", Workers: []PinnedWorker{{Host: "h1", GPUs: 3}}}}, "which has 2"},
	}
	for _, b := range bad {
		if _, err := cl.Submit(ctx, b.sub); err == nil || !strings.Contains(err.Error(), "400") || !strings.Contains(err.Error(), b.want) {
			t.Errorf("%+v: %v, want 400 saying %q", b.sub, err, b.want)
		}
	}
	for _, body := range []string{`{"gpus": 1, "model": "no-such-model", "iterations": 1}`, `{"gpus": 1, "typo": 2}`, `[`} {
		resp, err := http.Post(srv.URL+"/v1/jobs", "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("no token: HTTP %d", resp.StatusCode)
		}
		req, _ := http.NewRequest(http.MethodPost, srv.URL+"/v1/jobs", strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer s3cret")
		resp, err = http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusBadRequest {
			t.Errorf("%s: HTTP %d, want 400", body, resp.StatusCode)
		}
	}
	if _, err := cl.Job(ctx, 42); err == nil || !strings.Contains(err.Error(), "404") {
		t.Errorf("unknown job: %v", err)
	}
	// A pinned job is placed where it was pinned, not where the policy would put it.
	pinned := sub(3)
	pinned.Pin = &Pin{PS: "ps1", Workers: []PinnedWorker{{Host: "h1", GPUs: 1}, {Host: "h4", GPUs: 2}}}
	j, err := cl.Submit(ctx, pinned)
	if err != nil {
		t.Fatal(err)
	}
	j = waitFinal(t, s, 1)[0]
	if p := j.Placement; p == nil || p.Policy != "pinned" || p.PS != "ps1" || len(p.Workers) != 2 || p.Workers[0].Host != "h1" ||
		p.Workers[1].Host != "h4" || p.SwitchJob == 0 || strings.Join(p.Switches, ",") != "tor1,tor2" {
		t.Errorf("pinned placement: %+v", j.Placement)
	}
	ci, err := cl.Cluster(ctx)
	if err != nil || ci.Policy != "netpack" || len(ci.Machines) != 5 || ci.Machines[4].Host != "ps1" || ci.Machines[4].FreeGPUs != 2 {
		t.Errorf("cluster: %+v, %v", ci, err)
	}
	// A job that ended cannot be cancelled.
	if err := cl.Cancel(ctx, j.ID); err == nil || !strings.Contains(err.Error(), "409") {
		t.Errorf("cancel an ended job: %v, want 409", err)
	}
}
