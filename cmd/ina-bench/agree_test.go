package main

import (
	"strings"
	"testing"
)

const benchA = "```\n" + `make bench: 2026-12-01 18:16 UTC, 2 cores, 5 rounds, load average at start 1.89 2.95 2.82
measurement                                                 value (IQR)                   reference (IQR)                                   ratio (IQR)          target   verdict
forwarding, 1 port: reference switch                        305.2k pkt/s (254.7k-315.1k)  bare ring forwarder 322.6k pkt/s (292.1k-398.8k)  0.87 (0.77-0.95)     >= 0.80  met
all-reduce goodput/worker, 4 workers: ref                   80.2 Mbit/s (65.1-80.9)       the path's limit 109 Mbit/s (106-127)             0.60 (0.57-0.77)     >= 0.80  SPREAD 33% > 25%
all-reduce goodput/worker, 4 workers: ref                   80.2 Mbit/s (65.1-80.9)       target 150 Mbit/s                                 0.53 (0.43-0.54)     >= 1.00  MISSED
PS merge, 8 workers, no INA                                 3.71 GB/s (CPU) (3.50-3.95)   copy() 16.9 GB/s (CPU) (16.1-18.3)                0.22 (0.22-0.23)     >= 0.25  MISSED
median (IQR) of 5 rounds; ratio: median (IQR) of the rounds' ratios.
` + "```\n"

// Two tables agree on a figure when the interquartile ranges overlap; a figure that moved out
// of the other's range is named, and the count says so.
func TestAgree(t *testing.T) {
	b := strings.NewReplacer("305.2k pkt/s (254.7k-315.1k)", "200.0k pkt/s (190.0k-210.0k)", "0.87 (0.77-0.95)", "0.62 (0.59-0.66)",
		"3.71 GB/s (CPU) (3.50-3.95)", "3.80 GB/s (CPU) (3.60-3.90)").Replace(benchA)
	var out strings.Builder
	agreed, compared, err := agree(&out, strings.NewReader(benchA), strings.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	// 7: the 4-worker row's value appears twice (two references) and counts once.
	if compared != 7 || agreed != 5 {
		t.Errorf("agreed %d of %d figures, want 5 of 7:\n%s", agreed, compared, out.String())
	}
	for _, want := range []string{
		"305.2k (254.7k-315.1k) | 200.0k (190.0k-210.0k)  DIFFER",
		"0.87 (0.77-0.95) | 0.62 (0.59-0.66)  DIFFER",
		"3.71 (3.50-3.95) | 3.80 (3.60-3.90)  agree, medians inside each other's IQR",
		"all-reduce goodput/worker, 4 workers: ref: ratio to target ",
		"all-reduce goodput/worker, 4 workers: ref: ratio to the path's limit ",
		"agree: 5 of 7 figures' interquartile ranges overlap",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
	if _, _, err := agree(&out, strings.NewReader(benchA), strings.NewReader("nothing here\n")); err == nil {
		t.Error("a file with no table compared without error")
	}
}
