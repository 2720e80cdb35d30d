package refswitch

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"testing"

	p4v1 "github.com/p4lang/p4runtime/go/p4/v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/grpc/test/bufconn"

	"github.com/inapack/inapack/p4src/model"
)

func TestBearerToken(t *testing.T) {
	g, err := newGRPCServer(Config{Token: "s3cret"})
	if err != nil {
		t.Fatal(err)
	}
	NewP4RuntimeServer(model.New(), WithLogger(slog.New(slog.DiscardHandler))).Register(g)
	lis := bufconn.Listen(1 << 16)
	go func() { _ = g.Serve(lis) }()
	defer g.Stop()
	conn, err := grpc.NewClient("passthrough:///bufnet",
		grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) { return lis.DialContext(ctx) }),
		grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	c := p4v1.NewP4RuntimeClient(conn)
	for token, want := range map[string]codes.Code{"": codes.Unauthenticated, "Bearer wrong": codes.Unauthenticated, "Bearer s3cret": codes.OK} {
		ctx := context.Background()
		if token != "" {
			ctx = metadata.AppendToOutgoingContext(ctx, "authorization", token)
		}
		if _, err := c.Capabilities(ctx, &p4v1.CapabilitiesRequest{}); status.Code(err) != want {
			t.Errorf("unary with %q: %v, want %v", token, err, want)
		}
		sctx, cancel := context.WithCancel(ctx)
		st, err := c.StreamChannel(sctx)
		if err == nil {
			err = st.Send(&p4v1.StreamMessageRequest{Update: &p4v1.StreamMessageRequest_Arbitration{Arbitration: &p4v1.MasterArbitrationUpdate{
				DeviceId: 1, ElectionId: &p4v1.Uint128{Low: 1}}}})
		}
		if st != nil && (err == nil || errors.Is(err, io.EOF)) {
			// A Send on a stream the server already ended returns io.EOF; the status is in Recv.
			_, err = st.Recv()
		}
		cancel()
		if got := status.Code(err); got != want {
			t.Errorf("stream with %q: %v, want %v", token, err, want)
		}
	}
}
