package scheduler

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// FuzzJobAPI sends any method, path and body to the scheduler's job API, backed by a real
// controller and a service whose agents cannot start (no such namespaces): every request gets a
// 2xx or a 4xx with a JSON error saying why, never a 5xx or a panic. A job it admits is cancelled
// at once from two goroutines while it starts ("cancel races"); once every job has ended, the
// service must hold nothing (GPUs free, no switch entries) and still serve.
func FuzzJobAPI(f *testing.F) {
	topo := loadTopo(f, "two-racks")
	c, err := NewCluster(topo, ClusterParams{})
	if err != nil {
		f.Fatal(err)
	}
	ctl := controllerFor(f, topo)
	s := newTestService(f, f.TempDir(), ctl, c, unreachableHosts(c))
	f.Cleanup(s.Close)
	srv := httptest.NewServer(Handler(s, "", quiet))
	f.Cleanup(srv.Close)
	for _, seed := range []struct{ method, path, body string }{
		{"POST", "/v1/jobs", `{"gpus": 4, "model": "resnet50", "iterations": 10, "bytes_per_iteration": 4096}`},
		{"POST", "/v1/jobs", `{"name": "a", "gpus": 1, "model": "vgg16", "iterations": 3}`},
		{"POST", "/v1/jobs", `{"gpus": -1, "model": "vgg16", "iterations": 3}`},
		{"POST", "/v1/jobs", `{"gpus": 99999999999999999999, "model": "vgg16", "iterations": 3}`},
		{"POST", "/v1/jobs", `{"gpus": 1e300, "model": "vgg16", "iterations": 3}`},
		{"POST", "/v1/jobs", `{"gpus": 2, "model": "gpt-17", "iterations": 3}`},
		{"POST", "/v1/jobs", `{"gpus": 2, "model": {"name": "x", "gradient_bytes": -4, "compute_sec": 1}, "iterations": 3}`},
		{"POST", "/v1/jobs", `{"gpus": 2, "model": {"name": "x", "gradient_bytes": 1e308, "compute_sec": 1e308}, "iterations": 3}`},
		{"POST", "/v1/jobs", `{"gpus": 2, "model": "vgg16", "iterations": 3, "compute_sec": -1}`},
		{"POST", "/v1/jobs", `{"gpus": 2, "model": "vgg16", "iterations": 2000000000}`},
		{"POST", "/v1/jobs", `{"gpus": 3, "model": "vgg16", "iterations": 3, "pin": {"ps": "h3", "workers": [{"host": "h1", "gpus": 2}, {"host": "h1", "gpus": 1}]}}`},
		{"POST", "/v1/jobs", `{"gpus": 2, "model": "vgg16", "iterations": 3, "pin": {"ps": "h3", "workers": [{"host": "h1", "gpus": 2}], "priority": 9999}}`},
		{"POST", "/v1/jobs", `{"gpus": 2, "model": "vgg16", "iterations": 3, "priority_class": -1}`},
		{"POST", "/v1/jobs", `{"gpus": 2, "model": "vgg16"`},
		{"POST", "/v1/jobs", `{"gpus": 2, "model": "vgg16", "iterations": 3}` + strings.Repeat(" ", 2<<20)},
		{"POST", "/v1/jobs", `{"name": "` + strings.Repeat("n", 4096) + `", "gpus": 1, "model": "vgg16", "iterations": 3}`},
		{"POST", "/v1/jobs", `null`},
		{"POST", "/v1/jobs?race", `{"name": "r", "gpus": 4, "model": "resnet50", "iterations": 10}`},
		{"GET", "/v1/jobs", ``},
		{"GET", "/v1/jobs/1", ``},
		{"GET", "/v1/jobs/-1", ``},
		{"GET", "/v1/jobs/99999999999999999999", ``},
		{"DELETE", "/v1/jobs/1", ``},
		{"DELETE", "/v1/jobs/abc", ``},
		{"PUT", "/v1/jobs/1", `{}`},
		{"GET", "/v1/cluster", ``},
	} {
		f.Add(seed.method, seed.path, []byte(seed.body))
	}
	f.Fuzz(func(t *testing.T, method, path string, body []byte) {
		req, err := http.NewRequest(method, srv.URL+path, bytes.NewReader(body))
		if err != nil || req.URL.Host != strings.TrimPrefix(srv.URL, "http://") {
			t.Skip("not a request to the API")
		}
		code, msg := do(t, req)
		if code >= 500 {
			t.Fatalf("%s %q %.200q: %d %s", method, path, body, code, msg)
		}
		if code >= 400 && code != http.StatusMethodNotAllowed && code != http.StatusNotFound {
			var e struct{ Error string }
			if json.Unmarshal([]byte(msg), &e) != nil || e.Error == "" {
				t.Fatalf("%s %q %.200q: %d without a JSON error: %q", method, path, body, code, msg)
			}
		}
		if code == http.StatusCreated && strings.Contains(path, "race") {
			var j Job
			if err := json.Unmarshal([]byte(msg), &j); err != nil {
				t.Fatal(err)
			}
			var wg sync.WaitGroup
			for range 2 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					r, _ := http.NewRequest(http.MethodDelete, fmt.Sprintf("%s/v1/jobs/%d", srv.URL, j.ID), nil)
					if code, msg := do(t, r); code != http.StatusNoContent && code != http.StatusConflict {
						t.Errorf("cancel job %d while it starts: %d %s", j.ID, code, msg)
					}
				}()
			}
			wg.Wait()
		}
		// Every job ends (the agents cannot start), and then nothing is held.
		deadline := time.Now().Add(20 * time.Second)
		for {
			live := 0
			for _, j := range s.Jobs() {
				if !j.State.Final() {
					live++
				}
			}
			if live == 0 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("after %s %q %.200q: %d jobs never ended", method, path, body, live)
			}
			time.Sleep(10 * time.Millisecond)
		}
		for _, m := range s.Machines() {
			if m.FreeGPUs != m.GPUs {
				t.Fatalf("after %s %q %.200q: %s has %d of %d GPUs free with every job ended", method, path, body, m.Host, m.FreeGPUs, m.GPUs)
			}
		}
		if left, err := ctl.Client.Jobs(context.Background()); err != nil || len(left) != 0 {
			t.Fatalf("after %s %q %.200q: the controller still has %v (%v)", method, path, body, left, err)
		}
		if code, msg := do(t, mustRequest(http.MethodGet, srv.URL+"/v1/cluster")); code != http.StatusOK {
			t.Fatalf("after %s %q %.200q: GET /v1/cluster: %d %s", method, path, body, code, msg)
		}
	})
}

func do(t *testing.T, req *http.Request) (int, string) {
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", req.Method, req.URL, err)
	}
	defer resp.Body.Close()
	var b bytes.Buffer
	_, _ = b.ReadFrom(resp.Body)
	return resp.StatusCode, b.String()
}

func mustRequest(method, url string) *http.Request {
	r, err := http.NewRequest(method, url, nil)
	if err != nil {
		panic(err)
	}
	return r
}
