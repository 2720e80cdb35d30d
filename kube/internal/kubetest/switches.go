package kubetest

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	cp "github.com/inapack/inapack/controlplane"
	"github.com/inapack/inapack/controlplane/api"
	"github.com/inapack/inapack/controlplane/topology"
	"github.com/inapack/inapack/p4src"
	"github.com/inapack/inapack/p4src/model"
	"github.com/inapack/inapack/refswitch/refswitchtest"
)

// SwitchController is the real switch controller (controlplane, its job API with a bearer token)
// driving in-process reference switches, one per switch of a topology, with no jobs at start.
type SwitchController struct {
	Switches map[string]*model.Switch
	Client   *api.Client // the job API's client, with the token
	URL      string
	cfg      *cp.Config
	ctl      atomic.Pointer[cp.Controller]
	handler  atomic.Pointer[http.Handler]
	token    string
}

// StartSwitchController starts the switches and the controller; all stop when the test ends.
func StartSwitchController(ctx context.Context, t testing.TB, topo *topology.Topology, token string) *SwitchController {
	t.Helper()
	s := &SwitchController{Switches: map[string]*model.Switch{}, token: token}
	eps := map[string]topology.Endpoint{}
	for name := range topo.Switches {
		ref := refswitchtest.Serve(t, "127.0.0.1:0")
		s.Switches[name] = ref.Switch
		eps[name] = topology.Endpoint{Address: ref.Addr, Target: "ref"}
	}
	bare := *topo
	bare.INA.Jobs = nil // jobs come through the API
	cfg, err := bare.Derive(eps)
	Fatal(t, err)
	s.cfg = cfg
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { (*s.handler.Load()).ServeHTTP(w, r) }))
	t.Cleanup(srv.Close)
	s.URL = srv.URL
	s.Client = api.NewClient(srv.URL, token)
	s.Restart(ctx, t)
	t.Cleanup(func() { s.ctl.Load().Close() })
	return s
}

// Restart replaces the controller by a new one with no jobs, as a controller whose state was
// lost comes back: it applies its (job-free) config to the switches and serves the same URL.
func (s *SwitchController) Restart(ctx context.Context, t testing.TB) {
	t.Helper()
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	c, err := cp.New(s.cfg, cp.Options{DefaultP4Info: p4src.P4Info, Logger: quiet})
	Fatal(t, err)
	if old := s.ctl.Swap(c); old != nil {
		old.Close()
	}
	Fatal(t, c.Apply(ctx))
	h := api.Handler(c, s.token, quiet)
	s.Wrap(func(next http.Handler) http.Handler { return next }, h)
}

// Wrap serves the API through wrap(the controller's handler) from now on (a test's fault
// injection); base is the handler to wrap (nil: the current controller's).
func (s *SwitchController) Wrap(wrap func(http.Handler) http.Handler, base http.Handler) {
	if base == nil {
		base = api.Handler(s.ctl.Load(), s.token, slog.New(slog.NewTextHandler(io.Discard, nil)))
	}
	h := wrap(base)
	s.handler.Store(&h)
}

// Controller is the controller serving now.
func (s *SwitchController) Controller() *cp.Controller { return s.ctl.Load() }
