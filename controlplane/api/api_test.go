package api

import (
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	cp "github.com/inapack/inapack/controlplane"
	"github.com/inapack/inapack/p4src"
	"github.com/inapack/inapack/p4src/model"
	"github.com/inapack/inapack/refswitch/refswitchtest"
)

const config = `
switches:
  - name: s1
    address: ADDR
    device_id: 1
    target: ref
jobs:
  - id: 5
    switches:
      - switch: s1
        ps: {port: 3, mac: "02:00:00:00:00:03", ip: 10.0.0.3}
        members: [{port: 1, worker_bit: 0}, {port: 2, worker_bit: 1}]
        result: {port: 3, multicast_group: 5}
`

const job6 = `
id: 6
priority_cap: 2
switches:
  - switch: s1
    ps: {port: 4, mac: "02:00:00:00:00:04", ip: 10.0.0.4}
    members: [{port: 1, worker_bit: 0}]
`

func setup(t testing.TB, token string) (*model.Switch, *Client) {
	t.Helper()
	ref := refswitchtest.Serve(t, "127.0.0.1:0")
	sw := ref.Switch
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	cfg, err := cp.ParseConfig([]byte(strings.Replace(config, "ADDR", ref.Addr, 1)), "t.yaml")
	if err != nil {
		t.Fatal(err)
	}
	c, err := cp.New(cfg, cp.Options{DefaultP4Info: p4src.P4Info, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := c.Apply(ctx); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(Handler(c, token, quiet))
	t.Cleanup(srv.Close)
	return sw, NewClient(srv.URL, token)
}

func TestJobAPI(t *testing.T) {
	sw, cl := setup(t, "s3cret")
	ctx := context.Background()
	j, err := cp.ParseJob([]byte(job6), "job6.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if err := cl.AddJob(ctx, *j); err != nil {
		t.Fatal(err)
	}
	if e, ok := sw.Job(model.JobKey{Job: 6, Port: 1}); !ok || e.PriorityCap != 2 || e.FanIn != 1 {
		t.Fatalf("job 6 = %+v %v", e, ok)
	}
	if err := cl.AddJob(ctx, *j); err == nil || !strings.Contains(err.Error(), "409") {
		t.Fatalf("duplicate add: %v", err)
	}
	bad := *j
	bad.ID = 2000
	if err := cl.AddJob(ctx, bad); err == nil || !strings.Contains(err.Error(), "400") || !strings.Contains(err.Error(), "out of 1..1023") {
		t.Fatalf("bad job id: %v", err)
	}
	seven := 7
	if err := cl.UpdateJob(ctx, 6, JobPatch{PriorityCap: &seven}); err != nil {
		t.Fatal(err)
	}
	if e, _ := sw.Job(model.JobKey{Job: 6, Port: 1}); e.PriorityCap != 7 {
		t.Fatalf("priority not changed: %+v", e)
	}
	off := false
	if err := cl.UpdateJob(ctx, 5, JobPatch{INA: &off}); err != nil {
		t.Fatal(err)
	}
	if e, _ := sw.Job(model.JobKey{Job: 5, Port: 1}); e.INAEnabled {
		t.Fatalf("INA not disabled: %+v", e)
	}
	jobs, err := cl.Jobs(ctx)
	if err != nil || len(jobs) != 2 {
		t.Fatalf("jobs %v %v", jobs, err)
	}
	if err := cl.RemoveJob(ctx, 6); err != nil {
		t.Fatal(err)
	}
	if _, ok := sw.PS(6); ok {
		t.Fatal("job 6 not removed")
	}
	if _, ok := sw.PS(5); !ok {
		t.Fatal("job 5 removed too")
	}
	if err := cl.RemoveJob(ctx, 6); err == nil || !strings.Contains(err.Error(), "404") {
		t.Fatalf("second remove: %v", err)
	}
	sts, err := cl.Status(ctx)
	if err != nil || len(sts) != 1 || !sts[0].Connected {
		t.Fatalf("status %+v %v", sts, err)
	}
	// The controller was applied, not run: nothing has polled the switch until a fresh status.
	if sts[0].Snapshot != nil {
		t.Fatalf("snapshot before any poll: %+v", sts[0].Snapshot)
	}
	asked := time.Now()
	if sts, err = cl.FreshStatus(ctx); err != nil || len(sts) != 1 || sts[0].Snapshot == nil || sts[0].Snapshot.Time.Before(asked) {
		t.Fatalf("fresh status %+v %v", sts, err)
	}
	if _, ok := sts[0].Snapshot.JobEvents[5]; !ok {
		t.Fatalf("fresh status has no counters of job 5: %+v", sts[0].Snapshot)
	}
}

func TestTokenRequired(t *testing.T) {
	_, cl := setup(t, "s3cret")
	cl.Token = "wrong"
	if _, err := cl.Jobs(context.Background()); err == nil || !strings.Contains(err.Error(), "401") {
		t.Fatalf("wrong token: %v", err)
	}
	resp, err := http.Get(cl.Base + "/v1/jobs")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("no token: %s", resp.Status)
	}
}

func TestBadRequests(t *testing.T) {
	_, cl := setup(t, "")
	for _, tc := range []struct{ method, path, body string }{
		{"POST", "/v1/jobs", "{not json"},
		{"POST", "/v1/jobs", `{"id": 9, "bogus": 1}`},
		{"PATCH", "/v1/jobs/5", `{}`},
		{"DELETE", "/v1/jobs/abc", ``},
		{"GET", "/v1/status?fresh=maybe", ``},
	} {
		req, _ := http.NewRequest(tc.method, cl.Base+tc.path, strings.NewReader(tc.body))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusBadRequest {
			t.Errorf("%s %s %q: %s, want 400", tc.method, tc.path, tc.body, resp.Status)
		}
	}
}

func TestCheckExposure(t *testing.T) {
	if err := CheckExposure("127.0.0.1:1", "", false); err != nil {
		t.Fatal(err)
	}
	if err := CheckExposure("[::1]:1", "", false); err != nil {
		t.Fatal(err)
	}
	if err := CheckExposure("0.0.0.0:1", "tok", false); err == nil {
		t.Fatal("non-loopback without TLS accepted")
	}
	if err := CheckExposure("0.0.0.0:1", "", true); err == nil {
		t.Fatal("non-loopback without token accepted")
	}
	if err := CheckExposure("10.0.0.1:1", "tok", true); err != nil {
		t.Fatal(err)
	}
}

// TestTypedErrors: the client's errors say what the server answered by status code, not by text.
// A 404 and a 409 from the real API are IsNotFound and IsConflict; an API that is down gives no
// status even when the URL it quotes contains "404"; the job's owner goes in and comes back.
func TestTypedErrors(t *testing.T) {
	_, cl := setup(t, "")
	ctx := context.Background()
	j, err := cp.ParseJob([]byte(job6), "job6.yaml")
	if err != nil {
		t.Fatal(err)
	}
	j.Owner = "inapack-operator"
	if err := cl.AddJob(ctx, *j); err != nil {
		t.Fatal(err)
	}
	err = cl.AddJob(ctx, *j)
	if !IsConflict(err) || IsNotFound(err) || StatusCode(err) != http.StatusConflict {
		t.Errorf("second add: %v: conflict %v, status %d", err, IsConflict(err), StatusCode(err))
	}
	jobs, err := cl.Jobs(ctx)
	if err != nil || len(jobs) != 2 {
		t.Fatalf("jobs %v %v", jobs, err)
	}
	for _, got := range jobs {
		if want := map[int]string{5: "", 6: "inapack-operator"}[got.ID]; got.Owner != want {
			t.Errorf("job %d: owner %q, want %q", got.ID, got.Owner, want)
		}
	}
	bad := *j
	bad.ID, bad.Owner = 7, "two words"
	if err := cl.AddJob(ctx, bad); StatusCode(err) != http.StatusBadRequest || !strings.Contains(err.Error(), "owner") {
		t.Errorf("bad owner: %v (status %d)", err, StatusCode(err))
	}
	if err := cl.RemoveJob(ctx, 404); !IsNotFound(err) {
		t.Errorf("removing an unknown job: %v: not found %v", err, IsNotFound(err))
	}
	// Nothing listens here: the error quotes /v1/jobs/404 but is no answer of the API.
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := lis.Addr().String()
	lis.Close()
	err = NewClient(addr, "").RemoveJob(ctx, 404)
	if err == nil || !strings.Contains(err.Error(), "/v1/jobs/404") || IsNotFound(err) || StatusCode(err) != 0 {
		t.Errorf("API down: %v: not found %v, status %d; want an error that is no answer", err, IsNotFound(err), StatusCode(err))
	}
}
