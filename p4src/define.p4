// SPDX-License-Identifier: Apache-2.0
// Constants shared by the v1model and TNA builds. p4src/wire/constants.go mirrors them and
// p4src/constants_test.go fails if the two disagree. Behaviour: docs/protocol.md.
#ifndef INA_DEFINE_P4
#define INA_DEFINE_P4

#define INA_VERSION  1
#define INA_UDP_PORT 47000
#define NUM_VALUES   64
#define MAX_JOBS     1024
#define MAX_WORKERS  32
// Workers of one job behind one switch port, told apart by the INA header's member index: the
// top 4 bits of the flags word.
#define MAX_MEMBERS  16
#define INA_MEMBER(ina) ina.flags[15:12]
#define NUM_EVENTS   22

#define ETHERTYPE_IPV4 0x0800
#define IP_PROTO_UDP   17

// Fixed lengths of a well-formed INA frame (K = NUM_VALUES).
#define INA_HEADER_LEN     16
#define INA_UDP_LEN        280
#define INA_IPV4_TOTAL_LEN 300
#define INA_FRAME_LEN      314

// INA packet types.
#define INA_TYPE_DATA   1
#define INA_TYPE_RESULT 2

// INA header flags.
#define FLAG_RESEND    0x0001
#define FLAG_COLLISION 0x0002
#define FLAG_PREEMPTED 0x0004
#define FLAG_FLUSHED   0x0008
#define FLAG_BYPASS    0x0010
#define FLAG_OVERFLOW  0x0020
#define FLAG_ECN       0x0040
#define FLAG_STALE     0x0080
#define FLAG_FLOAT     0x0100
// Set by the PS on results only (a packet failed the integrity check); the switch passes it.
#define FLAG_CORRUPT   0x0200
// Set by the PS on a result only: deliver it to the one worker whose bit is the bitmap (a RESEND's
// answer), through ina_unicast; a switch without the entry multicasts it as any result. Not in
// WORKER_FLAGS: a worker cannot set it.
#define FLAG_UNICAST   0x0400
// Flags a worker may set; the switch clears the others on a worker's data packet.
#define WORKER_FLAGS   0x0151

// slot_state bits.
#define SLOT_STATE_ECN      0x1
#define SLOT_STATE_OVERFLOW 0x2
#define SLOT_STATE_COMPLETE 0x4

// Indices of the ina_events / ina_job_events counters.
#define EVENT_CLAIMED          0
#define EVENT_AGGREGATED       1
#define EVENT_COMPLETED        2
#define EVENT_DUPLICATE        3
#define EVENT_FLUSHED          4
#define EVENT_COLLISION        5
#define EVENT_PREEMPTED        6
#define EVENT_EVICTED          7
#define EVENT_STALE            8
#define EVENT_RESEND_FORWARDED 9
#define EVENT_BYPASS           10
#define EVENT_RESULT           11
#define EVENT_TRANSIT          12
#define EVENT_DROP_UNKNOWN_JOB 13
#define EVENT_DROP_BAD_PORT    14
#define EVENT_DROP_SLOT_RANGE  15
#define EVENT_DROP_MALFORMED   16
#define EVENT_DROP_VERSION     17
#define EVENT_OVERFLOW         18
#define EVENT_ECN_MARKED       19
#define EVENT_IPV4_FORWARDED   20
#define EVENT_IPV4_DROPPED     21
// Not a counter index: "nothing to count" (a non-IPv4 frame, the second pass of an evicted partial).
#define EVENT_NONE             0xFF

// Role of the ina_job entry that matched (job id, ingress port).
#define ROLE_NONE    0
#define ROLE_WORKER  1
#define ROLE_RESULT  2
#define ROLE_TRANSIT 3

// What ingress does with an INA packet once the slot logic has run.
#define OUT_DROP     0 // dropped or consumed by a slot
#define OUT_PS       1 // to the PS of the job the packet now carries (ina_ps)
#define OUT_EVICT    2 // carries another job's partial: second pass looks up that job's PS
#define OUT_MCAST    3 // result: replicated to the job's group
#define OUT_UNICAST  4 // result with FLAG_UNICAST and an ina_unicast hit: to that one port

// INA_FOREACH_VALUE(M) expands M(i) for i = 0 .. NUM_VALUES-1: P4 has no loops, and the 64
// values live in 64 fields and 64 registers.
#define INA_FOREACH_VALUE(M) \
    M(0)  M(1)  M(2)  M(3)  M(4)  M(5)  M(6)  M(7)  M(8)  M(9)  M(10) M(11) M(12) M(13) M(14) M(15) \
    M(16) M(17) M(18) M(19) M(20) M(21) M(22) M(23) M(24) M(25) M(26) M(27) M(28) M(29) M(30) M(31) \
    M(32) M(33) M(34) M(35) M(36) M(37) M(38) M(39) M(40) M(41) M(42) M(43) M(44) M(45) M(46) M(47) \
    M(48) M(49) M(50) M(51) M(52) M(53) M(54) M(55) M(56) M(57) M(58) M(59) M(60) M(61) M(62) M(63)

typedef bit<48> mac_addr_t;
typedef bit<32> ipv4_addr_t;
typedef bit<16> job_id_t;
typedef bit<16> slot_index_t;
typedef bit<32> seq_t;
typedef bit<32> bitmap_t;
typedef int<32> value_t;

#endif // INA_DEFINE_P4
