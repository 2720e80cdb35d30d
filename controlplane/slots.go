package controlplane

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os/exec"
	"strconv"
	"strings"

	"github.com/antoninbas/p4runtime-go-client/pkg/util/conversion"
	p4v1 "github.com/p4lang/p4runtime/go/p4/v1"
)

// SlotAccess reads and resets the per-slot registers of a switch.
type SlotAccess interface {
	// ReadSlots returns slot_job and slot_count for every slot.
	ReadSlots(ctx context.Context) (jobs, counts []uint64, err error)
	// ResetSlots writes 0 to every slot register at the given indexes, freeing those slots.
	ResetSlots(ctx context.Context, idx []int) error
}

// ErrNoSlotAccess is returned where a switch's registers cannot be reached.
var ErrNoSlotAccess = errors.New("no register access")

// p4rtSlots reads and writes registers with P4Runtime RegisterEntry (reference switch, Stratum).
type p4rtSlots struct {
	conn   *Conn
	schema *Schema
	batch  int
}

func (p *p4rtSlots) readRegister(ctx context.Context, name string) ([]uint64, error) {
	r := p.schema.Register(name)
	if r == nil {
		return nil, fmt.Errorf("P4Info has no register %q", name)
	}
	ents, err := p.conn.Read(ctx, &p4v1.Entity{Entity: &p4v1.Entity_RegisterEntry{RegisterEntry: &p4v1.RegisterEntry{RegisterId: r.GetPreamble().GetId()}}})
	if err != nil {
		return nil, fmt.Errorf("register %s: %w", name, err)
	}
	out := make([]uint64, r.GetSize())
	for _, e := range ents {
		re := e.GetRegisterEntry()
		i := re.GetIndex().GetIndex()
		if i < 0 || i >= int64(len(out)) {
			return nil, fmt.Errorf("register %s: index %d out of 0..%d", name, i, len(out)-1)
		}
		b := conversion.ToCanonicalBytestring(re.GetData().GetBitstring())
		if len(b) > 8 {
			return nil, fmt.Errorf("register %s[%d]: %d-byte value", name, i, len(b))
		}
		var v uint64
		for _, x := range b {
			v = v<<8 | uint64(x)
		}
		out[i] = v
	}
	return out, nil
}

// readSlots reads the owner register (slot_job, or TNA's slot_tag) and slot_count with read, the
// register reader of one access method. A free TNA slot (tag 0) reads as count 0, as on v1model.
func readSlots(ctx context.Context, s *Schema, read func(context.Context, string) ([]uint64, error)) (jobs, counts []uint64, err error) {
	owner := s.SlotOwner()
	if owner == "" {
		return nil, nil, fmt.Errorf("%w: P4Info has no slot owner register", ErrNoSlotAccess)
	}
	if jobs, err = read(ctx, owner); err != nil {
		return nil, nil, err
	}
	if counts, err = read(ctx, RegisterSlotCount); err != nil {
		return nil, nil, err
	}
	if owner == RegisterSlotTag {
		for i, tag := range jobs {
			jobs[i] = tag & 0xFFFF
			if tag == 0 && i < len(counts) {
				counts[i] = 0
			}
		}
	}
	return jobs, counts, nil
}

func (p *p4rtSlots) ReadSlots(ctx context.Context) ([]uint64, []uint64, error) {
	return readSlots(ctx, p.schema, p.readRegister)
}

func (p *p4rtSlots) ResetSlots(ctx context.Context, idx []int) error {
	var ups []*p4v1.Update
	for _, name := range slotRegisters {
		r := p.schema.Register(name)
		if r == nil {
			continue
		}
		for _, i := range idx {
			ups = append(ups, &p4v1.Update{Type: p4v1.Update_MODIFY, Entity: &p4v1.Entity{Entity: &p4v1.Entity_RegisterEntry{RegisterEntry: &p4v1.RegisterEntry{
				RegisterId: r.GetPreamble().GetId(), Index: &p4v1.Index{Index: int64(i)},
				Data: &p4v1.P4Data{Data: &p4v1.P4Data_Bitstring{Bitstring: canon(0)}}}}}})
		}
	}
	return p.conn.Write(ctx, ups, p.batch)
}

