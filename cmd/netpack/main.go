// Command netpack places training jobs with the NetPack policy or a baseline, and benchmarks it.
package main

import (
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"

	"github.com/inapack/inapack/netpack"
)

// subcommand is one verb of the command; files in this directory add theirs with register in init.
type subcommand struct {
	summary string
	run     func(args []string) error
}

var subcommands = map[string]subcommand{}

// register adds a subcommand; args passed to run exclude the subcommand name.
func register(name, summary string, run func(args []string) error) {
	if _, dup := subcommands[name]; dup {
		panic("netpack: subcommand registered twice: " + name)
	}
	subcommands[name] = subcommand{summary, run}
}

func usage() {
	fmt.Fprintln(os.Stderr, "usage: netpack <command> [flags]\n\ncommands:")
	var names []string
	for n := range subcommands {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(os.Stderr, "  %-10s %s\n", n, subcommands[n].summary)
	}
	fmt.Fprintln(os.Stderr, "\nrun 'netpack <command> -h' for its flags")
}

func main() {
	if len(os.Args) < 2 || os.Args[1] == "-h" || os.Args[1] == "--help" || os.Args[1] == "help" {
		usage()
		os.Exit(2)
	}
	sc, ok := subcommands[os.Args[1]]
	if !ok {
		fmt.Fprintf(os.Stderr, "netpack: unknown command %q\n", os.Args[1])
		usage()
		os.Exit(2)
	}
	if err := sc.run(os.Args[2:]); err != nil {
		fmt.Fprintf(os.Stderr, "netpack %s: %v\n", os.Args[1], err)
		os.Exit(1)
	}
}

// loadClusterFlag loads the cluster file at path, or builds a uniform cluster from "RxMxG"
// (racks x machines per rack x GPUs per machine) when path is empty.
func loadClusterFlag(path, uniform string) (*netpack.Cluster, error) {
	if path != "" {
		return netpack.LoadCluster(path)
	}
	parts := strings.Split(uniform, "x")
	if len(parts) != 3 {
		return nil, fmt.Errorf("-uniform %q: want RACKSxMACHINESxGPUS, e.g. 16x8x8", uniform)
	}
	var n [3]int
	for i, p := range parts {
		v, err := strconv.Atoi(p)
		if err != nil || v <= 0 {
			return nil, fmt.Errorf("-uniform %q: %q is not a positive integer", uniform, p)
		}
		n[i] = v
	}
	return netpack.Uniform(netpack.UniformSpec{Racks: n[0], MachinesPerRack: n[1], GPUsPerMachine: n[2]})
}
