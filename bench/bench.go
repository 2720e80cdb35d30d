// Package bench measures this machine for make bench (scripts/bench.sh); cmd/ina-bench is its
// command line, Main:
//
//	ina-bench forward -bin build/bin -bmv2 /opt/p4-perf/bin/simple_switch_grpc -bmv2-json build/ina.json
//	ina-bench path -workers 4 -window 64 -duration 2s
//	ina-bench agents -pairs 3
//	ina-bench tail DIR
//	ina-bench table SAMPLES ROWS
//	ina-bench agree A.md B.md
//
// forward creates veth pairs (named after -prefix), and for 1 port (hairpin) and 4 ports (each
// sending to the next) runs the same closed-loop sender (64-byte IPv4 frames, -window frames in
// flight per host, AF_PACKET rings) through three forwarders in turn: a bare ring forwarder that
// moves frames between the veths and nothing else (this machine's limit), the reference switch
// and BMv2, both programmed over P4Runtime with one ipv4_lpm route per port. It prints one
// "forward:" line per (switch, ports) with the delivered packets per second and the loss, and a
// "SKIP:" line for BMv2 when it or its compiled program is missing.
//
// path is the all-reduce's own path with nothing but the frames moved (path.go): a job's
// workers, the switch and the PS as processes on veths, the same frames and ring operations per
// chunk; it prints "path: workers=N goodput_mbps=X", the goodput per worker that no all-reduce
// on this path can pass.
//
// agents is the agents' CPU per chunk (agents.go): one worker and the PS against the switch
// model in memory, on one thread and on two, and (as root) the worker over AF_PACKET beside the
// bare ring loop on the same path; it prints one "agents:" line of key=value medians.
//
// forward and path need root; everything they create is removed on exit.
//
// tail reads the worker logs ina-demo left in DIR and prints one "tail:" line: the iteration
// all-reduce time (the slowest worker's) p50, p90, p99 and max, and how many slow iterations
// (over 1.5x p50) waited on the retransmission timer, a fast retransmission or a window cut.
//
// table prints make bench's table from "key round value" samples and row specs (table.go).
//
// agree compares two make bench tables (BENCH_OUT files) figure by figure, the value, ratio and
// reference of every row: they agree on a figure when the confidence intervals of its median
// overlap (agree.go).
package bench

