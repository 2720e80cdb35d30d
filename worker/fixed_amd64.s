//go:build !purego

#include "textflag.h"

// The fixed-point kernels of fixed.go, 4 values a step in float64 lanes (n is a multiple of 4).
//
// toFixed is round half away from zero of x*scale, clipped to the int32 bounds, NaN to the upper
// one. Here: v = x*scale (exact float64 product, as in Go); t = v + copysign(0.5-2^-54, v); t
// clipped with VMINPD against 2^31-1 (which also turns NaN into it: VMINPD returns its second
// source when either is NaN) and VMAXPD against -2^31; then truncated (VCVTTPD2DQ). Adding the
// largest float64 below one half and truncating is round half away from zero for every |v| below
// 2^52: a fraction of one half or more reaches the next integer, one below it does not, and the
// sum's own rounding cannot cross an integer.

DATA bswap32<>+0x00(SB)/8, $0x0405060700010203
DATA bswap32<>+0x08(SB)/8, $0x0c0d0e0f08090a0b
GLOBL bswap32<>(SB), RODATA|NOPTR, $16

DATA signbit<>+0x00(SB)/8, $0x8000000000000000
GLOBL signbit<>(SB), RODATA|NOPTR, $8

// 0.49999999999999994 (0.5 - 2^-54)
DATA justunderhalf<>+0x00(SB)/8, $0x3fdfffffffffffff
GLOBL justunderhalf<>(SB), RODATA|NOPTR, $8

// 2147483647.0 and -2147483648.0
DATA maxint32<>+0x00(SB)/8, $0x41dfffffffc00000
GLOBL maxint32<>(SB), RODATA|NOPTR, $8
DATA minint32<>+0x00(SB)/8, $0xc1e0000000000000
GLOBL minint32<>(SB), RODATA|NOPTR, $8

// func toFixedBE4(dst *byte, x *float32, n int, scale float64)
TEXT ·toFixedBE4(SB), NOSPLIT, $0-32
	MOVQ         dst+0(FP), DI
	MOVQ         x+8(FP), SI
	MOVQ         n+16(FP), CX
	VBROADCASTSD scale+24(FP), Y15
	VBROADCASTSD signbit<>(SB), Y14
	VBROADCASTSD justunderhalf<>(SB), Y13
	VBROADCASTSD maxint32<>(SB), Y12
	VBROADCASTSD minint32<>(SB), Y11
	VBROADCASTI128 bswap32<>(SB), Y10
	SHRQ         $2, CX
loop:
	VCVTPS2PD    (SI), Y0
	VMULPD       Y15, Y0, Y0
	VANDPD       Y14, Y0, Y1
	VORPD        Y13, Y1, Y1
	VADDPD       Y1, Y0, Y0
	VMINPD       Y12, Y0, Y0
	VMAXPD       Y11, Y0, Y0
	VCVTTPD2DQY  Y0, X0
	VPSHUFB      X10, X0, X0
	VMOVDQU      X0, (DI)
	ADDQ         $16, SI
	ADDQ         $16, DI
	DECQ         CX
	JNZ          loop
	VZEROUPPER
	RET

// func fromFixedBE4Mul(dst *float32, src *byte, n int, inv float64)
TEXT ·fromFixedBE4Mul(SB), NOSPLIT, $0-32
	MOVQ         dst+0(FP), DI
	MOVQ         src+8(FP), SI
	MOVQ         n+16(FP), CX
	VBROADCASTSD inv+24(FP), Y15
	VBROADCASTI128 bswap32<>(SB), Y10
	SHRQ         $2, CX
mloop:
	VMOVDQU      (SI), X0
	VPSHUFB      X10, X0, X0
	VCVTDQ2PD    X0, Y0
	VMULPD       Y15, Y0, Y0
	VCVTPD2PSY   Y0, X0
	VMOVUPS      X0, (DI)
	ADDQ         $16, SI
	ADDQ         $16, DI
	DECQ         CX
	JNZ          mloop
	VZEROUPPER
	RET

// func fromFixedBE4Div(dst *float32, src *byte, n int, scale float64)
TEXT ·fromFixedBE4Div(SB), NOSPLIT, $0-32
	MOVQ         dst+0(FP), DI
	MOVQ         src+8(FP), SI
	MOVQ         n+16(FP), CX
	VBROADCASTSD scale+24(FP), Y15
	VBROADCASTI128 bswap32<>(SB), Y10
	SHRQ         $2, CX
dloop:
	VMOVDQU      (SI), X0
	VPSHUFB      X10, X0, X0
	VCVTDQ2PD    X0, Y0
	VDIVPD       Y15, Y0, Y0
	VCVTPD2PSY   Y0, X0
	VMOVUPS      X0, (DI)
	ADDQ         $16, SI
	ADDQ         $16, DI
	DECQ         CX
	JNZ          dloop
	VZEROUPPER
	RET

// The float32 kernels, 8 values a step, for a power-of-two scale only (pow2Scale32): then x*scale
// in float32 is exact or, where it is not (beyond float32's range, or under its normal range),
// gives the same integer as in float64 (the upper bound, or 0); and a sum converted to float32
// and multiplied by 1/scale is rounded once, as float32(float64(v)/scale) is. Rounding as above
// with 0.5-2^-25; VCVTTPS2DQ gives 0x80000000 for NaN and out of range, which is right below -2^31
// and turned into 0x7fffffff (XOR with an all-ones mask) where v is not below 2^31 or NaN. Any n:
// the last n mod 8 values take one more step with a VPMASKMOVD load and store (tailmask).

