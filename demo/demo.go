// Package demo runs the INA system end to end on one machine (cmd/ina-demo is its command line,
// Main): network namespaces for a PS and the workers of several jobs, a switch (the reference
// switch, or BMv2), the controller, and the agents; it shows progress, prints a per-job summary and "demo: OK" only if every all-reduce
// result was exact. It needs root. scripts/demo.sh (make demo) runs it.
//
// Output, for people and for CI: "progress:" lines every 2 s, then one "demo-summary:" line and one
// "demo-job:" line per job of key=value fields: iterations and exact results over all workers,
// goodput (mean over workers, first iteration left out), the switch's per-job counters read
// through the controller (switch_completed: chunks aggregated in the switch; switch_collision:
// fallbacks to the PS; switch_preempted / switch_evicted: slots taken from / lost to another job;
// stale, flushed, bypass), the PS's result count, the corrupted packets the integrity check caught
// at the PS (ps_corrupt) and at the workers (worker_corrupt, results), the RESENDs the PS answered to
// one worker alone (ps_resend_unicast), the results workers received and dropped as not theirs or
// late (worker_ignored), and status=ok; finally "demo: OK", or
// "demo: FAIL: <reason>" and exit status 1. Everything it created (namespaces, links, processes)
// is recorded in -dir/owned.json and removed on exit, on failure and on SIGINT/SIGTERM; after a
// SIGKILL the next run with the same -dir removes it. Nothing else is touched: names carry a
// prefix unique to the run, so concurrent runs on one host do not meet. Logs stay in -dir.
package demo

import (
	"context"
	"flag"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"syscall"
	"time"

	"github.com/inapack/inapack/internal/ipdrop"
	"github.com/inapack/inapack/internal/procs"
	"github.com/inapack/inapack/p4src/wire"
)

const (
	psPort = 1
	psIP   = "10.0.0.100"
)

type demo struct {
	bin, dir, prefix, target          string
	jobs                              jobList
	size, iters, window, activeSlots  int
	ecnThreshold                      int
	preempt, integrity, trace         bool
	compute, timeout                  time.Duration
	loss, dup, reorder, corrupt, rate float64
	seed                              uint64
	bmv2JSON, p4info, dtype           string
	killJob, killAfter                int
	exec                              execFlags
	perHost                           int // workers of a job per emulated host (members behind its port)
	threads                           int // ina-ps and ina-worker -threads (0: their default)

	grpcAddr, apiAddr, metricsAddr, thriftAddr string
	ps                                         host
	topo                                       topology
	procs                                      demoProcs
	owned                                      *ledger
}

