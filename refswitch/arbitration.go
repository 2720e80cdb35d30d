package refswitch

import (
	"fmt"
	"io"
	"log/slog"
	"sync"

	p4v1 "github.com/p4lang/p4runtime/go/p4/v1"
	"google.golang.org/genproto/googleapis/rpc/code"
	rpcstatus "google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// electionID is a P4Runtime Uint128.
type electionID struct{ hi, lo uint64 }

func (a electionID) less(b electionID) bool { return a.hi < b.hi || (a.hi == b.hi && a.lo < b.lo) }

func (a electionID) String() string {
	if a.hi == 0 {
		return fmt.Sprint(a.lo)
	}
	return fmt.Sprintf("%d:%d", a.hi, a.lo)
}

// clientStream is one open StreamChannel.
type clientStream struct {
	srv    p4v1.P4Runtime_StreamChannelServer
	sendMu sync.Mutex // gRPC streams allow one sender at a time
	id     electionID
	hasID  bool // a stream without an election id is a backup that can never be primary
}

func (c *clientStream) send(m *p4v1.StreamMessageResponse) {
	c.sendMu.Lock()
	defer c.sendMu.Unlock()
	_ = c.srv.Send(m) // a broken stream ends its own Recv loop
}

// arbiter elects the primary client of the (single) device for the default role: the open stream
// with the highest election id.
type arbiter struct {
	deviceID uint64
	log      *slog.Logger

	mu      sync.Mutex
	streams map[*clientStream]struct{}
	primary *clientStream
}

type notice struct {
	to  *clientStream
	msg *p4v1.StreamMessageResponse
}

// elect recomputes the primary and returns the arbitration updates to send: to every stream when
// the primary changed, else only to changed. a.mu is held.
func (a *arbiter) elect(changed *clientStream) []notice {
	old := a.primary
	a.primary = nil
	for c := range a.streams {
		if c.hasID && (a.primary == nil || a.primary.id.less(c.id)) {
			a.primary = c
		}
	}
	if a.primary != old && a.primary != nil {
		a.log.Info("P4Runtime primary elected", "election_id", a.primary.id.String())
	}
	var out []notice
	for c := range a.streams {
		if a.primary != old || c == changed {
			out = append(out, notice{c, a.update(c)})
		}
	}
	return out
}

// update is the arbitration message for c as the P4Runtime spec words it: OK for the primary,
// ALREADY_EXISTS for a backup while a primary exists, NOT_FOUND when there is none.
func (a *arbiter) update(c *clientStream) *p4v1.StreamMessageResponse {
	u := &p4v1.MasterArbitrationUpdate{DeviceId: a.deviceID}
	switch {
	case a.primary == c:
		u.Status = &rpcstatus.Status{Code: int32(code.Code_OK), Message: "this client is the primary"}
	case a.primary != nil:
		u.Status = &rpcstatus.Status{Code: int32(code.Code_ALREADY_EXISTS), Message: "another client is the primary"}
	default:
		u.Status = &rpcstatus.Status{Code: int32(code.Code_NOT_FOUND), Message: "no primary client"}
	}
	if a.primary != nil {
		u.ElectionId = &p4v1.Uint128{High: a.primary.id.hi, Low: a.primary.id.lo}
	}
	return &p4v1.StreamMessageResponse{Update: &p4v1.StreamMessageResponse_Arbitration{Arbitration: u}}
}

func (a *arbiter) arbitrate(c *clientStream, m *p4v1.MasterArbitrationUpdate) error {
	if m.GetDeviceId() != a.deviceID {
		return status.Errorf(codes.NotFound, "arbitration for unknown device id %d (this switch is device %d)", m.GetDeviceId(), a.deviceID)
	}
	if m.GetRole().GetName() != "" {
		return status.Errorf(codes.Unimplemented, "role %q: the reference switch implements only the default role", m.GetRole().GetName())
	}
	a.mu.Lock()
	var id electionID
	if e := m.GetElectionId(); e != nil {
		id = electionID{e.GetHigh(), e.GetLow()}
		for o := range a.streams {
			if o != c && o.hasID && o.id == id {
				a.mu.Unlock()
				return status.Errorf(codes.InvalidArgument, "election id %s is already used by another client", id)
			}
		}
	}
	if a.streams == nil {
		a.streams = map[*clientStream]struct{}{}
	}
	a.streams[c] = struct{}{}
	c.id, c.hasID = id, m.GetElectionId() != nil
	out := a.elect(c)
	a.mu.Unlock()
	for _, n := range out {
		n.to.send(n.msg)
	}
	return nil
}

func (a *arbiter) remove(c *clientStream) {
	a.mu.Lock()
	if _, ok := a.streams[c]; !ok {
		a.mu.Unlock()
		return
	}
	delete(a.streams, c)
	out := a.elect(nil)
	a.mu.Unlock()
	for _, n := range out {
		n.to.send(n.msg)
	}
}

// checkPrimary admits a Write or a pipeline push only from the primary.
func (a *arbiter) checkPrimary(role string, e *p4v1.Uint128) error {
	if role != "" {
		return status.Errorf(codes.Unimplemented, "role %q: the reference switch implements only the default role", role)
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.primary == nil {
		return status.Error(codes.PermissionDenied, "no primary client: open a StreamChannel and send a MasterArbitrationUpdate first")
	}
	if e == nil || (electionID{e.GetHigh(), e.GetLow()}) != a.primary.id {
		got := "none"
		if e != nil {
			got = electionID{e.GetHigh(), e.GetLow()}.String()
		}
		return status.Errorf(codes.PermissionDenied, "election id %s is not the primary's (%s)", got, a.primary.id)
	}
	return nil
}

// StreamChannel handles arbitration; packet-out and digests are not implemented and are answered
// with a StreamError.
func (s *P4RuntimeServer) StreamChannel(stream p4v1.P4Runtime_StreamChannelServer) error {
	c := &clientStream{srv: stream}
	defer s.arb.remove(c)
	for {
		m, err := stream.Recv()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		switch u := m.GetUpdate().(type) {
		case *p4v1.StreamMessageRequest_Arbitration:
			if err := s.arb.arbitrate(c, u.Arbitration); err != nil {
				s.log.Warn("arbitration refused", "err", err)
				return err
			}
		default:
			c.send(&p4v1.StreamMessageResponse{Update: &p4v1.StreamMessageResponse_Error{Error: &p4v1.StreamError{
				CanonicalCode: int32(code.Code_UNIMPLEMENTED),
				Message:       fmt.Sprintf("the reference switch does not implement stream message %T", u),
			}}})
		}
	}
}
