//go:build !purego

#include "textflag.h"

// The AVX2 weighted sums of integrity.go: 8 values per step, multiplied by their weights with
// VPMULDQ (the low 32 bits of each 64-bit lane, signed, into int64 products), the even lanes into
// Y1 and the odd ones (shifted down) into Y2. The weights are integrityWeightsAVX2, read in place.
// Each product is below 2^57 in magnitude and each accumulator lane sums 8 of them: no overflow.

// bswap32 reverses the bytes of each 32-bit word.
DATA bswap32<>+0x00(SB)/8, $0x0405060700010203
DATA bswap32<>+0x08(SB)/8, $0x0c0d0e0f08090a0b
GLOBL bswap32<>(SB), RODATA|NOPTR, $16

#define WEIGH(k) \
	VPMULDQ (64*k)(DX), Y0, Y3; \
	VPADDQ  Y3, Y1, Y1; \
	VPSRLQ  $32, Y0, Y0; \
	VPMULDQ (64*k+32)(DX), Y0, Y3; \
	VPADDQ  Y3, Y2, Y2

#define WEIGH_BE(k) \
	VMOVDQU (32*k)(SI), Y0; \
	VPSHUFB Y15, Y0, Y0; \
	WEIGH(k)

#define WEIGH_NATIVE(k) \
	VMOVDQU (32*k)(SI), Y0; \
	WEIGH(k)

// SUM leaves the total of Y1's and Y2's lanes in AX.
#define SUM \
	VPADDQ       Y2, Y1, Y1; \
	VEXTRACTI128 $1, Y1, X2; \
	VPADDQ       X2, X1, X1; \
	VPSHUFD      $0x4e, X1, X2; \
	VPADDQ       X2, X1, X1; \
	VMOVQ        X1, AX

// func weightedAVX2(b *[4 * NumValues]byte) int64
TEXT ·weightedAVX2(SB), NOSPLIT, $0-16
	MOVQ           b+0(FP), SI
	LEAQ           ·integrityWeightsAVX2(SB), DX
	VBROADCASTI128 bswap32<>(SB), Y15
	VPXOR          Y1, Y1, Y1
	VPXOR          Y2, Y2, Y2
	WEIGH_BE(0); WEIGH_BE(1); WEIGH_BE(2); WEIGH_BE(3); WEIGH_BE(4); WEIGH_BE(5); WEIGH_BE(6); WEIGH_BE(7)
	SUM
	MOVQ           AX, ret+8(FP)
	VZEROUPPER
	RET

// func weightedValuesAVX2(v *[NumValues]int32) int64
TEXT ·weightedValuesAVX2(SB), NOSPLIT, $0-16
	MOVQ  v+0(FP), SI
	LEAQ  ·integrityWeightsAVX2(SB), DX
	VPXOR Y1, Y1, Y1
	VPXOR Y2, Y2, Y2
	WEIGH_NATIVE(0); WEIGH_NATIVE(1); WEIGH_NATIVE(2); WEIGH_NATIVE(3); WEIGH_NATIVE(4); WEIGH_NATIVE(5); WEIGH_NATIVE(6); WEIGH_NATIVE(7)
	SUM
	MOVQ  AX, ret+8(FP)
	VZEROUPPER
	RET
