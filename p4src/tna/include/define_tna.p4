// SPDX-License-Identifier: Apache-2.0
// TNA-only constants: how the K values are spread over stateful ALUs and passes.
#ifndef INA_TNA_DEFINE_P4
#define INA_TNA_DEFINE_P4

// A Tofino 1 pipe has 12 MAU stages with 4 stateful ALUs each, shared by ingress and egress, and a
// RegisterAction returns one 32-bit value. 64 values cannot be summed in one pass: the program
// sums TNA_LANES values per pass in TNA_LANES value registers, each holding TNA_PASSES lanes per
// slot (index = pass * NUM_SLOTS + slot), and recirculates TNA_PASSES - 1 times.
#define TNA_LANES  16
#define TNA_PASSES 4   // NUM_VALUES / TNA_LANES

// Recirculation port of pipe 0 on Tofino 1 (68; 196/324/452 on pipes 1-3). A front-panel port in
// loopback works too; set it with -DINA_RECIRC_PORT=<port>.
#ifndef INA_RECIRC_PORT
#define INA_RECIRC_PORT 68
#endif

// slot_tag layout: bit 24 busy, bits 23..16 owner priority, bits 15..0 owner job.
#define SLOT_BUSY 0x1000000

// What the value lanes do with a slot on every pass.
#define LANE_NONE  0
#define LANE_STORE 1 // claim: slot := packet
#define LANE_ADD   2 // aggregate: slot |+|= packet, packet := sum
#define LANE_SWAP  3 // takeover / preemption: slot := packet, packet := old slot
#define LANE_LOAD  4 // flush of a slot that already has this worker: packet := slot

// What slot_state does on a pass.
#define STATE_NONE 0
#define STATE_SET  1 // take / takeover: state := this packet's bits
#define STATE_OR   2 // state |= this packet's bits

// INA_FOREACH_LANE(M) expands M(i) for i = 0 .. TNA_LANES-1.
#define INA_FOREACH_LANE(M) \
    M(0) M(1) M(2)  M(3)  M(4)  M(5)  M(6)  M(7) \
    M(8) M(9) M(10) M(11) M(12) M(13) M(14) M(15)

// INA_LANES_OF_PASS_p(M) expands M(lane, value index) for the TNA_LANES values summed on pass p.
#define INA_LANES_OF_PASS_0(M) \
    M(0, 0) M(1, 1) M(2, 2) M(3, 3) M(4, 4) M(5, 5) M(6, 6) M(7, 7) \
    M(8, 8) M(9, 9) M(10, 10) M(11, 11) M(12, 12) M(13, 13) M(14, 14) M(15, 15)
#define INA_LANES_OF_PASS_1(M) \
    M(0, 16) M(1, 17) M(2, 18) M(3, 19) M(4, 20) M(5, 21) M(6, 22) M(7, 23) \
    M(8, 24) M(9, 25) M(10, 26) M(11, 27) M(12, 28) M(13, 29) M(14, 30) M(15, 31)
#define INA_LANES_OF_PASS_2(M) \
    M(0, 32) M(1, 33) M(2, 34) M(3, 35) M(4, 36) M(5, 37) M(6, 38) M(7, 39) \
    M(8, 40) M(9, 41) M(10, 42) M(11, 43) M(12, 44) M(13, 45) M(14, 46) M(15, 47)
#define INA_LANES_OF_PASS_3(M) \
    M(0, 48) M(1, 49) M(2, 50) M(3, 51) M(4, 52) M(5, 53) M(6, 54) M(7, 55) \
    M(8, 56) M(9, 57) M(10, 58) M(11, 59) M(12, 60) M(13, 61) M(14, 62) M(15, 63)

// job * NUM_EVENTS without a multiplier (Tofino's ALUs shift and add): 22 = 16 + 4 + 2.
#define JOB_EVENT_BASE(job) \
    (((bit<32>)(job) << 4) + ((bit<32>)(job) << 2) + ((bit<32>)(job) << 1))

#define INT32_MAX 0x7FFFFFFF
#define INT32_MIN 0x80000000

// The shifts above and the lane tables (INA_LANES_OF_PASS_*) are written for these numbers.
#if NUM_SLOTS != 1024
#error "TNA: lane_index uses pass << 10; update it with NUM_SLOTS"
#endif
#if NUM_EVENTS != 22
#error "TNA: JOB_EVENT_BASE is written for NUM_EVENTS = 22"
#endif
#if NUM_VALUES != TNA_LANES * TNA_PASSES || TNA_LANES != 16
#error "TNA: INA_FOREACH_LANE / INA_LANES_OF_PASS_* are written for 16 lanes x 4 passes"
#endif

#endif // INA_TNA_DEFINE_P4
