// SPDX-License-Identifier: Apache-2.0
// ina_settings: a keyless table whose default action holds the switch-wide settings.
#ifndef INA_V1MODEL_SETTINGS_P4
#define INA_V1MODEL_SETTINGS_P4

control Settings(inout ina_meta_t meta) {
    action ina_set_settings(bit<1> preempt, bit<1> release_on_result, bit<19> ecn_threshold,
                            bit<16> active_slots) {
        meta.preempt = preempt;
        meta.release_on_result = release_on_result;
        meta.ecn_threshold = ecn_threshold;
        meta.active_slots = active_slots;
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

#endif // INA_V1MODEL_SETTINGS_P4
