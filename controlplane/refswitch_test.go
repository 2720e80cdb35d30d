package controlplane

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/inapack/inapack/p4src"
)

func quietLog() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

func testConfig(t testing.TB, text string, addrs ...string) *Config {
	t.Helper()
	cfg, err := ParseConfig([]byte(text), "test.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for i, a := range addrs {
		cfg.Switches[i].Address = a
	}
	return cfg
}

func newController(t testing.TB, cfg *Config) *Controller {
	t.Helper()
	c, err := New(cfg, Options{DefaultP4Info: p4src.P4Info, Logger: quietLog()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

func ctx(t testing.TB) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return c
}
