// Package refswitch serves the Go model of the INA P4 program over P4Runtime and on Linux ports.
package refswitch

import (
	"context"
	"log/slog"
	"sync"

	p4v1 "github.com/p4lang/p4runtime/go/p4/v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/inapack/inapack/p4src/model"
)

// APIVersion is the P4Runtime version the server reports in Capabilities (that of its protos).
const APIVersion = "1.4.0-rc.5"

// P4RuntimeServer implements the P4Runtime service on a model.Switch: the pipeline, table,
// multicast, counter and register RPCs the controller uses, and primary arbitration.
type P4RuntimeServer struct {
	p4v1.UnimplementedP4RuntimeServer

	sw       *model.Switch
	deviceID uint64
	log      *slog.Logger
	arb      arbiter

	mu        sync.Mutex // serialises pipeline changes, writes and counter offsets
	pipe      *pipeline
	devConfig []byte
	cookie    *p4v1.ForwardingPipelineConfig_Cookie
	saved     *p4v1.ForwardingPipelineConfig // VERIFY_AND_SAVE, waiting for COMMIT
	savedPipe *pipeline
	offsets   map[counterIndex]counterOffset
	onCommit  []func()
}

// Option configures a P4RuntimeServer.
type Option func(*P4RuntimeServer)

// WithDeviceID sets the P4Runtime device id the server answers to (default 1).
func WithDeviceID(id uint64) Option { return func(s *P4RuntimeServer) { s.deviceID = id } }

// WithLogger sets the logger (default slog.Default()).
func WithLogger(l *slog.Logger) Option { return func(s *P4RuntimeServer) { s.log = l } }

// OnCommit registers f to run after every committed pipeline push.
func OnCommit(f func()) Option {
	return func(s *P4RuntimeServer) { s.onCommit = append(s.onCommit, f) }
}

// NewP4RuntimeServer returns a server driving sw. It has no pipeline until a client pushes one.
func NewP4RuntimeServer(sw *model.Switch, opts ...Option) *P4RuntimeServer {
	s := &P4RuntimeServer{sw: sw, deviceID: 1, log: slog.Default(), offsets: map[counterIndex]counterOffset{}}
	for _, o := range opts {
		o(s)
	}
	s.arb.deviceID = s.deviceID
	s.arb.log = s.log
	return s
}

// Register adds the P4Runtime service to g.
func (s *P4RuntimeServer) Register(g *grpc.Server) { p4v1.RegisterP4RuntimeServer(g, s) }

// Configured reports whether a pipeline has been committed.
func (s *P4RuntimeServer) Configured() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.pipe != nil
}

// Capabilities reports the P4Runtime API version.
func (s *P4RuntimeServer) Capabilities(context.Context, *p4v1.CapabilitiesRequest) (*p4v1.CapabilitiesResponse, error) {
	return &p4v1.CapabilitiesResponse{P4RuntimeApiVersion: APIVersion}, nil
}

func (s *P4RuntimeServer) checkDevice(id uint64) error {
	if id != s.deviceID {
		return status.Errorf(codes.NotFound, "unknown device id %d (this switch is device %d)", id, s.deviceID)
	}
	return nil
}

// SetForwardingPipelineConfig checks the P4Info against the model and commits it. A commit resets
// the model (tables, slots, counters, settings); RECONCILE_AND_COMMIT keeps the state, since the
// model's state does not depend on P4Info ids.
func (s *P4RuntimeServer) SetForwardingPipelineConfig(_ context.Context, req *p4v1.SetForwardingPipelineConfigRequest) (*p4v1.SetForwardingPipelineConfigResponse, error) {
	if err := s.checkDevice(req.GetDeviceId()); err != nil {
		return nil, err
	}
	if err := s.arb.checkPrimary(req.GetRole(), req.GetElectionId()); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	act := req.GetAction()
	if act == p4v1.SetForwardingPipelineConfigRequest_COMMIT {
		if s.saved == nil {
			return nil, status.Error(codes.FailedPrecondition, "COMMIT: no saved forwarding pipeline config (use VERIFY_AND_SAVE first)")
		}
		s.commit(s.saved, s.savedPipe, true)
		return &p4v1.SetForwardingPipelineConfigResponse{}, nil
	}
	if act == p4v1.SetForwardingPipelineConfigRequest_UNSPECIFIED {
		return nil, status.Error(codes.InvalidArgument, "SetForwardingPipelineConfig: action is unspecified")
	}
	pipe, err := bindPipeline(req.GetConfig().GetP4Info())
	if err != nil {
		s.log.Warn("pipeline rejected", "err", err)
		return nil, status.Error(codes.InvalidArgument, err.Error())
	}
	switch act {
	case p4v1.SetForwardingPipelineConfigRequest_VERIFY:
	case p4v1.SetForwardingPipelineConfigRequest_VERIFY_AND_SAVE:
		s.saved, s.savedPipe = req.GetConfig(), pipe
	case p4v1.SetForwardingPipelineConfigRequest_VERIFY_AND_COMMIT:
		s.commit(req.GetConfig(), pipe, true)
	case p4v1.SetForwardingPipelineConfigRequest_RECONCILE_AND_COMMIT:
		s.commit(req.GetConfig(), pipe, s.pipe == nil)
	default:
		return nil, status.Errorf(codes.InvalidArgument, "SetForwardingPipelineConfig: unknown action %v", act)
	}
	return &p4v1.SetForwardingPipelineConfigResponse{}, nil
}

// commit installs a checked pipeline; s.mu is held.
func (s *P4RuntimeServer) commit(cfg *p4v1.ForwardingPipelineConfig, pipe *pipeline, reset bool) {
	s.pipe, s.devConfig, s.cookie = pipe, cfg.GetP4DeviceConfig(), cfg.GetCookie()
	s.saved, s.savedPipe = nil, nil
	if reset {
		s.sw.Reset()
		s.offsets = map[counterIndex]counterOffset{}
	}
	s.log.Info("pipeline committed", "tables", len(pipe.info.GetTables()), "device_config_bytes", len(s.devConfig), "reset", reset)
	for _, f := range s.onCommit {
		f()
	}
}

// GetForwardingPipelineConfig returns the committed P4Info, device config bytes and cookie.
func (s *P4RuntimeServer) GetForwardingPipelineConfig(_ context.Context, req *p4v1.GetForwardingPipelineConfigRequest) (*p4v1.GetForwardingPipelineConfigResponse, error) {
	if err := s.checkDevice(req.GetDeviceId()); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.pipe == nil {
		return &p4v1.GetForwardingPipelineConfigResponse{}, nil
	}
	cfg := &p4v1.ForwardingPipelineConfig{Cookie: s.cookie}
	switch req.GetResponseType() {
	case p4v1.GetForwardingPipelineConfigRequest_ALL:
		cfg.P4Info, cfg.P4DeviceConfig = s.pipe.info, s.devConfig
	case p4v1.GetForwardingPipelineConfigRequest_P4INFO_AND_COOKIE:
		cfg.P4Info = s.pipe.info
	case p4v1.GetForwardingPipelineConfigRequest_DEVICE_CONFIG_AND_COOKIE:
		cfg.P4DeviceConfig = s.devConfig
	}
	return &p4v1.GetForwardingPipelineConfigResponse{Config: cfg}, nil
}

// pipeline returns the committed pipeline or FAILED_PRECONDITION; s.mu is held.
func (s *P4RuntimeServer) pipeline() (*pipeline, error) {
	if s.pipe == nil {
		return nil, status.Error(codes.FailedPrecondition, "no forwarding pipeline config has been set")
	}
	return s.pipe, nil
}
