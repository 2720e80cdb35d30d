package api

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"sync"
	"testing"

	cp "github.com/inapack/inapack/controlplane"
)

// FuzzJobAPI sends any method, path and body to the controller's job API, backed by a real
// controller on an in-process reference switch: every request gets a 2xx or a 4xx with a JSON
// error saying why (never a 5xx, a hang or a panic), and the API serves a valid status afterwards.
// With "race" in the path, a removal of the same job runs alongside the request.
func FuzzJobAPI(f *testing.F) {
	_, cl := setup(f, "")
	j6, err := cp.ParseJob([]byte(job6), "job6.yaml")
	if err != nil {
		f.Fatal(err)
	}
	b, _ := json.Marshal(j6)
	job6JSON := string(b)
	for _, s := range []struct{ method, path, body string }{
		{"POST", "/v1/jobs", job6JSON},
		{"POST", "/v1/jobs", `{"id": 6, "switches": []}`},
		{"POST", "/v1/jobs", `{"id": -1}`},
		{"POST", "/v1/jobs", `{"id": 99999999999999999999}`},
		{"POST", "/v1/jobs", `{"id": 7, "priority_cap": -5, "switches": [{"switch": "s1", "ps": {"port": 4}, "members": [{"port": 1, "worker_bit": 40}]}]}`},
		{"POST", "/v1/jobs", `{"id": 8, "switches": [{"switch": "nope"}]}`},
		{"POST", "/v1/jobs", `{"id": 9, "bogus": 1}`},
		{"POST", "/v1/jobs", `[1, 2, 3]`},
		{"POST", "/v1/jobs", `{"id": 6`},
		{"POST", "/v1/jobs", `{"id": 10}` + strings.Repeat(" ", 2<<20)},
		{"POST", "/v1/jobs", `{"id": 11, "switches": [` + strings.Repeat(`{"switch": "s1"},`, 100000) + `{}]}`},
		{"PATCH", "/v1/jobs/5", `{"priority_cap": 300}`},
		{"PATCH", "/v1/jobs/5", `{}`},
		{"PATCH", "/v1/jobs/5", `{"ina": false}`},
		{"PATCH", "/v1/jobs/12345", `{"ina": true}`},
		{"DELETE", "/v1/jobs/5", ``},
		{"DELETE", "/v1/jobs/-3", ``},
		{"DELETE", "/v1/jobs/x", ``},
		{"GET", "/v1/jobs/5", ``},
		{"GET", "/v1/jobs/%00", ``},
		{"GET", "/v1/status", ``},
		{"PUT", "/v1/jobs", `{}`},
		{"POST", "/v1/jobs?race", job6JSON},
	} {
		f.Add(s.method, s.path, []byte(s.body))
	}
	f.Fuzz(func(t *testing.T, method, path string, body []byte) {
		req, err := http.NewRequest(method, cl.Base+path, bytes.NewReader(body))
		if err != nil || req.URL.Host != strings.TrimPrefix(cl.Base, "http://") {
			t.Skip("not a request to the API")
		}
		req.Header.Set("Content-Type", "application/json")
		var wg sync.WaitGroup
		if strings.Contains(path, "race") {
			var j struct{ ID int }
			_ = json.Unmarshal(body, &j)
			wg.Add(1)
			go func() { defer wg.Done(); _ = cl.RemoveJob(context.Background(), j.ID) }()
		}
		resp, err := cl.HTTP.Do(req)
		wg.Wait()
		if err != nil {
			t.Fatalf("%s %q: %v", method, path, err)
		}
		defer resp.Body.Close()
		if resp.StatusCode >= 500 {
			t.Fatalf("%s %q %.200q: %s", method, path, body, resp.Status)
		}
		if resp.StatusCode >= 400 && resp.StatusCode != http.StatusMethodNotAllowed && resp.StatusCode != http.StatusNotFound {
			var e Error
			if err := json.NewDecoder(resp.Body).Decode(&e); err != nil || e.Error == "" {
				t.Fatalf("%s %q %.200q: %s without a JSON error (%v)", method, path, body, resp.Status, err)
			}
		}
		sts, err := cl.Status(context.Background())
		if err != nil || len(sts) != 1 || !sts[0].Connected {
			t.Fatalf("after %s %q %.200q: status %+v, %v", method, path, body, sts, err)
		}
	})
}
