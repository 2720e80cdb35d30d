package scheduler

import (
	"context"
	"errors"
	"net/url"
	"syscall"
	"testing"
	"time"

	cp "github.com/inapack/inapack/controlplane"
	"github.com/inapack/inapack/controlplane/api"
)

// flakyController is a controller that is restarting: its first calls go unanswered, the first
// add having taken effect all the same (the connection reset after the controller applied it).
type flakyController struct {
	down         int  // calls still unanswered
	dead         bool // nothing answers, nothing is applied
	have         map[int]bool
	adds, remove int
}

var errReset = &url.Error{Op: "Post", URL: "http://127.0.0.1:1/v1/jobs", Err: syscall.ECONNRESET}

func (f *flakyController) Jobs(context.Context) ([]cp.JobConfig, error) { return nil, nil }

func (f *flakyController) AddJob(_ context.Context, j cp.JobConfig) error {
	f.adds++
	if f.dead {
		return errReset
	}
	if f.have[j.ID] {
		return &api.StatusError{Method: "POST", Path: "/v1/jobs", Code: 409, Status: "409 Conflict", Message: "job exists"}
	}
	f.have[j.ID] = true
	if f.down > 0 {
		f.down--
		return errReset
	}
	return nil
}

func (f *flakyController) RemoveJob(_ context.Context, id int) error {
	f.remove++
	if f.down > 0 {
		f.down--
		return errReset
	}
	if !f.have[id] {
		return &api.StatusError{Method: "DELETE", Path: "/v1/jobs/7", Code: 404, Status: "404 Not Found", Message: "unknown job"}
	}
	delete(f.have, id)
	return nil
}

// TestControllerRestartNeitherFailsNorLeaks: chaos found jobs that started while the controller
// restarted failing ("installing the job on the switches: connection reset by peer") and their
// entries left behind (the removal refused too). The scheduler now retries a call that went
// unanswered, takes the conflict that follows an add applied before the reset as done, and a
// removal of what is gone as done; the controller's own refusals still fail at once.
func TestControllerRestartNeitherFailsNorLeaks(t *testing.T) {
	f := &flakyController{down: 2, have: map[int]bool{}}
	s := &Service{cfg: Config{Controller: f}}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := s.addJob(ctx, cp.JobConfig{ID: 7}); err != nil {
		t.Fatalf("add across a restart: %v", err)
	}
	if !f.have[7] || f.adds != 2 {
		t.Fatalf("after the add: installed %v after %d calls, want installed after 2", f.have[7], f.adds)
	}
	f.down = 3
	if err := s.removeJob(ctx, 7); err != nil {
		t.Fatalf("remove across a restart: %v", err)
	}
	if f.have[7] || f.remove != 4 {
		t.Fatalf("after the removal: still installed %v after %d calls, want removed after 4", f.have[7], f.remove)
	}
	if err := s.removeJob(ctx, 7); err != nil {
		t.Fatalf("removing a job the controller no longer has: %v, want done", err)
	}
	if err := s.addJob(ctx, cp.JobConfig{ID: 8}); err != nil {
		t.Fatal(err)
	}
	if err := s.addJob(ctx, cp.JobConfig{ID: 8}); err == nil {
		t.Fatal("a conflict the scheduler did not cause itself was taken as success")
	}
	// A controller that never answers, at a URL quoting 404 and 409: no answer is neither a
	// removal nor a conflict (the text once decided, and a refused connection lifted the job).
	f.dead = true
	quoting := &url.Error{Op: "Delete", URL: "http://127.0.0.1:404/v1/jobs/404", Err: errors.New("409 connection refused")}
	errReset = quoting
	defer func() { errReset = &url.Error{Op: "Post", URL: "http://127.0.0.1:1/v1/jobs", Err: syscall.ECONNRESET} }()
	f.down = 1 << 20
	brief, cancel3 := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancel3()
	if err := s.removeJob(brief, 8); err == nil {
		t.Fatal("an unanswered removal whose URL quotes 404 was taken as done")
	}
	f.down = 0
	short, cancel2 := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancel2()
	if err := s.addJob(short, cp.JobConfig{ID: 9}); !unreachable(err) {
		t.Fatalf("a controller that never answers: %v, want the unreachable error once the context ends", err)
	}
}

// TestDuplicateLiveName: a name names one live job; it is free again once that job has ended.
func TestDuplicateLiveName(t *testing.T) {
	c, err := NewCluster(loadTopo(t, "two-racks"), ClusterParams{})
	if err != nil {
		t.Fatal(err)
	}
	// A controller that never answers keeps a switch job starting.
	s := newTestService(t, t.TempDir(), &flakyController{dead: true, have: map[int]bool{}}, c, unreachableHosts(c))
	defer s.Close()
	a := sub(4)
	a.Name = "twin"
	first, err := s.Submit(a)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Submit(a); !errors.Is(err, ErrDuplicateName) {
		t.Fatalf("a second live job named %q: %v, want ErrDuplicateName", a.Name, err)
	}
	if err := s.Cancel(first.ID); err != nil {
		t.Fatal(err)
	}
	s.Close() // ends the start's retries; the job is torn down as cancelled
	if j, _ := s.Job(first.ID); !j.State.Final() {
		t.Fatalf("job %d: %s after its cancel and the service's close", first.ID, j.State)
	}
	if _, err := s.Submit(a); err != nil {
		t.Fatalf("the name of a job that ended: %v", err)
	}
}

// TestSwitchJobIDsGoRound: a job placed after another ended gets the next switch job id, not the
// one just freed (stale packets of the ended job would be summed into the new one's results),
// across a restart of the service too, and the ids wrap round after the last.
func TestSwitchJobIDsGoRound(t *testing.T) {
	topo := loadTopo(t, "two-racks")
	c, err := NewCluster(topo, ClusterParams{})
	if err != nil {
		t.Fatal(err)
	}
	ctl := controllerFor(t, topo)
	dir := t.TempDir()
	s := newTestService(t, dir, ctl, c, unreachableHosts(c))
	run := func(s *Service, n int) int {
		if _, err := s.Submit(sub(4)); err != nil { // two machines: a switch job
			t.Fatal(err)
		}
		jobs := waitFinal(t, s, n)
		return jobs[n-1].Placement.SwitchJob
	}
	if a, b := run(s, 1), run(s, 2); a != 1 || b != 2 {
		t.Fatalf("switch job ids %d then %d, want 1 then 2", a, b)
	}
	s.Close()
	s = newTestService(t, dir, ctl, c, unreachableHosts(c))
	defer s.Close()
	if id := run(s, 3); id != 3 {
		t.Fatalf("after a restart: switch job id %d, want 3", id)
	}
	s.mu.Lock()
	s.lastSwitchJob = MaxSwitchJob
	s.mu.Unlock()
	if id := run(s, 4); id != 1 {
		t.Fatalf("after id %d: %d, want 1", MaxSwitchJob, id)
	}
}
