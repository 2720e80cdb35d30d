package model

import (
	"fmt"

	"github.com/inapack/inapack/p4src/wire"
)

// Validate reports settings a switch would reject: values that do not fit their P4 fields. Any
// ActiveSlots fits its 16 bits; one above wire.NumSlots acts as wire.NumSlots (docs/protocol.md).
func (st Settings) Validate() error {
	if st.ECNThreshold > wire.MaxECNThreshold {
		return fmt.Errorf("%w: ecn_threshold %d > %d", ErrInvalid, st.ECNThreshold, wire.MaxECNThreshold)
	}
	return nil
}