// cliSlots drives BMv2's simple_switch_CLI over Thrift, because BMv2's P4Runtime server does not
// implement registers (PI issue 376).
type cliSlots struct {
	cli    string // path of simple_switch_CLI
	host   string
	port   string
	schema *Schema
}

func newCLISlots(thrift string, s *Schema) (*cliSlots, error) {
	cli, err := exec.LookPath("simple_switch_CLI")
	if err != nil {
		return nil, fmt.Errorf("%w: BMv2 registers need simple_switch_CLI on PATH: %v", ErrNoSlotAccess, err)
	}
	host, port, err := net.SplitHostPort(thrift)
	if err != nil {
		return nil, fmt.Errorf("thrift address %q: %w", thrift, err)
	}
	return &cliSlots{cli: cli, host: host, port: port, schema: s}, nil
}

// fullName is the register's name in the BMv2 JSON, which is its P4Info name.
func (c *cliSlots) fullName(short string) (string, error) {
	r := c.schema.Register(short)
	if r == nil {
		return "", fmt.Errorf("P4Info has no register %q", short)
	}
	return r.GetPreamble().GetName(), nil
}

func (c *cliSlots) run(ctx context.Context, script string) (string, error) {
	cmd := exec.CommandContext(ctx, c.cli, "--thrift-ip", c.host, "--thrift-port", c.port)
	cmd.Stdin = strings.NewReader(script)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("simple_switch_CLI --thrift-port %s: %v: %s", c.port, err, strings.TrimSpace(errb.String()))
	}
	if strings.Contains(out.String(), "Error:") || strings.Contains(out.String(), "Invalid") {
		return "", fmt.Errorf("simple_switch_CLI --thrift-port %s: %s", c.port, firstLineWith(out.String(), "Error", "Invalid"))
	}
	return out.String(), nil
}

func (c *cliSlots) readRegister(ctx context.Context, short string) ([]uint64, error) {
	name, err := c.fullName(short)
	if err != nil {
		return nil, err
	}
	out, err := c.run(ctx, "register_read "+name+"\n")
	if err != nil {
		return nil, err
	}
	return parseRegisterRead(out, name)
}

// parseRegisterRead parses "<name>= v0, v1, ..." as printed by the BMv2 CLI.
func parseRegisterRead(out, name string) ([]uint64, error) {
	sc := bufio.NewScanner(strings.NewReader(out))
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for sc.Scan() {
		line := sc.Text()
		i := strings.Index(line, name+"=")
		if i < 0 {
			continue
		}
		fields := strings.Split(line[i+len(name)+1:], ",")
		vals := make([]uint64, 0, len(fields))
		for _, f := range fields {
			v, err := strconv.ParseUint(strings.TrimSpace(f), 10, 64)
			if err != nil {
				return nil, fmt.Errorf("register %s: bad value %q", name, f)
			}
			vals = append(vals, v)
		}
		return vals, nil
	}
	return nil, fmt.Errorf("register %s: no values in CLI output", name)
}

func (c *cliSlots) ReadSlots(ctx context.Context) ([]uint64, []uint64, error) {
	return readSlots(ctx, c.schema, c.readRegister)
}

func (c *cliSlots) ResetSlots(ctx context.Context, idx []int) error {
	var b strings.Builder
	for _, short := range slotRegisters {
		name, err := c.fullName(short)
		if err != nil {
			continue
		}
		for _, i := range idx {
			fmt.Fprintf(&b, "register_write %s %d 0\n", name, i)
		}
	}
	_, err := c.run(ctx, b.String())
	return err
}

func firstLineWith(s string, subs ...string) string {
	for _, l := range strings.Split(s, "\n") {
		for _, sub := range subs {
			if strings.Contains(l, sub) {
				return strings.TrimSpace(l)
			}
		}
	}
	return ""
}

// SlotsOf returns the indexes of slots whose slot_job is job and that are held (count != 0).
func SlotsOf(jobs, counts []uint64, job int) []int {
	var out []int
	for i, j := range jobs {
		if j == uint64(job) && (i >= len(counts) || counts[i] != 0) {
			out = append(out, i)
		}
	}
	return out
}
