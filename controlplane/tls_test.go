package controlplane

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/inapack/inapack/p4src/model"
	"github.com/inapack/inapack/refswitch"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
)

// selfSigned writes a self-signed certificate for 127.0.0.1 and returns its path and the key pair.
func selfSigned(t *testing.T) (string, tls.Certificate) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "ina-test"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}, DNSNames: []string{"tor1"},
		KeyUsage: x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign, IsCA: true, BasicConstraintsValid: true,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o644); err != nil {
		t.Fatal(err)
	}
	return path, tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
}

func TestTLSSwitch(t *testing.T) {
	caPath, cert := selfSigned(t)
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	sw := model.New()
	g := grpc.NewServer(grpc.Creds(credentials.NewTLS(&tls.Config{Certificates: []tls.Certificate{cert}})))
	refswitch.NewP4RuntimeServer(sw, refswitch.WithDeviceID(1), refswitch.WithLogger(quietLog())).Register(g)
	go g.Serve(lis)
	defer g.Stop()

	cfg := testConfig(t, refConfig, lis.Addr().String())
	cfg.Switches[0].TLS = &TLSConfig{CA: caPath, ServerName: "tor1"}
	if err := newController(t, cfg).Apply(ctx(t)); err != nil {
		t.Fatal(err)
	}
	checkJob5(t, sw)

	// Plaintext against a TLS server fails, naming the address, within the dial timeout.
	plain := testConfig(t, refConfig, lis.Addr().String())
	plain.Controller.DialTimeout = Duration(500 * time.Millisecond)
	if err := newController(t, plain).Apply(ctx(t)); err == nil || !strings.Contains(err.Error(), lis.Addr().String()) {
		t.Fatalf("plaintext to a TLS switch: %v", err)
	}
}
