// Command netpack places training jobs with the NetPack policy or a baseline, and benchmarks it.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
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

func usage(w io.Writer) {
	fmt.Fprintln(w, "usage: netpack <command> [flags]\n\ncommands:")
	var names []string
	for n := range subcommands {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(w, "  %-10s %s\n", n, subcommands[n].summary)
	}
	fmt.Fprintln(w, "\nrun 'netpack <command> -h' for its flags")
}

// errUsage marks a command-line error the flag package has already reported with the usage.
var errUsage = errors.New("usage")

// parseFlags parses a subcommand's flags: -h returns flag.ErrHelp (exit 0), a bad flag errUsage
// (exit 2); the flag package has printed the usage either way. Positional arguments are errors.
func parseFlags(fs *flag.FlagSet, args []string) error {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return errUsage
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(fs.Output(), "unexpected arguments %v\n", fs.Args())
		fs.Usage()
		return errUsage
	}
	return nil
}

func main() { os.Exit(run(os.Args[1:])) }

// run is the command with its exit status: 0 success or help, 1 failure, 2 bad usage.
func run(args []string) int {
	if len(args) < 1 {
		usage(os.Stderr)
		return 2
	}
	if args[0] == "-h" || args[0] == "--help" || args[0] == "-help" || args[0] == "help" {
		usage(os.Stdout)
		return 0
	}
	sc, ok := subcommands[args[0]]
	if !ok {
		fmt.Fprintf(os.Stderr, "netpack: unknown command %q\n", args[0])
		usage(os.Stderr)
		return 2
	}
	switch err := sc.run(args[1:]); {
	case err == nil, errors.Is(err, flag.ErrHelp):
		return 0
	case errors.Is(err, errUsage):
		return 2
	default:
		fmt.Fprintf(os.Stderr, "netpack %s: %v\n", args[0], err)
		return 1
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