// Main runs the ina-demo command line in os.Args.
func Main() {
	d := &demo{}
	flag.StringVar(&d.bin, "bin", "build/bin", "directory of refswitch, inactl, ina-ps, ina-worker")
	flag.StringVar(&d.dir, "dir", "build/demo", "directory for the generated config and the logs")
	flag.StringVar(&d.prefix, "prefix", "", "prefix of the namespaces and links created (default ina and 4 random hex digits)")
	flag.StringVar(&d.target, "switch", "auto", "ref, bmv2, or auto (bmv2 when simple_switch_grpc and its JSON exist)")
	flag.StringVar(&d.bmv2JSON, "bmv2-json", "", "BMv2 JSON of the P4 program (default build/p4/ina.json or build/ina.json)")
	flag.Var(&d.jobs, "job", "JOB:WORKERS:PRIORITY[:on|off] (repeatable; default 1:2:1 and 2:2:5); the last field switches INA")
	d.exec = execFlags{}
	flag.Var(d.exec, "exec", "JOB=COMMAND: the job's workers run COMMAND (sh -c) instead of ina-worker, configured by\n"+
		"RANK, WORLD_SIZE and INAPACK_* environment variables (repeatable; see exec.go)")
	flag.StringVar(&d.dtype, "dtype", "int32", "tensor type: int32 or float32 (fixed point, scale 1024)")
	flag.IntVar(&d.size, "size", 16384, "tensor size in values (64 per packet)")
	flag.IntVar(&d.iters, "iters", 20, "iterations per worker")
	flag.IntVar(&d.perHost, "per-host", 1, "workers of a job per emulated host, behind its one switch port (members 0..N-1)")
	flag.DurationVar(&d.compute, "compute", 5*time.Millisecond, "simulated compute per iteration")
	flag.IntVar(&d.activeSlots, "active-slots", 16, "the switch's active_slots (small, so jobs contend)")
	flag.IntVar(&d.window, "window", 12, "slots per job (overlapping when the jobs' windows exceed slots/jobs)")
	flag.IntVar(&d.ecnThreshold, "ecn-threshold", wire.MaxECNThreshold, "egress queue depth that marks ECN (the default never marks)")
	flag.BoolVar(&d.preempt, "preempt", true, "higher-priority jobs preempt slots (ESA)")
	flag.BoolVar(&d.integrity, "integrity", true, "the agents carry and check the integrity lane (docs/protocol.md, \"Integrity\")")
	flag.IntVar(&d.threads, "threads", 0, "ina-ps and ina-worker -threads: each agent on this many threads (0: their default)")
	flag.BoolVar(&d.trace, "trace", false, "ina-worker -trace: every backoff of a worker's retransmission timer in its log")
	flag.Float64Var(&d.loss, "loss", 0, "reference switch: egress loss probability")
	flag.Float64Var(&d.dup, "dup", 0, "reference switch: egress duplication probability")
	flag.Float64Var(&d.reorder, "reorder", 0, "reference switch: egress reordering probability")
	flag.Float64Var(&d.corrupt, "corrupt", 0, "reference switch: probability per INA frame of one value bit flipped after the checksums")
	flag.Float64Var(&d.rate, "rate", 0, "reference switch: every port's egress rate in Mbit/s (0: unlimited)")
	flag.Uint64Var(&d.seed, "seed", 1, "seed of the tensors and of the switch's faults")
	flag.DurationVar(&d.timeout, "timeout", 100*time.Second, "give up after this long")
	kill := flag.String("kill", "", "JOB:ITER: kill the job's last worker after ITER iterations; its peers must fail with a\n"+
		"clear timeout, the controller then removes the job and its slots must be free, the other jobs must finish exact")
	trace := flag.Bool("v", false, "echo every child's output")
	flag.Parse()
	d.procs.trace = *trace
	if *kill != "" {
		if _, err := fmt.Sscanf(*kill, "%d:%d", &d.killJob, &d.killAfter); err != nil || d.killAfter < 0 {
			fmt.Printf("demo: -kill %q: want JOB:ITER\n", *kill)
			os.Exit(2)
		}
	}
	if len(d.jobs) == 0 {
		_ = d.jobs.Set("1:2:1")
		_ = d.jobs.Set("2:2:5")
	}
	if d.prefix == "" {
		d.prefix = runPrefix()
	}
	if err := d.check(); err != nil {
		fmt.Printf("demo: %v\n", err)
		os.Exit(2)
	}
	if !isRoot() {
		fmt.Println("demo: needs root: it creates network namespaces and veth pairs and opens AF_PACKET sockets (run: sudo make demo)")
		os.Exit(1)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	ctx, cancel := context.WithTimeout(ctx, d.timeout)
	err := d.run(ctx)
	cancel()
	stop()
	d.procs.stopAll()
	if d.owned != nil {
		d.owned.cleanup()
	}
	if err != nil {
		fmt.Printf("demo: FAIL: %v (logs in %s)\n", err, d.dir)
		os.Exit(1)
	}
}

// check rejects flag values the run cannot use, before anything is started.
func (d *demo) check() error {
	if err := validPrefix(d.prefix); err != nil {
		return err
	}
	switch {
	case d.activeSlots < 1 || d.activeSlots > wire.NumSlots:
		return fmt.Errorf("-active-slots %d: want 1..%d", d.activeSlots, wire.NumSlots)
	case d.window < 1 || d.size < 1 || d.iters < 1:
		return fmt.Errorf("-window %d, -size %d, -iters %d: each must be at least 1", d.window, d.size, d.iters)
	case d.dtype != "int32" && d.dtype != "float32":
		return fmt.Errorf("-dtype %q: want int32 or float32", d.dtype)
	case d.ecnThreshold < 0 || d.ecnThreshold > wire.MaxECNThreshold:
		return fmt.Errorf("-ecn-threshold %d: want 0..%d", d.ecnThreshold, wire.MaxECNThreshold)
	case d.perHost < 1 || d.perHost > wire.MaxMembers:
		return fmt.Errorf("-per-host %d: want 1..%d", d.perHost, wire.MaxMembers)
	case d.execJob() != 0:
		return fmt.Errorf("-exec %d=...: no such -job", d.execJob())
	case d.killJob != 0 && !slices.ContainsFunc(d.jobs, func(j *jobSpec) bool { return j.id == d.killJob && j.workers > 1 }):
		return fmt.Errorf("-kill: no job %d with two or more workers", d.killJob)
	}
	return nil
}

func (d *demo) run(ctx context.Context) error {
	if err := d.chooseSwitch(); err != nil {
		return err
	}
	for _, b := range []string{"ina-ps", "ina-worker", "inactl"} {
		if _, err := os.Stat(filepath.Join(d.bin, b)); err != nil {
			return fmt.Errorf("%s not built (run make build): %w", b, err)
		}
	}
	if err := os.MkdirAll(d.dir, 0o755); err != nil {
		return err
	}
	var err error
	if d.owned, err = claimLedger(d.dir, func(s string) { fmt.Println("demo:", s) }); err != nil {
		return err
	}
	d.procs.dir, d.procs.owned, d.topo.owned = d.dir, d.owned, d.owned
	if err := d.layout(); err != nil {
		return err
	}
	fmt.Printf("demo: switch=%s jobs=%d active_slots=%d size=%d iters=%d prefix=%s logs=%s\n", d.target, len(d.jobs), d.activeSlots, d.size, d.iters, d.prefix, d.dir)
	if err := d.makeHosts(); err != nil {
		return err
	}
	if err := d.startSwitch(ctx); err != nil {
		return err
	}
	if err := d.startController(ctx); err != nil {
		return err
	}
	return d.runJobs(ctx)
}

// chooseSwitch resolves -switch auto and checks what the choice needs.
func (d *demo) chooseSwitch() error {
	if d.bmv2JSON == "" {
		for _, p := range []string{"build/p4/ina.json", "build/ina.json"} {
			if _, err := os.Stat(p); err == nil {
				d.bmv2JSON = p
				break
			}
		}
	}
	_, ssErr := exec.LookPath("simple_switch_grpc")
	switch d.target {
	case "auto":
		d.target = "ref"
		if ssErr == nil && d.bmv2JSON != "" {
			d.target = "bmv2"
		} else if ssErr == nil {
			fmt.Println("demo: simple_switch_grpc is installed but the program is not compiled (make p4): using the reference switch")
		}
	case "bmv2":
		if ssErr != nil {
			return fmt.Errorf("-switch bmv2 (SWITCH=bmv2) but simple_switch_grpc is not on PATH")
		}
		if d.bmv2JSON == "" {
			return fmt.Errorf("-switch bmv2 (SWITCH=bmv2) but no compiled program (build/p4/ina.json): run make p4, or give -bmv2-json")
		}
	case "ref":
	default:
		return fmt.Errorf("-switch %q: want ref, bmv2 or auto", d.target)
	}
	if d.target == "ref" {
		if _, err := os.Stat(filepath.Join(d.bin, "refswitch")); err != nil {
			return fmt.Errorf("refswitch not built (run make build): %w", err)
		}
	} else {
		if d.loss+d.dup+d.reorder+d.corrupt+d.rate > 0 {
			return fmt.Errorf("-loss, -dup, -reorder, -corrupt and -rate need the reference switch")
		}
		for _, p := range []string{filepath.Join(filepath.Dir(d.bmv2JSON), "ina.p4info.txtpb"), filepath.Join(filepath.Dir(d.bmv2JSON), "ina.p4info.txt")} {
			if _, err := os.Stat(p); err == nil {
				d.p4info = p
			}
		}
	}
	return nil
}

// layout assigns switch ports, slots and addresses.
func (d *demo) layout() error {
	port := psPort + 1
	seen := map[int]bool{}
	for i, j := range d.jobs {
		if seen[j.id] {
			return fmt.Errorf("job %d given twice", j.id)
		}
		seen[j.id] = true
		j.window = min(d.window, d.activeSlots)
		if len(d.jobs) > 1 {
			j.slotBase = i * (d.activeSlots - j.window) / (len(d.jobs) - 1)
		}
		for r := range j.workers {
			j.ports = append(j.ports, port)
			j.members = append(j.members, r%d.perHost)
			if r%d.perHost == d.perHost-1 || r == j.workers-1 {
				port++
			}
		}
	}
	if port > 512 {
		return fmt.Errorf("%d hosts: more than the switch's 511 ports", port-1)
	}
	var err error
	for _, a := range []*string{&d.grpcAddr, &d.apiAddr, &d.metricsAddr, &d.thriftAddr} {
		if *a, err = procs.FreeAddr(); err != nil {
			return err
		}
	}
	return nil
}

func hostMAC(port int) string { return fmt.Sprintf("02:00:00:00:%02x:%02x", port>>8, port&0xff) }

func (d *demo) makeHosts() error {
	d.topo.prefix = d.prefix
	var err error
	if d.ps, err = d.topo.addHost("ps", psPort, hostMAC(psPort), psIP); err != nil {
		return err
	}
	for _, j := range d.jobs {
		for r, p := range j.ports {
			if j.members[r] > 0 { // another worker on the host of rank r-1
				j.hosts = append(j.hosts, j.hosts[r-1])
				continue
			}
			h, err := d.topo.addHost(fmt.Sprintf("j%dw%d", j.id, r), p, hostMAC(p), fmt.Sprintf("10.0.%d.%d", j.id%256, r+1))
			if err != nil {
				return err
			}
			j.hosts = append(j.hosts, h)
		}
	}
	names := make([]string, len(d.topo.hosts))
	for i, h := range d.topo.hosts {
		names[i] = h.name
	}
	if err := ipdrop.Namespaces(names, "eth0"); err != nil {
		fmt.Fprintf(os.Stderr, "ina-demo: %v: the hosts' kernels will take in every frame they receive (slower, not wrong)\n", err)
	}
	return nil
}

func (d *demo) startSwitch(ctx context.Context) error {
	var argv []string
	if d.target == "ref" {
		argv = []string{filepath.Join(d.bin, "refswitch"), "--grpc-addr", d.grpcAddr, "--device-id", "1",
			"--seed", fmt.Sprint(d.seed)}
		if d.loss > 0 {
			argv = append(argv, "--loss", fmt.Sprint(d.loss))
		}
		if d.dup > 0 {
			argv = append(argv, "--dup", fmt.Sprint(d.dup))
		}
		if d.reorder > 0 {
			argv = append(argv, "--reorder", fmt.Sprint(d.reorder))
		}
		if d.corrupt > 0 {
			argv = append(argv, "--corrupt", fmt.Sprint(d.corrupt))
		}
	} else {
		_, tport, _ := net.SplitHostPort(d.thriftAddr)
		argv = []string{"simple_switch_grpc", "--no-p4", "--device-id", "1", "--thrift-port", tport}
	}
	for _, h := range d.topo.hosts {
		argv = append(argv, "-i", fmt.Sprintf("%d@%s", h.port, h.link))
		if d.rate > 0 {
			argv = append(argv, "--rate", fmt.Sprintf("%d@%g", h.port, d.rate))
		}
	}
	if d.target == "bmv2" {
		argv = append(argv, "--", "--grpc-server-addr", d.grpcAddr, "--cpu-port", "255")
	}
	p, err := d.procs.start("switch", nil, argv...)
	if err != nil {
		return err
	}
	return procs.WaitTCP(ctx, d.grpcAddr, p)
}
