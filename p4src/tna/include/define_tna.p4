// SPDX-License-Identifier: Apache-2.0
// TNA-only constants: how the K values are spread over stateful ALUs and passes.
#ifndef INA_TNA_DEFINE_P4
#define INA_TNA_DEFINE_P4

// A Tofino 1 pipe has 12 MAU stages with 4 stateful ALUs each, shared by ingress and egress, and a
// RegisterAction returns one 32-bit value, so the 64 values cannot be summed in one pass. A packet
// that touches a slot takes 1 + TNA_PASSES passes (+1 to free the slot): the decision pass
// (slot_tag, slot_seq, slot_bitmap, slot_count), then lane passes 0 .. TNA_PASSES-1, each summing
// TNA_LANES values in TNA_LANES lane registers (lane i of lane pass p holds value
// p * TNA_LANES + i at index p * NUM_SLOTS + slot). p4src/README.md has what this uses.
// 16 lanes x 4 passes by default; -DTNA_LANES=32 builds 32 lanes x 2 passes.
#ifndef TNA_LANES
#define TNA_LANES 16
#endif
#if TNA_LANES == 32
#define TNA_PASSES 2
#define TNA_LAST_VALUES hdr.b1 // the header of the last values a first pass parses
#else
#define TNA_PASSES 4
#define TNA_LAST_VALUES hdr.b3
#endif

// Recirculation port of pipe 0: 68 on Tofino 1 (196/324/452 on pipes 1-3), 6 on Tofino 2. A
// front-panel port in loopback works too; set it with -DINA_RECIRC_PORT=<port>.
#ifndef INA_RECIRC_PORT
#if __TARGET_TOFINO__ == 2
#define INA_RECIRC_PORT 6
#else
#define INA_RECIRC_PORT 68
#endif
#endif

// slot_tag layout: bits 31..24 owner priority, bits 23..16 0x11 while held (the INA version and
// type of the data packet that took it), bits 15..0 owner job; 0 when free. Priority on top makes
// "free or held by a lower priority" one comparison; marker and job side by side make "held by
// this job" one 23-bit comparison. tag_acquire returns the old tag with TAG_TOOK (bit 23, which
// no held tag has) set when it wrote this packet's tag.
#define TAG_TOOK  0x800000

// Stages of the decision's stateful ALUs (one each; the lanes fill the stateful ALUs left over).
// Stage 0 looks up ina_settings, ina_ps and ina_job beside validation; stages 1-2 gate on them and
// build the tag and bound; then slot_tag, slot_seq, slot_bitmap, slot_count in turn. The event is
// known after stage 6, its per-job counter index in 7, counted in 8.
#define TNA_STAGE_TAG    3
#define TNA_STAGE_SEQ    4
#define TNA_STAGE_BITMAP 5
#define TNA_STAGE_COUNT  6

// Stages of the lanes' stateful ALUs (4 per stage): left to itself, bf-p4c fills the decision's
// stages with lanes first and then cannot place the decision's registers. The lanes take what the
// decision leaves from stage 1 on (the lane index is hashed in 0); the clip check of the last
// lanes follows them, and slot_state that.
#if TNA_LANES == 32
#define TNA_LANE_STAGES(M) \
    M(0, 1) M(1, 1) M(2, 1) M(3, 1) M(4, 2) M(5, 2) M(6, 2) M(7, 2) M(8, 3) M(9, 3) M(10, 3) \
    M(11, 4) M(12, 4) M(13, 4) M(14, 5) M(15, 5) M(16, 5) M(17, 6) M(18, 6) M(19, 6) \
    M(20, 7) M(21, 7) M(22, 7) M(23, 7) M(24, 8) M(25, 8) M(26, 8) M(27, 8) \
    M(28, 9) M(29, 9) M(30, 9) M(31, 9)
