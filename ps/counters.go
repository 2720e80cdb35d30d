package ps

import (
	"fmt"
	"reflect"
	"strings"
)

// Counters count every outcome of a packet at the PS. Each data packet counts exactly one kind
// (Complete .. Resend) and one disposition (Merged .. FloatMismatch; OVERFLOW data counts Merged).
type Counters struct {
	// Kinds of data packets received (by switch flag; Complete = full bitmap in one packet).
	Complete, Partial, Collision, Preempted, Stale, Flushed, Bypass, Resend uint64
	// Dispositions.
	Merged          uint64 // bitmap disjoint from what was held: added
	Replaced        uint64 // bitmap a strict superset of what was held: replaces it
	Overlap         uint64 // bitmap overlaps otherwise: ignored (its workers resend)
	Late            uint64 // chunk already complete, not a RESEND: dropped
	TooOld          uint64 // chunk older than the kept horizon: dropped
	ResendAnswered  uint64 // RESEND for a completed (or overflowed) chunk: result sent again
	ResendUnicast   uint64 // of ResendAnswered: one worker's RESEND of a completed chunk, answered to it alone (FLAG_UNICAST)
	OverflowIgnored uint64 // fixed-point data for a chunk on the overflow path: dropped
	BadBitmap       uint64 // bitmap empty or with bits outside the job: dropped
	PendingFull     uint64 // too many incomplete chunks for the job: dropped
	FloatMismatch   uint64 // BYPASS data mixing float and int contributions: dropped
	Corrupt         uint64 // BYPASS data that failed the integrity check: dropped (its sender resends)
	// Results.
	Results         uint64 // results emitted for completed chunks (first time)
	OverflowResults uint64 // OVERFLOW results asking workers to resend with BYPASS
	CorruptResults  uint64 // completed sums that failed the integrity check: CORRUPT results asking workers to resend with BYPASS
	BypassResults   uint64 // results summed on the PS path (also counted in Results)
	IntOverflow     uint64 // BYPASS int sums that do not fit in int32 (saturated, flagged)
	ECNResults      uint64 // results carrying ECN
}

// Add adds o to c.
func (c *Counters) Add(o *Counters) {
	cv, ov := reflect.ValueOf(c).Elem(), reflect.ValueOf(o).Elem()
	for i := range cv.NumField() {
		cv.Field(i).SetUint(cv.Field(i).Uint() + ov.Field(i).Uint())
	}
}

// String lists the non-zero counters as name=value in snake_case.
func (c Counters) String() string {
	v := reflect.ValueOf(c)
	var parts []string
	for i := range v.NumField() {
		if n := v.Field(i).Uint(); n != 0 {
			parts = append(parts, fmt.Sprintf("%s=%d", snake(v.Type().Field(i).Name), n))
		}
	}
	return strings.Join(parts, " ")
}

func snake(s string) string {
	var b strings.Builder
	for i, r := range s {
		if r >= 'A' && r <= 'Z' {
			if i > 0 {
				b.WriteByte('_')
			}
			r += 'a' - 'A'
		}
		b.WriteRune(r)
	}
	return b.String()
}

// Global counts what belongs to no job: frames received and results the transport refused.
type Global struct {
	Frames     uint64 // frames received
	NotINA     uint64 // not an INA frame (other traffic on the port): ignored
	Malformed  uint64 // INA port but undecodable
	NotData    uint64 // INA results or unknown types arriving at the PS: ignored
	UnknownJob uint64 // data for a job the PS does not serve
	SendErrors uint64 // results the transport refused (Serve only)
}
