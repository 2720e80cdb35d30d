package main

import (
	"cmp"
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	cp "github.com/inapack/inapack/controlplane"
	"github.com/inapack/inapack/controlplane/api"
	"github.com/inapack/inapack/internal/cli"
)

func clientFlags(fs *flag.FlagSet) cli.ClientFlags {
	return cli.AddClientFlags(fs, "controller", cp.DefaultAPIAddress, "INACTL_TOKEN")
}

func reqCtx() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), 2*time.Minute)
}

// statusColumns are the events shown by `inactl status`; drops are summed into one column.
var statusColumns = []string{"claimed", "aggregated", "completed", "duplicate", "flushed", "collision", "preempted", "evicted", "stale", "bypass", "result"}

func cmdStatus(args []string) error {
	fs := flag.NewFlagSet("status", flag.ExitOnError)
	cf := clientFlags(fs)
	fresh := fs.Bool("fresh", false, "read every switch's counters and slots now instead of showing the last poll's")
	fs.Parse(args)
	c, err := cli.NewClient(cf.Config(), api.NewClient)
	if err != nil {
		return err
	}
	ctx, cancel := reqCtx()
	defer cancel()
	status := c.Status
	if *fresh {
		status = c.FreshStatus
	}
	sts, err := status(ctx)
	if err != nil {
		return err
	}
	printStatus(os.Stdout, sts)
	return nil
}

func printStatus(out io.Writer, sts []cp.SwitchStatus) {
	for _, s := range sts {
		state := "connected"
		if !s.Connected {
			state = "DOWN"
		}
		fmt.Fprintf(out, "switch %s (%s, %s): %s, pipeline pushes %d, reconciles %d, last diff: %s\n",
			s.Name, s.Address, s.Target, state, s.PipelinePushes, s.Reconciles, cmp.Or(s.LastDiff, "-"))
		if s.LastError != "" {
			fmt.Fprintf(out, "  last error: %s\n", s.LastError)
		}
		snap := s.Snapshot
		if snap == nil {
			fmt.Fprintln(out, "  no counters read yet")
			continue
		}
		tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', tabwriter.AlignRight)
		fmt.Fprint(tw, "  job\t")
		for _, col := range statusColumns {
			fmt.Fprintf(tw, "%s\t", col)
		}
		fmt.Fprint(tw, "drops\tslots\t\n")
		jobs := make([]int, 0, len(snap.JobEvents))
		for j := range snap.JobEvents {
			jobs = append(jobs, j)
		}
		sort.Ints(jobs)
		row := func(label string, ev map[string]uint64, slots string) {
			fmt.Fprintf(tw, "  %s\t", label)
			for _, col := range statusColumns {
				fmt.Fprintf(tw, "%d\t", ev[col])
			}
			var drops uint64
			for k, v := range ev {
				if strings.HasPrefix(k, "drop_") {
					drops += v
				}
			}
			fmt.Fprintf(tw, "%d\t%s\t\n", drops, slots)
		}
		for _, j := range jobs {
			slots := "?" // unknown only when the registers could not be read; an empty map is omitted from the JSON
			if snap.SlotsErr == "" {
				slots = strconv.Itoa(snap.SlotsHeld[j])
			}
			row(strconv.Itoa(j), snap.JobEvents[j], slots)
		}
		row("all", snap.Events, "")
		tw.Flush()
		if snap.SlotsErr != "" {
			fmt.Fprintf(out, "  slots not read: %s\n", snap.SlotsErr)
		}
		fmt.Fprintf(out, "  read at %s\n", snap.Time.Format(time.RFC3339))
	}
}

const jobUsage = `usage:
  inactl job add --file J       add a job (YAML or JSON, as an entry of the config's jobs list)
  inactl job remove ID          remove a job: its entries and the slots it holds
  inactl job priority ID CAP    change a job's priority cap
  inactl job ina ID on|off      enable or disable INA for a job
Each takes --api ADDR, --token-file F and --ca F (inactl job SUBCOMMAND -h lists them).
`

func cmdJob(args []string) error {
	if len(args) == 0 {
		fmt.Fprint(os.Stderr, jobUsage)
		return cli.ErrUsage
	}
	switch args[0] {
	case "-h", "-help", "--help", "help":
		fmt.Print(jobUsage)
		return nil
	case "add", "remove", "priority", "ina":
	default:
		fmt.Fprintf(os.Stderr, "inactl job: unknown subcommand %q\n\n%s", args[0], jobUsage)
		return cli.ErrUsage
	}
	fs := flag.NewFlagSet("job "+args[0], flag.ExitOnError)
	cf := clientFlags(fs)
	file := fs.String("file", "", "job spec (YAML or JSON), for add")
	fs.Parse(args[1:])
	c, err := cli.NewClient(cf.Config(), api.NewClient)
	if err != nil {
		return err
	}
	ctx, cancel := reqCtx()
	defer cancel()
	rest := fs.Args()
	id := func() (int, error) {
		if len(rest) < 1 {
			return 0, fmt.Errorf("job %s: missing job id", args[0])
		}
		n, err := strconv.Atoi(rest[0])
		if err != nil {
			return 0, fmt.Errorf("job %s: job id %q is not a number", args[0], rest[0])
		}
		return n, nil
	}
	switch args[0] {
	case "add":
		if *file == "" {
			return fmt.Errorf("job add: --file is required")
		}
		b, err := os.ReadFile(*file)
		if err != nil {
			return err
		}
		j, err := cp.ParseJob(b, *file)
		if err != nil {
			return err
		}
		if err := c.AddJob(ctx, *j); err != nil {
			return err
		}
		fmt.Printf("job %d added\n", j.ID)
	case "remove":
		n, err := id()
		if err != nil {
			return err
		}
		if err := c.RemoveJob(ctx, n); err != nil {
			return err
		}
		fmt.Printf("job %d removed\n", n)
	case "priority":
		n, err := id()
		if err != nil {
			return err
		}
		if len(rest) != 2 {
			return fmt.Errorf("job priority: want ID CAP")
		}
		pcap, err := strconv.Atoi(rest[1])
		if err != nil {
			return fmt.Errorf("job priority: cap %q: %w", rest[1], err)
		}
		if err := c.UpdateJob(ctx, n, api.JobPatch{PriorityCap: &pcap}); err != nil {
			return err
		}
		fmt.Printf("job %d priority cap %d\n", n, pcap)
	case "ina":
		n, err := id()
		if err != nil {
			return err
		}
		if len(rest) != 2 || (rest[1] != "on" && rest[1] != "off") {
			return fmt.Errorf("job ina: want ID on|off")
		}
		on := rest[1] == "on"
		if err := c.UpdateJob(ctx, n, api.JobPatch{INA: &on}); err != nil {
			return err
		}
		fmt.Printf("job %d INA %s\n", n, rest[1])
	}
	return nil
}
