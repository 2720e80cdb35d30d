package bench

import (
	"strings"
	"testing"
)

const benchA = "```\n" + `make bench: 2026-12-01 18:16 UTC, 2 cores, 5 rounds, load average at start 1.89 2.95 2.82
measurement                                                 value (CI)                    reference (CI)                                    ratio (CI)           target   verdict
forwarding, 1 port: reference switch                        305.2k pkt/s (254.7k-315.1k)  bare ring forwarder 322.6k pkt/s (292.1k-398.8k)  0.87 (0.77-0.95)     >= 0.80  met
all-reduce goodput/worker, 4 workers: ref                   80.2 Mbit/s (65.1-80.9)       the path's limit 109 Mbit/s (106-127)             0.60 (0.57-0.77)     >= 0.80  SPREAD 33% > 25%
all-reduce goodput/worker, 4 workers: ref                   80.2 Mbit/s (65.1-80.9)       target 150 Mbit/s                                 0.53 (0.43-0.54)     >= 1.00  MISSED
PS merge, 8 workers, no INA                                 3.71 GB/s (CPU) (3.50-3.95)   copy() 16.9 GB/s (CPU) (16.1-18.3)                0.22 (0.22-0.23)     >= 0.25  MISSED
CI: the median's distribution-free 94% confidence interval over 5 rounds.
` + "```\n"

// Two tables agree on a figure when the intervals of its median overlap; a figure that moved out
// of the other's interval is named, and the count says so. A host that slowed between the runs
// is named too.
func TestAgree(t *testing.T) {
	b := strings.NewReplacer("305.2k pkt/s (254.7k-315.1k)", "200.0k pkt/s (190.0k-210.0k)", "0.87 (0.77-0.95)", "0.62 (0.59-0.66)",
		"3.71 GB/s (CPU) (3.50-3.95)", "3.80 GB/s (CPU) (3.60-3.90)", "322.6k pkt/s (292.1k-398.8k)", "250.0k pkt/s (240.0k-260.0k)").Replace(benchA)
	var out strings.Builder
	agreed, compared, err := agree(&out, strings.NewReader(benchA), strings.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	// 10: the 4-worker row's value appears twice (two references) and counts once; three
	// references are measured (the forwarder, the path's limit, copy()), the target is not.
	if compared != 10 || agreed != 7 {
		t.Errorf("agreed %d of %d figures, want 7 of 10:\n%s", agreed, compared, out.String())
	}
	for _, want := range []string{
		"305.2k (254.7k-315.1k) | 200.0k (190.0k-210.0k)  DIFFER",
		"0.87 (0.77-0.95) | 0.62 (0.59-0.66)  DIFFER",
		"3.71 (3.50-3.95) | 3.80 (3.60-3.90)  agree, medians inside each other's interval",
		"all-reduce goodput/worker, 4 workers: ref: ratio to target ",
		"all-reduce goodput/worker, 4 workers: ref: ratio to the path's limit ",
		"all-reduce goodput/worker, 4 workers: reference the path's limit ",
		"109 (106-127) | 109 (106-127)  agree",
		"PS merge, 8 workers, no INA: reference copy() ",
		"agree: 7 of 10 figures' intervals overlap",
		"host: the bare ring forwarder (none of this project's code) went from 322.6k to 250.0k (-23%)",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
	out.Reset()
	if _, _, err := agree(&out, strings.NewReader(benchA), strings.NewReader(benchA)); err != nil || strings.Contains(out.String(), "host:") {
		t.Errorf("a table against itself: %v\n%s", err, out.String())
	}
	if _, _, err := agree(&out, strings.NewReader(benchA), strings.NewReader("nothing here\n")); err == nil {
		t.Error("a file with no table compared without error")
	}
}
