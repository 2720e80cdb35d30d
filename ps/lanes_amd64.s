//go:build !purego

#include "textflag.h"

// The AVX2 merge kernels (lanes.go says what each does): 8 int32 values per step, byte-swapped in
// a 256-bit register, or 4 sign-extended to int64 lanes; every offset is a constant, nothing comes
// from the packet but values.

// bswap32 reverses the bytes of each 32-bit word.
DATA bswap32<>+0x00(SB)/8, $0x0405060700010203
DATA bswap32<>+0x08(SB)/8, $0x0c0d0e0f08090a0b
GLOBL bswap32<>(SB), RODATA|NOPTR, $16

// pack32 takes the low 32 bits of each 64-bit word of a 128-bit lane, big-endian, into its low 8 bytes.
DATA pack32<>+0x00(SB)/8, $0x08090a0b00010203
DATA pack32<>+0x08(SB)/8, $0x8080808080808080
GLOBL pack32<>(SB), RODATA|NOPTR, $16

// bounds32 are the int32 bounds, at which a narrow sum may be a clipped one.
DATA bounds32<>+0x00(SB)/4, $0x7fffffff
DATA bounds32<>+0x04(SB)/4, $0x80000000
GLOBL bounds32<>(SB), RODATA|NOPTR, $8

// inside is the range a fixed-point sum may take and still be told from a clipped one.
DATA inside<>+0x00(SB)/8, $-2147483647
DATA inside<>+0x08(SB)/8, $2147483646
GLOBL inside<>(SB), RODATA|NOPTR, $16

#define ASSIGN32(k) \
	VMOVDQU (32*k)(SI), Y0; \
	VPSHUFB Y15, Y0, Y0; \
	VMOVDQU Y0, (32*k)(DI)

// ADD32 adds 8 values to 8 int32 sums, wrapping, and ORs (a^r)&(x^r), whose sign bit is set where
// a+x overflowed, into Y14.
#define ADD32(k) \
	VMOVDQU (32*k)(SI), Y0; \
	VPSHUFB Y15, Y0, Y0; \
	VMOVDQU (32*k)(DI), Y1; \
	VPADDD  Y0, Y1, Y2; \
	VPXOR   Y1, Y2, Y1; \
	VPXOR   Y0, Y2, Y0; \
	VPAND   Y0, Y1, Y1; \
	VPOR    Y1, Y14, Y14; \
	VMOVDQU Y2, (32*k)(DI)

// ENCODE32 ORs the lanes of 8 int32 sums equal to a bound (Y12, Y13) into Y11 and writes the sums
// big-endian.
#define ENCODE32(k) \
	VMOVDQU  (32*k)(SI), Y0; \
	VPCMPEQD Y12, Y0, Y1; \
	VPCMPEQD Y13, Y0, Y2; \
	VPOR     Y1, Y11, Y11; \
	VPOR     Y2, Y11, Y11; \
	VPSHUFB  Y15, Y0, Y0; \
	VMOVDQU  Y0, (32*k)(DI)

#define ADD(k) \
	VMOVDQU   (16*k)(SI), X0; \
	VPSHUFB   X15, X0, X0; \
	VPMOVSXDQ X0, Y0; \
	VPADDQ    (32*k)(DI), Y0, Y0; \
	VMOVDQU   Y0, (32*k)(DI)

// ENCODE checks 4 sums against [Y13, Y14], ORing the failures into Y12, and writes them big-endian.
#define ENCODE(k) \
	VMOVDQU  (32*k)(SI), Y0; \
	VPCMPGTQ Y14, Y0, Y1; \
	VPCMPGTQ Y0, Y13, Y2; \
	VPOR     Y1, Y12, Y12; \
	VPOR     Y2, Y12, Y12; \
	VPSHUFB  Y15, Y0, Y0; \
	VPERMQ   $0x08, Y0, Y0; \
	VMOVDQU  X0, (16*k)(DI)

// func assignNarrowAVX2(s *narrow, v *packed)
TEXT ·assignNarrowAVX2(SB), NOSPLIT, $0-16
	MOVQ           s+0(FP), DI
	MOVQ           v+8(FP), SI
	VBROADCASTI128 bswap32<>(SB), Y15
	ASSIGN32(0); ASSIGN32(1); ASSIGN32(2); ASSIGN32(3); ASSIGN32(4); ASSIGN32(5); ASSIGN32(6); ASSIGN32(7)
	VZEROUPPER
	RET

// func addNarrowAVX2(s *narrow, v *packed) bool
TEXT ·addNarrowAVX2(SB), NOSPLIT, $0-17
	MOVQ           s+0(FP), DI
	MOVQ           v+8(FP), SI
	VBROADCASTI128 bswap32<>(SB), Y15
	VPXOR          Y14, Y14, Y14
	ADD32(0); ADD32(1); ADD32(2); ADD32(3); ADD32(4); ADD32(5); ADD32(6); ADD32(7)
	VMOVMSKPS      Y14, AX
	TESTL          AX, AX
	SETEQ          ret+16(FP)
	VZEROUPPER
	RET

// func encodeNarrowAVX2(out *packed, s *narrow) bool
TEXT ·encodeNarrowAVX2(SB), NOSPLIT, $0-17
	MOVQ           out+0(FP), DI
	MOVQ           s+8(FP), SI
	VBROADCASTI128 bswap32<>(SB), Y15
	VPBROADCASTD   bounds32<>+0x00(SB), Y12
	VPBROADCASTD   bounds32<>+0x04(SB), Y13
	VPXOR          Y11, Y11, Y11
	ENCODE32(0); ENCODE32(1); ENCODE32(2); ENCODE32(3); ENCODE32(4); ENCODE32(5); ENCODE32(6); ENCODE32(7)
	VPTEST         Y11, Y11
	SETEQ          ret+16(FP)
	VZEROUPPER
	RET

// func addValuesAVX2(s *sums, v *packed)
TEXT ·addValuesAVX2(SB), NOSPLIT, $0-16
	MOVQ    s+0(FP), DI
	MOVQ    v+8(FP), SI
	VMOVDQU bswap32<>(SB), X15
	ADD(0); ADD(1); ADD(2); ADD(3); ADD(4); ADD(5); ADD(6); ADD(7)
	ADD(8); ADD(9); ADD(10); ADD(11); ADD(12); ADD(13); ADD(14); ADD(15)
	VZEROUPPER
	RET

// func encodeSumsAVX2(out *packed, s *sums) bool
TEXT ·encodeSumsAVX2(SB), NOSPLIT, $0-17
	MOVQ           out+0(FP), DI
	MOVQ           s+8(FP), SI
	VBROADCASTI128 pack32<>(SB), Y15
	VPBROADCASTQ   inside<>+0x00(SB), Y13
	VPBROADCASTQ   inside<>+0x08(SB), Y14
	VPXOR          Y12, Y12, Y12
	ENCODE(0); ENCODE(1); ENCODE(2); ENCODE(3); ENCODE(4); ENCODE(5); ENCODE(6); ENCODE(7)
	ENCODE(8); ENCODE(9); ENCODE(10); ENCODE(11); ENCODE(12); ENCODE(13); ENCODE(14); ENCODE(15)
	VPTEST         Y12, Y12
	SETEQ          ret+16(FP)
	VZEROUPPER
	RET
