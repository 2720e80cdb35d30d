package model

import (
	"fmt"

	"github.com/inapack/inapack/p4src/wire"
)

// Validate reports settings a switch would reject: values that do not fit their P4 fields.
func (st Settings) Validate() error {
	if st.ECNThreshold > wire.MaxECNThreshold {
		return fmt.Errorf("%w: ecn_threshold %d > %d", ErrInvalid, st.ECNThreshold, wire.MaxECNThreshold)
	}
	if st.ActiveSlots > wire.NumSlots {
		return fmt.Errorf("%w: active_slots %d > %d", ErrInvalid, st.ActiveSlots, wire.NumSlots)
	}
	return nil
}
