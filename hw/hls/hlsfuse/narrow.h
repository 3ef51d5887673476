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
  T_X xs[SIMD];
  T_W ws[SIMD];
#pragma HLS ARRAY_PARTITION variable=xs type=complete
#pragma HLS ARRAY_PARTITION variable=ws type=complete
  detail::conv_operands<TAPS, COUT, GROUPS, SIMD>(xs, ws, taps, w, co, f);
  return detail::narrow_dot<KIND>(acc, xs, ws);
}

template <class ACC, int SIMD, class T_W, int KIND, class T_X, int K, class W>
ACC dense_narrow(ACC acc, const T_X (&x)[K], const W& w, int n, int f) {
#pragma HLS INLINE
  T_X xs[SIMD];
  T_W ws[SIMD];
#pragma HLS ARRAY_PARTITION variable=xs type=complete
#pragma HLS ARRAY_PARTITION variable=ws type=complete
  detail::dense_operands<SIMD>(xs, ws, x, w, n, f);
  return detail::narrow_dot<KIND>(acc, xs, ws);
}

template <class ACC, int N, int SIMD, class T_W, int KIND, class T_X, int K, class W>
ACC matmul_narrow(ACC acc, const T_X (&x)[K], const W& b, int base, int n, int f) {
#pragma HLS INLINE
  T_X xs[SIMD];
  T_W ws[SIMD];
#pragma HLS ARRAY_PARTITION variable=xs type=complete
#pragma HLS ARRAY_PARTITION variable=ws type=complete
  detail::matmul_operands<N, SIMD>(xs, ws, x, b, base, n, f);
  return detail::narrow_dot<KIND>(acc, xs, ws);
}

}  // namespace hlsf

#endif  // HLSFUSE_KERNELS_NARROW_H
