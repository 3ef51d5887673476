// hlsfuse kernel library: multiply-accumulate and window reductions over a line buffer's window or a row.
//
// Each helper computes one output value exactly, in an accumulator type ACC chosen by the caller: the exact
// format hlsfuse's graph check proved (Fmt(x).mul(Fmt(w)).accumulate(terms) for conv2d and dense, i.e.
// hlsf::sum_t<hlsf::product_t<T_X, T_W>, TERMS>; Fmt(x).accumulate(KH*KW) for an average pool, i.e.
// hlsf::sum_t<T_X, KH*KW>; double for float32 graphs). The caller then assigns the result once to the
// node's output type (`T_OUT(acc)`, or hlsf::assign_quotient for an average pool).
//
// Weights are constant arrays (ROMs), flattened row-major in the graph's layout and passed by reference:
//   conv2d  w[KH][KW][Cin/groups][Cout]  ->  w[((kh * KW + kw) * (Cin/groups) + ci) * Cout + co]
//   dense   w[N][K]                      ->  w[n * K + k]
// The helpers read one output's weights in parallel, so the stage partitions the ROM accordingly:
//   conv2d: #pragma HLS ARRAY_PARTITION variable=w block factor=KH*KW*(Cin/groups)   (one bank per tap)
//   dense:  #pragma HLS ARRAY_PARTITION variable=w cyclic factor=K                   (one bank per k)
//
//   conv_mac<ACC, COUT, GROUPS>(lb, w, co)  output channel co of conv2d over lb's window (hlsf::line_buffer
//       with C = Cin channels): sum over kh, kw, ci < Cin/GROUPS of tap(kh, kw, g * Cin/GROUPS + ci) *
//       w[kh][kw][ci][co], g = co / (COUT/GROUPS) the group of co. groups=1 is a plain convolution,
//       GROUPS = Cin (COUT a multiple of Cin) a depthwise one.
//   dense_mac<ACC>(x, w, n)       output n of dense: sum over k of x[k] * w[n][k] (x holds the K inputs)
//   window_sum<ACC>(lb, c)        sum of channel c over all KH*KW taps (padding was pushed as zeros)
//   window_max(lb, r, q, c)       maximum of channel c over the taps of the window ending at padded pixel
//                                 (r, q) that are not padding (padding never wins); the input's type
#ifndef HLSFUSE_KERNELS_MAC_H
#define HLSFUSE_KERNELS_MAC_H

#include "numeric.h"

namespace hlsf {

template <class ACC, int COUT, int GROUPS, class LB, class T_W, int NW>
ACC conv_mac(const LB& lb, const T_W (&w)[NW], int co) {
#pragma HLS INLINE
  typedef typename LB::geometry G;
  const int CG = LB::channels / GROUPS;
  const int CO_G = COUT / GROUPS;
  static_assert(GROUPS >= 1 && LB::channels % GROUPS == 0 && COUT % GROUPS == 0,
                "conv_mac: GROUPS must divide the input and output channels");
  static_assert(NW == G::K_H * G::K_W * CG * COUT, "conv_mac: w must hold KH*KW*(Cin/GROUPS)*COUT weights");
  const int base = (co / CO_G) * CG;
  ACC acc = 0;
  for (int kh = 0; kh < G::K_H; ++kh) {
#pragma HLS UNROLL
    for (int kw = 0; kw < G::K_W; ++kw) {
#pragma HLS UNROLL
      for (int ci = 0; ci < CG; ++ci) {
#pragma HLS UNROLL
        accumulate(acc, mul(lb.tap(kh, kw, base + ci), w[((kh * G::K_W + kw) * CG + ci) * COUT + co]));
      }
    }
  }
  return acc;
}

template <class ACC, class T_X, int K, class T_W, int NK>
ACC dense_mac(const T_X (&x)[K], const T_W (&w)[NK], int n) {
#pragma HLS INLINE
  static_assert(NK % K == 0, "dense_mac: w must hold N rows of K weights");
  ACC acc = 0;
  for (int k = 0; k < K; ++k) {
#pragma HLS UNROLL
    accumulate(acc, mul(x[k], w[n * K + k]));
  }
  return acc;
}

template <class ACC, class LB>
ACC window_sum(const LB& lb, int c) {
#pragma HLS INLINE
  typedef typename LB::geometry G;
  ACC acc = 0;
  for (int kh = 0; kh < G::K_H; ++kh) {
#pragma HLS UNROLL
    for (int kw = 0; kw < G::K_W; ++kw) {
#pragma HLS UNROLL
      accumulate(acc, lb.tap(kh, kw, c));
    }
  }
  return acc;
}

// Pools refuse padding as wide as the pool, so every window has a real tap; the first one seeds the
// maximum and later ones replace it only when strictly greater.
template <class LB>
typename LB::value_type window_max(const LB& lb, int r, int q, int c) {
#pragma HLS INLINE
  typedef typename LB::geometry G;
  typename LB::value_type best = lb.tap(0, 0, c);
  bool found = false;
  for (int kh = 0; kh < G::K_H; ++kh) {
#pragma HLS UNROLL
    for (int kw = 0; kw < G::K_W; ++kw) {
#pragma HLS UNROLL
      const typename LB::value_type v = lb.tap(kh, kw, c);
      if (!G::tap_is_pad(r, q, kh, kw) && (!found || v > best)) {
        best = v;
        found = true;
      }
    }
  }
  return best;
}

}  // namespace hlsf

#endif  // HLSFUSE_KERNELS_MAC_H
