package cli

import (
	"context"
	"flag"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/inapack/inapack/controlplane/api"
)

func TestReadToken(t *testing.T) {
	t.Setenv("CLI_TEST_TOKEN", "from-env")
	if tok, err := ReadToken("", "CLI_TEST_TOKEN"); err != nil || tok != "from-env" {
		t.Errorf("no file: %q %v, want the environment's", tok, err)
	}
	f := filepath.Join(t.TempDir(), "token")
	os.WriteFile(f, []byte("s3cret\n"), 0o600)
	if tok, err := ReadToken(f, "CLI_TEST_TOKEN"); err != nil || tok != "s3cret" {
		t.Errorf("file: %q %v, want s3cret", tok, err)
	}
	if _, err := ReadToken(f+".missing", "CLI_TEST_TOKEN"); err == nil || !strings.Contains(err.Error(), "token file") {
		t.Errorf("missing file: %v", err)
	}
}

func TestClientFlags(t *testing.T) {
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	cf := AddClientFlags(fs, "test", "127.0.0.1:1", "CLI_TEST_TOKEN")
	t.Setenv("CLI_TEST_TOKEN", "tok")
	if err := fs.Parse([]string{"--api", "127.0.0.1:2"}); err != nil {
		t.Fatal(err)
	}
	c, err := NewClient(cf.Config(), api.NewClient)
	if err != nil || c.Base != "http://127.0.0.1:2" || c.Token != "tok" {
		t.Fatalf("client %+v %v", c, err)
	}
	notPEM := filepath.Join(t.TempDir(), "ca.pem")
	os.WriteFile(notPEM, []byte("not a certificate"), 0o600)
	if err := fs.Parse([]string{"--ca", notPEM}); err != nil {
		t.Fatal(err)
	}
	if _, err := NewClient(cf.Config(), api.NewClient); err == nil || !strings.Contains(err.Error(), "no certificate") {
		t.Errorf("--ca without a certificate: %v", err)
	}
}

func TestServe(t *testing.T) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {})}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- Serve(ctx, []*http.Server{srv}, []net.Listener{lis}, "", "") }()
	resp, err := http.Get("http://" + lis.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	cancel()
	if err := <-done; err != nil {
		t.Errorf("after cancel: %v, want nil", err)
	}
	if _, err := http.Get("http://" + lis.Addr().String()); err == nil {
		t.Error("still serving after Serve returned")
	}

	// A server that cannot serve ends Serve (and the others) with its error.
	bad, _ := net.Listen("tcp", "127.0.0.1:0")
	bad.Close()
	good, _ := net.Listen("tcp", "127.0.0.1:0")
	defer good.Close()
	srvs := []*http.Server{{Handler: srv.Handler}, {Handler: srv.Handler}}
	if err := Serve(context.Background(), srvs, []net.Listener{bad, good}, "", ""); err == nil {
		t.Error("closed listener: no error")
	}
}
