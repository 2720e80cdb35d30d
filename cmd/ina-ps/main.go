// Command ina-ps is the INA parameter server on AF_PACKET interfaces, serving one or more jobs.
//
//	ina-ps -iface ps-eth0 -ip 10.0.0.100 -job 1:2:16 -job 2:2:16
//
// With -iface given twice it serves both and sends every result out of both: a PS on a machine
// that also runs one of its job's workers reaches that worker over a private link.
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"net"
	"os"
	"os/signal"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/inapack/inapack/p4src/wire"
	"github.com/inapack/inapack/ps"
	"github.com/inapack/inapack/transport"
)

type jobFlags []ps.JobConfig

func (j *jobFlags) String() string { return fmt.Sprint(*j) }

// Set parses JOB:WORKERS[:WINDOW].
func (j *jobFlags) Set(s string) error {
	parts := strings.Split(s, ":")
	if len(parts) < 2 || len(parts) > 3 {
		return fmt.Errorf("want JOB:WORKERS[:WINDOW], got %q", s)
	}
	var n [3]int
	for i, p := range parts {
		v, err := strconv.Atoi(p)
		if err != nil {
			return fmt.Errorf("%q: %w", s, err)
		}
		n[i] = v
	}
	if n[0] < 1 || n[0] >= wire.MaxJobs {
		return fmt.Errorf("job id %d outside 1..%d", n[0], wire.MaxJobs-1)
	}
	*j = append(*j, ps.JobConfig{Job: uint16(n[0]), Workers: n[1], Window: n[2]})
	return nil
}

// ifaceFlags collects -iface.
type ifaceFlags []string

func (f *ifaceFlags) String() string { return strings.Join(*f, ",") }

// Set takes one interface or a comma-separated list (a pod's INAPACK_IFACE may name two).
func (f *ifaceFlags) Set(s string) error {
	for _, name := range strings.Split(s, ",") {
		if name == "" {
			return fmt.Errorf("empty interface name in %q", s)
		}
		*f = append(*f, name)
	}
	return nil
}

func main() {
	var jobs jobFlags
	var ifaces ifaceFlags
	flag.Var(&ifaces, "iface", "interface to serve on (AF_PACKET; needs root); repeatable or comma-separated: results go out of every one")
	ipStr := flag.String("ip", "10.0.0.100", "the PS's IPv4 address (source of results)")
	macStr := flag.String("mac", "", "the PS's MAC (default: the first interface's)")
	every := flag.Duration("stats", 0, "print counters this often (0: only at exit)")
	flag.Var(&jobs, "job", "JOB:WORKERS[:WINDOW] to serve (repeatable)")
	checked := flag.Bool("integrity", true, "check the integrity lane of every sum and exact-path copy (the jobs' workers must agree; docs/protocol.md)")
	threads := flag.Int("threads", 0, "threads, each with its own socket per interface serving the chunks whose seq is its index mod the threads (ps.Group); 0: transport.AutoLanes, one per four of the cores GOMAXPROCS allows, so one below eight; a power of two")
	flag.Parse()
	log.SetFlags(0)
	log.SetPrefix("ina-ps: ")
	if len(ifaces) == 0 || len(jobs) == 0 {
		log.Fatal("need -iface and at least one -job (see -h)")
	}
	ip := net.ParseIP(*ipStr).To4()
	if ip == nil {
		log.Fatalf("-ip %q: want an IPv4 address", *ipStr)
	}
	n := *threads
	if n == 0 {
		n = transport.AutoLanes(runtime.GOMAXPROCS(0))
	}
	if n < 1 || n > ps.MaxThreads || n&(n-1) != 0 {
		log.Fatalf("-threads %d: want a power of two up to %d", n, ps.MaxThreads)
	}
	// Only the served jobs' INA frames, and of those only the thread's own chunks: other agents on
	// this host, and the other threads, do not wake this one.
	var served []uint16
	for i, j := range jobs {
		served = append(served, j.Job)
		jobs[i].NoIntegrity = !*checked
	}
	var packets []*transport.Packet
	lanes := make([]transport.Transport, n)
	for k := range n {
		var members []transport.Transport
		for _, name := range ifaces {
			p, err := transport.OpenPacketConfig(name, transport.PacketConfig{Jobs: served, Lane: k, Lanes: n, Blocking: transport.WaitBlocking(n * len(ifaces))})
			if err != nil {
				log.Fatal(err)
			}
			packets = append(packets, p)
			members = append(members, p)
		}
		lanes[k] = members[0]
		if len(members) > 1 {
			lanes[k] = transport.NewFanout(members...)
		}
		defer lanes[k].Close()
	}
	mac := packets[0].MAC()
	var err error
	if *macStr != "" {
		if mac, err = net.ParseMAC(*macStr); err != nil {
			log.Fatalf("-mac: %v", err)
		}
	}
	srv, err := ps.NewGroup(ps.Config{MAC: mac, IP: ip, Jobs: jobs}, n)
	if err != nil {
		log.Fatal(err)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if *every > 0 {
		go func() {
			tk := time.NewTicker(*every)
			defer tk.Stop()
			for {
				select {
				case <-ctx.Done():
					return
				case <-tk.C:
					report(srv, jobs, packets)
				}
			}
		}()
	}
	log.Printf("serving %d job(s) on %s (mac %s, ip %s, %d thread(s))", len(jobs), ifaces.String(), mac, *ipStr, n)
	if err := srv.Serve(ctx, lanes); err != nil {
		log.Print(err)
		report(srv, jobs, packets)
		os.Exit(1)
	}
	report(srv, jobs, packets)
}

// report prints one machine-readable line per job and one for frames of no job.
func report(srv *ps.Group, jobs jobFlags, ts []*transport.Packet) {
	ids := make([]int, 0, len(jobs))
	for _, j := range jobs {
		ids = append(ids, int(j.Job))
	}
	sort.Ints(ids)
	for _, id := range ids {
		c, _ := srv.Counters(uint16(id))
		pending, kept := srv.Pending(uint16(id))
		fmt.Printf("ps: job=%d pending=%d kept=%d %v\n", id, pending, kept, c)
	}
	g := srv.Global()
	var drops uint64
	for _, t := range ts {
		drops += t.Stats().KernelDrops
	}
	fmt.Printf("ps: frames=%d not_ina=%d malformed=%d not_data=%d unknown_job=%d send_errors=%d kernel_drops=%d\n",
		g.Frames, g.NotINA, g.Malformed, g.NotData, g.UnknownJob, g.SendErrors, drops)
}