import (
	"flag"
	"fmt"
	"maps"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Main runs the ina-bench command line in os.Args.
func Main() {
	if len(os.Args) > 2 && os.Args[1] == "ring" {
		// The bare ring forwarder, run as its own process like the switches it is compared with.
		if err := serveRing(os.Args[2:]); err != nil {
			fmt.Fprintf(os.Stderr, "ina-bench ring: %v\n", err)
			os.Exit(1)
		}
		return
	}
	if len(os.Args) > 1 && strings.HasPrefix(os.Args[1], "path-") {
		// The bare all-reduce path's processes (path.go), run by "ina-bench path".
		if err := pathRole(os.Args[1], os.Args[2:]); err != nil {
			fmt.Fprintf(os.Stderr, "ina-bench %s: %v\n", os.Args[1], err)
			os.Exit(1)
		}
		return
	}
	if len(os.Args) > 1 && os.Args[1] == "path" {
		fs := flag.NewFlagSet("path", flag.ExitOnError)
		var o pathOpts
		fs.IntVar(&o.workers, "workers", 4, "workers (one process and one veth each)")
		fs.IntVar(&o.window, "window", 64, "chunks in flight per worker")
		fs.DurationVar(&o.warmup, "warmup", 500*time.Millisecond, "time before measuring")
		fs.DurationVar(&o.measure, "duration", 3*time.Second, "measuring time")
		fs.StringVar(&o.prefix, "prefix", fmt.Sprintf("ip%d", os.Getpid()%10000), "prefix of the veths created")
		fs.BoolVar(&o.agent, "agent", false, "run the worker agent (float32 all-reduces) in the workers' processes instead of the bare ring loop")
		fs.BoolVar(&o.verbose, "v", false, "with -agent: each agent's chunks, ring waits and flushes on stderr")
		fs.IntVar(&o.threads, "threads", 1, "with -agent: the worker's threads (worker.Group, a socket per thread filtered by seq)")
		_ = fs.Parse(os.Args[2:])
		if os.Geteuid() != 0 {
			fmt.Println("SKIP: ina-bench path needs root (veth pairs, AF_PACKET)")
			return
		}
		if o.workers < 1 || o.workers > 31 || o.window < 1 || o.window > 4096 {
			fmt.Fprintln(os.Stderr, "ina-bench path: -workers 1..31, -window 1..4096")
			os.Exit(2)
		}
		r, err := path(o)
		if err != nil {
			fmt.Fprintf(os.Stderr, "ina-bench path: %v\n", err)
			os.Exit(1)
		}
		fmt.Printf("path: workers=%d goodput_mbps=%.1f cpu_ns_per_chunk=%.0f\n", o.workers, r.goodput, r.cpuPerChunk)
		return
	}
	if len(os.Args) > 1 && os.Args[1] == "agents" {
		fs := flag.NewFlagSet("agents", flag.ExitOnError)
		var o agentsOpts
		fs.IntVar(&o.size, "size", 262144, "float32 values per all-reduce call")
		fs.IntVar(&o.iters, "iters", 32, "timed calls per in-memory run")
		fs.IntVar(&o.window, "window", 64, "the job's slots (chunks in flight)")
		fs.IntVar(&o.pairs, "pairs", 3, "interleaved repetitions (the medians are printed)")
		fs.BoolVar(&o.veth, "veth", os.Geteuid() == 0, "also over AF_PACKET rings on veths (needs root)")
		fs.StringVar(&o.prefix, "prefix", fmt.Sprintf("ia%d", os.Getpid()%10000), "prefix of the veths created")
		fs.DurationVar(&o.warmup, "warmup", 300*time.Millisecond, "calls before measuring (in memory), time before measuring (AF_PACKET)")
		fs.DurationVar(&o.measure, "duration", time.Second, "AF_PACKET: measuring time per run")
		_ = fs.Parse(os.Args[2:])
		if o.veth && os.Geteuid() != 0 {
			fmt.Println("SKIP: ina-bench agents -veth needs root (veth pairs, AF_PACKET)")
			o.veth = false
		}
		if o.size < 1 || o.iters < 1 || o.pairs < 1 || o.window < 2 || o.window%2 != 0 || o.window > 4096 {
			fmt.Fprintln(os.Stderr, "ina-bench agents: -size, -iters, -pairs at least 1; -window even, 2..4096")
			os.Exit(2)
		}
		r, err := agents(o)
		if err != nil {
			fmt.Fprintf(os.Stderr, "ina-bench agents: %v\n", err)
			os.Exit(1)
		}
		keys := slices.Sorted(maps.Keys(r))
		fmt.Print("agents:")
		for _, k := range keys {
			fmt.Printf(" %s=%.4g", k, r[k])
		}
		fmt.Println()
		return
	}
	if len(os.Args) == 4 && os.Args[1] == "table" {
		if err := tableFiles(os.Args[2], os.Args[3]); err != nil {
			fmt.Fprintf(os.Stderr, "ina-bench table: %v\n", err)
			os.Exit(1)
		}
		return
	}
	if len(os.Args) == 4 && os.Args[1] == "agree" {
		// Two make bench tables (BENCH_OUT), figure by figure: do their spreads overlap?
		if err := agreeFiles(os.Args[2], os.Args[3]); err != nil {
			fmt.Fprintf(os.Stderr, "ina-bench agree: %v\n", err)
			os.Exit(1)
		}
		return
	}
	if len(os.Args) == 3 && os.Args[1] == "tail" {
		if err := tail(os.Args[2]); err != nil {
			fmt.Fprintf(os.Stderr, "ina-bench tail: %v\n", err)
			os.Exit(1)
		}
		return
	}
	if len(os.Args) < 2 || os.Args[1] != "forward" {
		fmt.Fprintln(os.Stderr, "usage: ina-bench forward [flags] (see -h)")
		os.Exit(2)
	}
	fs := flag.NewFlagSet("forward", flag.ExitOnError)
	var o forwardOpts
	fs.StringVar(&o.bin, "bin", "build/bin", "directory holding refswitch")
	fs.StringVar(&o.bmv2, "bmv2", "", "simple_switch_grpc to compare (default: /opt/p4-perf/bin's fast build if present, else PATH)")
	fs.StringVar(&o.bmv2JSON, "bmv2-json", "build/ina.json", "BMv2 JSON of the P4 program (its P4Info beside it)")
	fs.StringVar(&o.prefix, "prefix", fmt.Sprintf("ib%d", os.Getpid()%10000), "prefix of the veths created")
	fs.DurationVar(&o.duration, "duration", 0, "measuring time per run (default 3s)")
	fs.IntVar(&o.window, "window", 64, "frames in flight per host")
	fs.StringVar(&o.only, "only", "", "run only this forwarder: ring, ref or bmv2")
	_ = fs.Parse(os.Args[2:])
	if os.Geteuid() != 0 {
		fmt.Println("SKIP: ina-bench forward needs root (veth pairs, AF_PACKET)")
		return
	}
	if err := forward(o); err != nil {
		fmt.Fprintf(os.Stderr, "ina-bench: %v\n", err)
		os.Exit(1)
	}
}

// pathRole runs one process of the bare all-reduce path.
func pathRole(role string, args []string) error {
	switch {
	case role == "path-switch" && len(args) >= 2:
		return pathSwitch(args)
	case role == "path-ps" && len(args) == 1:
		return pathPS(args[0])
	case role == "path-agent" && len(args) == 6:
		threads, err := strconv.Atoi(args[5])
		if err != nil || threads < 1 {
			return fmt.Errorf("bad arguments %q", args)
		}
		rank, err1 := strconv.Atoi(args[1])
		window, err2 := strconv.Atoi(args[2])
		warmup, err3 := time.ParseDuration(args[3])
		measure, err4 := time.ParseDuration(args[4])
		if err1 != nil || err2 != nil || err3 != nil || err4 != nil {
			return fmt.Errorf("bad arguments %q", args)
		}
		return pathAgent(args[0], rank, window, warmup, measure, threads)
	case role == "path-worker" && len(args) == 5:
		rank, err1 := strconv.Atoi(args[1])
		window, err2 := strconv.Atoi(args[2])
		warmup, err3 := time.ParseDuration(args[3])
		measure, err4 := time.ParseDuration(args[4])
		if err1 != nil || err2 != nil || err3 != nil || err4 != nil {
			return fmt.Errorf("bad arguments %q", args)
		}
		return pathWorker(args[0], rank, window, warmup, measure)
	}
	return fmt.Errorf("bad arguments %q", args)
}
