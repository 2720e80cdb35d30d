// Command ina-bench measures the forwarding rate of the switches on this machine's veths:
//
//	ina-bench forward -bin build/bin -bmv2 /opt/p4-perf/bin/simple_switch_grpc -bmv2-json build/ina.json
//
// It creates veth pairs (named after -prefix), and for 1 port (hairpin) and 4 ports (each
// sending to the next) runs the same closed-loop sender (64-byte IPv4 frames, -window frames in
// flight per host, AF_PACKET rings) through three forwarders in turn: a bare ring forwarder that
// moves frames between the veths and nothing else (this machine's limit), the reference switch
// and BMv2, both programmed over P4Runtime with one ipv4_lpm route per port. It prints one
// "forward:" line per (switch, ports) with the delivered packets per second and the loss, and a
// "SKIP:" line for BMv2 when it or its compiled program is missing. It needs root; everything it
// creates is removed on exit.
package main

import (
	"flag"
	"fmt"
	"os"
)

func main() {
	if len(os.Args) > 2 && os.Args[1] == "ring" {
		// The bare ring forwarder, run as its own process like the switches it is compared with.
		if err := serveRing(os.Args[2:]); err != nil {
			fmt.Fprintf(os.Stderr, "ina-bench ring: %v\n", err)
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
