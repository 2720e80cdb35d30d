package bench

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/inapack/inapack/internal/agentlog"
)

// iteration is one all-reduce of a training loop as the job saw it: the slowest worker's time
// (a synchronous step waits for it) and what the job's workers waited on during it.
type iteration struct {
	ms                float64
	timer, fast, cuts int // retransmissions by the timer, fast retransmissions, window cuts (all workers)
	backoffs          int
	ranks             int
}

// tailStats summarises the iterations of one training loop.
type tailStats struct {
	n                   int
	p50, p90, p99, max  float64
	slow                int // iterations longer than slowFactor x p50
	slowTimer, slowFast int // slow iterations during which a chunk was resent by the timer / fast
	slowCut, slowNone   int // ... the window was cut; none of the three
}

// slowFactor defines a slow iteration: the clean target (p99 <= 1.5 x p50).
const slowFactor = 1.5

// readIterations reads the "worker: " lines of every worker log in dir (ina-demo's
// worker-j<job>-r<rank>.log) and merges them per iteration. The first iteration, which also
// waits for the peers to start, is left out.
func readIterations(dir string) ([]iteration, error) {
	logs, err := filepath.Glob(filepath.Join(dir, "worker-*.log"))
	if err != nil {
		return nil, err
	}
	if len(logs) == 0 {
		return nil, fmt.Errorf("no worker logs in %s", dir)
	}
	var its []iteration
	for _, l := range logs {
		f, err := os.Open(l)
		if err != nil {
			return nil, err
		}
		its, err = addIterations(its, f)
		f.Close()
		if err != nil {
			return nil, fmt.Errorf("%s: %w", l, err)
		}
	}
	for i, it := range its {
		if it.ranks != len(logs) {
			return nil, fmt.Errorf("iteration %d: %d of %d workers reported it", i, it.ranks, len(logs))
		}
	}
	if len(its) < 2 {
		return nil, fmt.Errorf("%d iterations in %s: want at least 2", len(its), dir)
	}
	return its[1:], nil
}

// addIterations merges one worker's iteration lines into its.
func addIterations(its []iteration, r io.Reader) ([]iteration, error) {
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		if !strings.HasPrefix(sc.Text(), "worker: ") {
			continue
		}
		m := agentlog.Fields(sc.Text())
		i, err := strconv.Atoi(m["iter"])
		if err != nil || i < 0 {
			return nil, fmt.Errorf("bad iter in %q", sc.Text())
		}
		ms, err := strconv.ParseFloat(m["allreduce_ms"], 64)
		if err != nil {
			return nil, fmt.Errorf("bad allreduce_ms in %q", sc.Text())
		}
		n := func(k string) int { v, _ := strconv.Atoi(m[k]); return v }
		for len(its) <= i {
			its = append(its, iteration{})
		}
		it := &its[i]
		it.ms = max(it.ms, ms)
		it.timer += n("timer_resent")
		it.fast += n("fast_resent")
		it.cuts += n("window_cuts")
		it.backoffs += n("timer_backoffs")
		it.ranks++
	}
	return its, sc.Err()
}

func summarizeTail(its []iteration) tailStats {
	ms := make([]float64, len(its))
	for i, it := range its {
		ms[i] = it.ms
	}
	slices.Sort(ms)
	s := tailStats{n: len(ms), p50: quantile(ms, 0.5), p90: quantile(ms, 0.9), p99: quantile(ms, 0.99), max: ms[len(ms)-1]}
	for _, it := range its {
		if it.ms <= slowFactor*s.p50 {
			continue
		}
		s.slow++
		if it.timer > 0 {
			s.slowTimer++
		}
		if it.fast > 0 {
			s.slowFast++
		}
		if it.cuts > 0 {
			s.slowCut++
		}
		if it.timer+it.fast+it.cuts == 0 {
			s.slowNone++
		}
	}
	return s
}

// resultFrames reads the worker summaries in dir and returns the result frames a worker received
// per chunk it sent, over all workers: each chunk's result once, plus the results it dropped
// (ignored_results: answers to another worker's RESEND, duplicates, late answers). A PS that answers
// a RESEND to the group sends every worker the answer; answered to the one worker (FLAG_UNICAST),
// only that worker takes it.
func resultFrames(dir string) (float64, error) {
	logs, err := filepath.Glob(filepath.Join(dir, "worker-*.log"))
	if err != nil {
		return 0, err
	}
	var sent, ignored, workers int
	for _, l := range logs {
		b, err := os.ReadFile(l)
		if err != nil {
			return 0, err
		}
		for _, line := range strings.Split(string(b), "\n") {
			if !strings.HasPrefix(line, "worker-summary: ") {
				continue
			}
			m := agentlog.Fields(line)
			n, err1 := strconv.Atoi(m["sent"])
			ig, err2 := strconv.Atoi(m["ignored_results"])
			if err1 != nil || err2 != nil {
				return 0, fmt.Errorf("%s: a worker summary without sent= and ignored_results=", l)
			}
			sent, ignored, workers = sent+n, ignored+ig, workers+1
		}
	}
	if workers != len(logs) || sent == 0 {
		return 0, fmt.Errorf("%d worker summaries with %d chunks sent in %d logs of %s", workers, sent, len(logs), dir)
	}
	return float64(sent+ignored) / float64(sent), nil
}

// tail prints the summary of the training loop whose logs are in dir, as one "tail:" line.
func tail(dir string) error {
	its, err := readIterations(dir)
	if err != nil {
		return err
	}
	frames, err := resultFrames(dir)
	if err != nil {
		return err
	}
	s := summarizeTail(its)
	fmt.Printf("tail: iterations=%d p50_ms=%.2f p90_ms=%.2f p99_ms=%.2f max_ms=%.2f slow=%d slow_timer=%d slow_fast=%d slow_cut=%d slow_none=%d result_frames=%.4f\n",
		s.n, s.p50, s.p90, s.p99, s.max, s.slow, s.slowTimer, s.slowFast, s.slowCut, s.slowNone, frames)
	return nil
}
