package controlplane

import (
	"bytes"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// TestNetnsBMv2 is TestNetnsRefswitch against simple_switch_grpc: the controller pushes the BMv2
// JSON compiled here, installs job 5, and clears its slot through simple_switch_CLI.
func TestNetnsBMv2(t *testing.T) {
	if testing.Short() {
		t.Skip("SKIP: -short")
	}
	ssg, err := exec.LookPath("simple_switch_grpc")
	if err != nil {
		t.Skip("SKIP: simple_switch_grpc not on PATH")
	}
	p4c, err := exec.LookPath("p4c-bm2-ss")
	if err != nil {
		t.Skip("SKIP: p4c-bm2-ss not on PATH (needed to build the BMv2 JSON)")
	}
	if _, err := exec.LookPath("simple_switch_CLI"); err != nil {
		t.Skip("SKIP: simple_switch_CLI not on PATH (BMv2 registers are read through it)")
	}
	setupNetns(t)
	dir := t.TempDir()
	jsonPath, infoPath := filepath.Join(dir, "ina.json"), filepath.Join(dir, "ina.p4info.txtpb")
	if out, err := exec.Command(p4c, "--p4v", "16", "-I", "../p4src", "--p4runtime-files", infoPath,
		"-o", jsonPath, "../p4src/v1model/ina.p4").CombinedOutput(); err != nil {
		t.Fatalf("p4c-bm2-ss: %v: %s", err, out)
	}
	grpcAddr, thrift := freePort(t), freePort(t)
	_, thriftPort, _ := net.SplitHostPort(thrift)
	args := []string{"--no-p4", "--device-id", "1", "--thrift-port", thriftPort, "--log-level", "warn"}
	for _, p := range nsPorts {
		args = append(args, "-i", fmt.Sprintf("%d@%s", p.port, p.sw))
	}
	args = append(args, "--", "--grpc-server-addr", grpcAddr, "--cpu-port", "255")
	var stderr bytes.Buffer
	cmd := exec.Command(ssg, args...)
	cmd.Stderr, cmd.Stdout = &stderr, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Signal(os.Interrupt)
		done := make(chan struct{})
		go func() { cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			cmd.Process.Kill()
			<-done
		}
		if t.Failed() {
			t.Logf("simple_switch_grpc output:\n%s", stderr.String())
		}
	})
	cfg := testConfig(t, refConfig, grpcAddr)
	sc := &cfg.Switches[0]
	sc.Target, sc.DeviceConfig, sc.P4Info, sc.ThriftAddress, sc.Settings = TargetBMv2, jsonPath, infoPath, thrift, nil
	cfg.Controller.DialTimeout = Duration(20 * time.Second)
	c := newController(t, cfg)
	if err := c.Apply(ctx(t)); err != nil {
		t.Fatal(err)
	}
	checkAggregation(t, c)
}
