// hlsfuse kernel library: multiply-accumulate of 1- and 2-bit weights without a multiplier.
//
// The same folded helpers as mac.h (the same template arguments, lanes, folds and weight layouts; see there),
// for a stage whose constant weights all have raw values in {-1, 0, +1} (hlsfuse/lower/products.py decides the
// kind once, from the weights and the operand types). KIND replaces mac.h's FABRIC:
//
//   narrow_sign     every weight -1 or +1: each product is x or -x (the raw integer negated)
//   narrow_ternary  every weight -1, 0 or +1: x, -x or nothing
//   narrow_xnor     every weight -1 or +1, and x one bit b: the SIMD products of a call sum to
//                   2 popcount(b & p) - popcount(b), p the weights' bits "w = +1" (negated for a signed x,
//                   whose bit set is -1): the XNOR-popcount of binarized networks, for x streamed as its code
//
//   conv_narrow<ACC, TAPS, COUT, GROUPS, SIMD, T_W, KIND>(acc, taps, w, co, f)
//   dense_narrow<ACC, SIMD, T_W, KIND>(acc, x, w, n, f)
//   matmul_narrow<ACC, N, SIMD, T_W, KIND>(acc, x, b, base, n, f)
//
// Each sums the exact raw products (x's and w's fractional bits, as mac.h's) into ACC: bit for bit the same
// values, with no `*` for Vitis HLS to bind to a DSP.
#ifndef HLSFUSE_KERNELS_NARROW_H
#define HLSFUSE_KERNELS_NARROW_H

#include "mac.h"
#include "numeric.h"

namespace hlsf {

enum { narrow_sign = 0, narrow_ternary = 1, narrow_xnor = 2 };

namespace detail {

// acc plus the exact sum of the SIMD products xs[s] * ws[s] (raw weights in {-1, 0, +1}), built as KIND says.
template <int KIND, int SIMD, class T_X, class T_W, class ACC>
ACC narrow_dot(ACC acc, const T_X (&xs)[SIMD], const T_W (&ws)[SIMD]) {
#pragma HLS INLINE
  typedef sum_t<product_t<T_X, T_W>, SIMD> T_S;  // holds the sum of the SIMD products exactly
  long long total = 0;
  if (KIND == narrow_xnor) {
    int ones = 0, count = 0;
    for (int s = 0; s < SIMD; ++s) {
#pragma HLS UNROLL
      const int bit = raw_of(xs[s]) != 0;
      ones += bit & (raw_of(ws[s]) > 0);
      count += bit;
    }
    total = format<T_X>::is_signed ? count - (ones << 1) : (ones << 1) - count;
  } else {
    for (int s = 0; s < SIMD; ++s) {
#pragma HLS UNROLL
      const long long w = raw_of(ws[s]);
      const long long r = raw_of(xs[s]);
      total += w == 0 ? 0LL : w < 0 ? -r : r;
    }
  }
  hlsf::accumulate(acc, from_raw<T_S>(total));
  return acc;
}

}  // namespace detail

template <class ACC, int TAPS, int COUT, int GROUPS, int SIMD, class T_W, int KIND, class T_X, int NT, class W>
ACC conv_narrow(ACC acc, const T_X (&taps)[NT], const W& w, int co, int f) {
#pragma HLS INLINE
  typedef detail::weights<W, COUT> weights;  // product j, output channel co
  const int C = NT / TAPS;
  const int CG = C / GROUPS;
  const int CO_G = COUT / GROUPS;
  const int F = TAPS * CG / SIMD;
  static_assert(NT % TAPS == 0 && C % GROUPS == 0 && COUT % GROUPS == 0,
                "conv_narrow: GROUPS must divide the input and output channels");
  static_assert(weights::COUNT == TAPS * CG * COUT, "conv_narrow: w must hold KH*KW*(Cin/GROUPS)*COUT weights");
  static_assert((TAPS * CG) % SIMD == 0, "conv_narrow: SIMD must divide KH*KW*Cin/GROUPS");
  const int base = (co / CO_G) * CG;
  T_X xs[SIMD];
  T_W ws[SIMD];
  for (int s = 0; s < SIMD; ++s) {
#pragma HLS UNROLL
    const int j = s * F + f;
    xs[s] = taps[(j / CG) * C + base + j % CG];
    ws[s] = element<T_W>(weights::at(w, j, co));
  }
  return detail::narrow_dot<KIND>(acc, xs, ws);
}

template <class ACC, int SIMD, class T_W, int KIND, class T_X, int K, class W>
ACC dense_narrow(ACC acc, const T_X (&x)[K], const W& w, int n, int f) {
#pragma HLS INLINE
  typedef detail::weights<W, K> weights;  // output n, product j
  static_assert(weights::COUNT % K == 0, "dense_narrow: w must hold N rows of K weights");
  static_assert(K % SIMD == 0, "dense_narrow: SIMD must divide K");
  T_X xs[SIMD];
  T_W ws[SIMD];
  for (int s = 0; s < SIMD; ++s) {
#pragma HLS UNROLL
    const int j = f * SIMD + s;
    xs[s] = x[j];
    ws[s] = element<T_W>(weights::at(w, n, j));
  }
  return detail::narrow_dot<KIND>(acc, xs, ws);
}

template <class ACC, int N, int SIMD, class T_W, int KIND, class T_X, int K, class W>
ACC matmul_narrow(ACC acc, const T_X (&x)[K], const W& b, int base, int n, int f) {
#pragma HLS INLINE
  typedef detail::weights<W, N> weights;  // row base + j, output n
  static_assert(weights::COUNT % (K * N) == 0, "matmul_narrow: b must hold whole K x N matrices");
  static_assert(K % SIMD == 0, "matmul_narrow: SIMD must divide K");
  const int F = K / SIMD;
  T_X xs[SIMD];
  T_W ws[SIMD];
  for (int s = 0; s < SIMD; ++s) {
#pragma HLS UNROLL
    const int j = s * F + f;
    xs[s] = x[j];
    ws[s] = element<T_W>(weights::at(b, base + j, n));
  }
  return detail::narrow_dot<KIND>(acc, xs, ws);
}

}  // namespace hlsf

#endif  // HLSFUSE_KERNELS_NARROW_H
