//go:build !purego

#include "textflag.h"

// The AVX2 merge kernels (lanes_amd64.go): 4 values per step, byte-swapped in 128-bit registers and
// sign-extended to 4 int64 lanes of a 256-bit one; every offset is a constant, nothing comes from
// the packet but values.

// bswap32 reverses the bytes of each 32-bit word.
DATA bswap32<>+0x00(SB)/8, $0x0405060700010203
DATA bswap32<>+0x08(SB)/8, $0x0c0d0e0f08090a0b
GLOBL bswap32<>(SB), RODATA|NOPTR, $16

// pack32 takes the low 32 bits of each 64-bit word of a 128-bit lane, big-endian, into its low 8 bytes.
DATA pack32<>+0x00(SB)/8, $0x08090a0b00010203
DATA pack32<>+0x08(SB)/8, $0x8080808080808080
GLOBL pack32<>(SB), RODATA|NOPTR, $16

// inside is the range a fixed-point sum may take and still be told from a clipped one.
DATA inside<>+0x00(SB)/8, $-2147483647
DATA inside<>+0x08(SB)/8, $2147483646
GLOBL inside<>(SB), RODATA|NOPTR, $16

#define ASSIGN(k) \
	VMOVDQU   (16*k)(SI), X0; \
	VPSHUFB   X15, X0, X0; \
	VPMOVSXDQ X0, Y0; \
	VMOVDQU   Y0, (32*k)(DI)

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

// func assignValuesAVX2(s *sums, v *packed)
TEXT ·assignValuesAVX2(SB), NOSPLIT, $0-16
	MOVQ    s+0(FP), DI
	MOVQ    v+8(FP), SI
	VMOVDQU bswap32<>(SB), X15
	ASSIGN(0); ASSIGN(1); ASSIGN(2); ASSIGN(3); ASSIGN(4); ASSIGN(5); ASSIGN(6); ASSIGN(7)
	ASSIGN(8); ASSIGN(9); ASSIGN(10); ASSIGN(11); ASSIGN(12); ASSIGN(13); ASSIGN(14); ASSIGN(15)
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