DATA signbit32<>+0x00(SB)/4, $0x80000000
GLOBL signbit32<>(SB), RODATA|NOPTR, $4
// 0.49999997 (0.5 - 2^-25)
DATA justunderhalf32<>+0x00(SB)/4, $0x3effffff
GLOBL justunderhalf32<>(SB), RODATA|NOPTR, $4
// 2^31
DATA two31<>+0x00(SB)/4, $0x4f000000
GLOBL two31<>(SB), RODATA|NOPTR, $4

// tailmask: lanes 0..r-1 of the 8 int32s at tailmask+32-4r are all ones, the rest zero: the mask
// of a last step of r < 8 values (VPMASKMOVD loads zeros and stores nothing in the other lanes,
// and touches no memory there).
DATA tailmask<>+0x00(SB)/8, $0xffffffffffffffff
DATA tailmask<>+0x08(SB)/8, $0xffffffffffffffff
DATA tailmask<>+0x10(SB)/8, $0xffffffffffffffff
DATA tailmask<>+0x18(SB)/8, $0xffffffffffffffff
DATA tailmask<>+0x20(SB)/8, $0
DATA tailmask<>+0x28(SB)/8, $0
DATA tailmask<>+0x30(SB)/8, $0
DATA tailmask<>+0x38(SB)/8, $0
GLOBL tailmask<>(SB), RODATA|NOPTR, $64

// func toFixedBE8f(dst *byte, x *float32, n int, scale float32)
TEXT ·toFixedBE8f(SB), NOSPLIT, $0-28
	MOVQ           dst+0(FP), DI
	MOVQ           x+8(FP), SI
	MOVQ           n+16(FP), CX
	VBROADCASTSS   scale+24(FP), Y15
	VBROADCASTSS   signbit32<>(SB), Y14
	VBROADCASTSS   justunderhalf32<>(SB), Y13
	VBROADCASTSS   two31<>(SB), Y12
	VBROADCASTI128 bswap32<>(SB), Y10
	MOVQ           CX, DX
	ANDQ           $7, DX
	SHRQ           $3, CX
	JZ             ftail
floop:
	VMOVUPS        (SI), Y0
	VMULPS         Y15, Y0, Y0
	VANDPS         Y14, Y0, Y1
	VORPS          Y13, Y1, Y1
	VADDPS         Y1, Y0, Y0
	VCVTTPS2DQ     Y0, Y2
	VCMPPS         $5, Y12, Y0, Y3 // not (v < 2^31): v >= 2^31 or NaN
	VPXOR          Y3, Y2, Y2
	VPSHUFB        Y10, Y2, Y2
	VMOVDQU        Y2, (DI)
	ADDQ           $32, SI
	ADDQ           $32, DI
	DECQ           CX
	JNZ            floop
ftail:
	TESTQ          DX, DX
	JZ             fdone
	LEAQ           tailmask<>+32(SB), AX
	SHLQ           $2, DX
	SUBQ           DX, AX
	VMOVDQU        (AX), Y9
	VPMASKMOVD     (SI), Y9, Y0
	VMULPS         Y15, Y0, Y0
	VANDPS         Y14, Y0, Y1
	VORPS          Y13, Y1, Y1
	VADDPS         Y1, Y0, Y0
	VCVTTPS2DQ     Y0, Y2
	VCMPPS         $5, Y12, Y0, Y3
	VPXOR          Y3, Y2, Y2
	VPSHUFB        Y10, Y2, Y2
	VPMASKMOVD     Y2, Y9, (DI)
fdone:
	VZEROUPPER
	RET

// func fromFixedBE8f(dst *float32, src *byte, n int, inv float32)
TEXT ·fromFixedBE8f(SB), NOSPLIT, $0-28
	MOVQ           dst+0(FP), DI
	MOVQ           src+8(FP), SI
	MOVQ           n+16(FP), CX
	VBROADCASTSS   inv+24(FP), Y15
	VBROADCASTI128 bswap32<>(SB), Y10
	MOVQ           CX, DX
	ANDQ           $7, DX
	SHRQ           $3, CX
	JZ             mtail
fmloop:
	VMOVDQU        (SI), Y0
	VPSHUFB        Y10, Y0, Y0
	VCVTDQ2PS      Y0, Y0
	VMULPS         Y15, Y0, Y0
	VMOVUPS        Y0, (DI)
	ADDQ           $32, SI
	ADDQ           $32, DI
	DECQ           CX
	JNZ            fmloop
mtail:
	TESTQ          DX, DX
	JZ             mdone
	LEAQ           tailmask<>+32(SB), AX
	SHLQ           $2, DX
	SUBQ           DX, AX
	VMOVDQU        (AX), Y9
	VPMASKMOVD     (SI), Y9, Y0
	VPSHUFB        Y10, Y0, Y0
	VCVTDQ2PS      Y0, Y0
	VMULPS         Y15, Y0, Y0
	VPMASKMOVD     Y0, Y9, (DI)
mdone:
	VZEROUPPER
	RET
