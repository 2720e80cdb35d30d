// SPDX-License-Identifier: Apache-2.0
// ina_settings: a keyless table whose default action holds the switch-wide settings.
#ifndef INA_TNA_SETTINGS_P4
#define INA_TNA_SETTINGS_P4

control Settings(in headers_t hdr, inout ig_meta_t md) {
    // slot < active_slots iff active_slots - slot, saturated at 0, is not 0. A gateway cannot
    // compare two fields, so the action stores the difference; computing it here, in stage 0,
    // keeps it off the decision pass's dependency chain.
    action ina_set_settings(bit<1> preempt, bit<1> release_on_result, bit<19> ecn_threshold,
                            bit<16> active_slots) {
        md.preempt = preempt;
        md.release_on_result = release_on_result;
        md.ecn_threshold = ecn_threshold;
        md.slot_room = active_slots |-| hdr.ina.slot;
    }

    table ina_settings {
        actions = { ina_set_settings; }
        default_action = ina_set_settings(1, 0, 0x7FFFF, NUM_SLOTS);
        size = 1;
    }

    apply {
        ina_settings.apply();
    }
}

#endif // INA_TNA_SETTINGS_P4
