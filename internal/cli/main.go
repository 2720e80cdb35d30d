package cli

import (
	"errors"
	"fmt"
	"os"
)

// ErrUsage is returned by a command that has printed its usage already: Main exits 2, as the
// flag package does.
var ErrUsage = errors.New("usage")

// Main runs the subcommand that os.Args[1] names with the arguments after it, and exits: 0 on
// success or help, 2 on a usage error (usage printed), 1 with "<name>: <error>" on failure.
func Main(name, usage string, cmds map[string]func(args []string) error) {
	if len(os.Args) < 2 {
		fmt.Fprint(os.Stderr, usage)
		os.Exit(2)
	}
	run, ok := cmds[os.Args[1]]
	switch {
	case ok:
	case os.Args[1] == "help" || os.Args[1] == "-h" || os.Args[1] == "--help":
		fmt.Print(usage)
		return
	default:
		fmt.Fprintf(os.Stderr, "%s: unknown command %q\n\n%s", name, os.Args[1], usage)
		os.Exit(2)
	}
	err := run(os.Args[2:])
	if errors.Is(err, ErrUsage) {
		os.Exit(2)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", name, err)
		os.Exit(1)
	}
}
