package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestLoadClusterFlag(t *testing.T) {
	c, err := loadClusterFlag("", "3x4x2")
	if err != nil || len(c.Racks) != 3 || c.TotalGPUs() != 24 {
		t.Fatalf("uniform 3x4x2: %v %+v", err, c)
	}
	for _, bad := range []string{"3x4", "0x4x2", "ax4x2", "3x4x-1", ""} {
		if _, err := loadClusterFlag("", bad); err == nil {
			t.Errorf("-uniform %q accepted", bad)
		}
	}
}

func TestRunPlace(t *testing.T) {
	data := "../../netpack/testdata/"
	if err := runPlace([]string{"-cluster", data + "cluster.yaml", "-jobs", data + "jobs.yaml", "-json"}); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	big := filepath.Join(dir, "big.yaml")
	if err := os.WriteFile(big, []byte("- {id: big, gpus: 1000, model: vgg16, iterations: 5}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	err := runPlace([]string{"-cluster", data + "cluster.yaml", "-jobs", big})
	if err == nil || !strings.Contains(err.Error(), "needs 1000 GPUs") {
		t.Fatalf("impossible job: %v", err)
	}
	for _, args := range [][]string{
		{"-cluster", data + "cluster.yaml"},
		{"-cluster", data + "cluster.yaml", "-jobs", data + "jobs.yaml", "-policy", "nope"},
		{"-cluster", data + "cluster.yaml", "-jobs", data + "jobs.yaml", "-mode", "both"},
		{"-cluster", big, "-jobs", data + "jobs.yaml"},
	} {
		if err := runPlace(args); err == nil {
			t.Errorf("%v accepted", args)
		}
	}
}

func TestRunBenchFlags(t *testing.T) {
	if err := runBench([]string{"-machines", "40", "-jobs", "20", "-batch", "30"}); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"-machines", "x"}, {"-busy", "1"}, {"-jobs", "0"}} {
		if err := runBench(args); err == nil {
			t.Errorf("%v accepted", args)
		}
	}
}