#else
#define TNA_LANE_STAGES(M) \
    M(0, 1) M(1, 1) M(2, 1) M(3, 1) M(4, 2) M(5, 2) M(6, 2) M(7, 2) M(8, 3) M(9, 3) M(10, 3) \
    M(11, 4) M(12, 4) M(13, 4) M(14, 5) M(15, 5)
#endif

// The slot a packet touches, as a register index (JobLookup and SlotDecision checked slot < 1024
// before any register is touched).
#define SLOT_INDEX ((bit<32>)hdr.ina.slot[9:0])

// What a pass asks of slot_tag (SlotTag).
#define TAG_NONE    0
#define TAG_TAKE    1 // a member's packet: take the slot if it is free or preemptible
#define TAG_LOOK    2 // a RESEND, or an ATP result: read it
#define TAG_RELEASE 3 // the release pass of a completed, flushed or ATP-released chunk: free it

// What the value lanes do with a slot on a lane pass.
#define LANE_NONE 0
#define LANE_SWAP 1 // claim, takeover, preemption: slot := packet, packet := old slot
#define LANE_ADD  2 // aggregate: slot |+|= packet, packet := sum
#define LANE_LOAD 3 // flush of a slot that already has this worker: packet := slot

// slot_state on TNA keeps its bits where the INA flags have them, so the flags a sum leaves with
// are the register's bits under a mask (docs/protocol.md's 0x1 ECN, 0x2 OVERFLOW, 0x4 COMPLETE are
// the v1model encoding).
#define TNA_STATE_OVERFLOW 0x20 // FLAG_OVERFLOW
#define TNA_STATE_ECN      0x40 // FLAG_ECN
#define TNA_STATE_COMPLETE 0x80 // ATP: held complete until the result
#define TNA_STATE_FLAGS    0x60

// What slot_state does on the last lane pass.
#define STATE_NONE 0
#define STATE_SET  1 // claim, takeover, preemption: state := bits; the old state leaves with the partial
#define STATE_OR   2 // state |= bits (ECN, COMPLETE, OVERFLOW of a clipped add)

// INA_FOREACH_LANE(M) expands M(i) for i = 0 .. TNA_LANES-1; the clip check takes 16 lanes per
// table (64 bytes, a stage's ternary crossbar), INA_FOREACH_CLIP_<n> the n-th 16.
#define INA_FOREACH_CLIP_0(M) \
    M(0) M(1) M(2) M(3) M(4) M(5) M(6) M(7) M(8) M(9) M(10) M(11) M(12) M(13) M(14) M(15)
#define INA_FOREACH_CLIP_1(M) \
    M(16) M(17) M(18) M(19) M(20) M(21) M(22) M(23) M(24) M(25) M(26) M(27) M(28) M(29) M(30) M(31)
#if TNA_LANES == 32
#define INA_FOREACH_LANE(M) INA_FOREACH_CLIP_0(M) INA_FOREACH_CLIP_1(M)
#else
#define INA_FOREACH_LANE(M) INA_FOREACH_CLIP_0(M)
#endif

// ina_job_events on TNA: a job's NUM_EVENTS cells start at job << 5 (counters.p4).
#define TNA_EVENT_STRIDE    32
#define TNA_JOB_EVENTS_SIZE 32768 // MAX_JOBS * TNA_EVENT_STRIDE

#define INT32_MAX 0x7FFFFFFF
#define INT32_MIN 0x80000000

// The lane macros and the value headers are written for these numbers.
#if NUM_SLOTS != 1024
#error "TNA: the lane index is (pass, slot[9:0]); update it with NUM_SLOTS"
#endif
#if NUM_EVENTS > TNA_EVENT_STRIDE || MAX_JOBS != 1024
#error "TNA: the per-job counter index is job[9:0] << 5 | event[4:0]"
#endif
#if NUM_VALUES != TNA_LANES * TNA_PASSES || (TNA_LANES != 16 && TNA_LANES != 32)
#error "TNA: the lane macros and ina_lanes_t are written for 16 lanes x 4 passes or 32 x 2"
#endif

#endif // INA_TNA_DEFINE_P4
