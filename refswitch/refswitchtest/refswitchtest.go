// Package refswitchtest serves an in-process reference switch on loopback for other packages' tests.
package refswitchtest

import (
	"io"
	"log/slog"
	"net"
	"testing"
	"time"

	"google.golang.org/grpc"

	"github.com/inapack/inapack/p4src/model"
	"github.com/inapack/inapack/refswitch"
)

// Server is a running in-process reference switch.
type Server struct {
	Switch *model.Switch // the model behind the server
	Addr   string        // host:port served
	grpc   *grpc.Server
}

// Stop stops serving at once (a switch that dies); it is also done when the test ends.
func (s *Server) Stop() { s.grpc.Stop() }

// Serve starts a fresh model behind the P4Runtime server (device id 1) on addr ("127.0.0.1:0" picks
// a free port). Listening is retried for a while: a just-stopped server's port takes a moment to be
// free again, which is what restart tests need.
func Serve(t testing.TB, addr string) *Server {
	t.Helper()
	var lis net.Listener
	var err error
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if lis, err = net.Listen("tcp", addr); err == nil || time.Now().After(deadline) {
			break
		}
	}
	if err != nil {
		t.Fatal(err)
	}
	s := &Server{Switch: model.New(), Addr: lis.Addr().String(), grpc: grpc.NewServer()}
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	refswitch.NewP4RuntimeServer(s.Switch, refswitch.WithDeviceID(1), refswitch.WithLogger(quiet)).Register(s.grpc)
	go s.grpc.Serve(lis)
	t.Cleanup(s.Stop)
	return s
}
