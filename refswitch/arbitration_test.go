package refswitch

import (
	"context"
	"testing"
	"time"

	p4v1 "github.com/p4lang/p4runtime/go/p4/v1"
	"google.golang.org/genproto/googleapis/rpc/code"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

func TestArbitrationGoClient(t *testing.T) {
	_, c := startServer(t)
	hi, ok := primary(t, c, 10)
	if !ok {
		t.Fatal("first client is not primary")
	}
	lo, ok := primary(t, c, 5)
	if ok {
		t.Fatal("a lower election id became primary")
	}
	ctx := context.Background()
	if _, err := lo.SetFwdPipeFromBytes(ctx, nil, testP4Info(t), 1); status.Code(err) != codes.PermissionDenied {
		t.Fatalf("backup pipeline push: %v", err)
	}
	if _, err := hi.SetFwdPipeFromBytes(ctx, nil, testP4Info(t), 1); err != nil {
		t.Fatal(err)
	}
	if err := lo.InsertMulticastGroup(ctx, 3, []uint32{1}); status.Code(err) != codes.PermissionDenied {
		t.Fatalf("backup write: %v", err)
	}
	if err := hi.InsertMulticastGroup(ctx, 3, []uint32{1}); err != nil {
		t.Fatalf("primary write: %v", err)
	}
	// Reads are open to backups.
	if _, err := lo.ReadEntitySingle(ctx, &p4v1.Entity{Entity: &p4v1.Entity_CounterEntry{CounterEntry: &p4v1.CounterEntry{
		CounterId: 302000001, Index: &p4v1.Index{Index: 0}}}}); err != nil {
		t.Fatalf("backup read: %v", err)
	}
}

// arbitrate opens a raw stream and sends one arbitration update.
func arbitrate(ctx context.Context, t *testing.T, c p4v1.P4RuntimeClient, device, election uint64) p4v1.P4Runtime_StreamChannelClient {
	t.Helper()
	st, err := c.StreamChannel(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Send(&p4v1.StreamMessageRequest{Update: &p4v1.StreamMessageRequest_Arbitration{Arbitration: &p4v1.MasterArbitrationUpdate{
		DeviceId: device, ElectionId: &p4v1.Uint128{Low: election}}}}); err != nil {
		t.Fatal(err)
	}
	return st
}

func nextArbitration(t *testing.T, st p4v1.P4Runtime_StreamChannelClient) *p4v1.MasterArbitrationUpdate {
	t.Helper()
	m, err := st.Recv()
	if err != nil {
		t.Fatalf("stream: %v", err)
	}
	if m.GetArbitration() == nil {
		t.Fatalf("want an arbitration update, got %v", m)
	}
	return m.GetArbitration()
}

func TestArbitrationRaw(t *testing.T) {
	_, c := startServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	ctxA, dropA := context.WithCancel(ctx)
	a := arbitrate(ctxA, t, c, 1, 20)
	if u := nextArbitration(t, a); u.Status.Code != int32(code.Code_OK) || u.ElectionId.Low != 20 {
		t.Fatalf("A: %v", u)
	}
	b := arbitrate(ctx, t, c, 1, 7)
	if u := nextArbitration(t, b); u.Status.Code != int32(code.Code_ALREADY_EXISTS) || u.ElectionId.Low != 20 {
		t.Fatalf("B: %v", u)
	}
	// Same election id as A: refused.
	dup := arbitrate(ctx, t, c, 1, 20)
	if _, err := dup.Recv(); status.Code(err) != codes.InvalidArgument {
		t.Fatalf("duplicate election id: %v", err)
	}
	// Wrong device.
	wrong := arbitrate(ctx, t, c, 9, 30)
	if _, err := wrong.Recv(); status.Code(err) != codes.NotFound {
		t.Fatalf("wrong device: %v", err)
	}
	// Writes from B, or with a made-up id, are refused.
	for _, id := range []uint64{7, 99} {
		_, err := c.Write(ctx, &p4v1.WriteRequest{DeviceId: 1, ElectionId: &p4v1.Uint128{Low: id}})
		if status.Code(err) != codes.PermissionDenied {
			t.Fatalf("write with election id %d: %v", id, err)
		}
	}
	// A leaves: B is told it is primary now.
	dropA()
	if u := nextArbitration(t, b); u.Status.Code != int32(code.Code_OK) || u.ElectionId.Low != 7 {
		t.Fatalf("B after A left: %v", u)
	}
	// A packet-out is answered with a stream error, not a crash.
	if err := b.Send(&p4v1.StreamMessageRequest{Update: &p4v1.StreamMessageRequest_Packet{Packet: &p4v1.PacketOut{Payload: []byte{1}}}}); err != nil {
		t.Fatal(err)
	}
	m, err := b.Recv()
	if err != nil || m.GetError().GetCanonicalCode() != int32(code.Code_UNIMPLEMENTED) {
		t.Fatalf("packet-out answer %v %v", m, err)
	}
}
