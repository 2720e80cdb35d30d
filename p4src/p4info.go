// Package p4src holds the INA P4 program and embeds its P4Info for the controller and the reference switch.
package p4src

import (
	_ "embed"
	"fmt"

	p4configv1 "github.com/p4lang/p4runtime/go/p4/config/v1"
	"google.golang.org/protobuf/encoding/prototext"
)

// P4Info is the text-format P4Info of the v1model build (p4src/ina.p4info.txtpb), as p4c emits it
// with --p4runtime-files.
//
//go:embed ina.p4info.txtpb
var P4Info []byte

// ParseP4Info parses a text-format P4Info. Fields this p4runtime version does not know (a newer
// p4c emits some) are discarded rather than rejected.
func ParseP4Info(text []byte) (*p4configv1.P4Info, error) {
	info := &p4configv1.P4Info{}
	if err := (prototext.UnmarshalOptions{DiscardUnknown: true}).Unmarshal(text, info); err != nil {
		return nil, fmt.Errorf("parse P4Info: %w", err)
	}
	return info, nil
}

// LoadP4Info returns the embedded P4Info, parsed.
func LoadP4Info() (*p4configv1.P4Info, error) { return ParseP4Info(P4Info) }
