// hlsfuse kernel library: multiply-accumulate and window reductions over a snapshot of a window or a row.
//
// Each helper computes one output value exactly, in an accumulator type ACC chosen by the caller: the exact
// format hlsfuse's graph check proved (Fmt(x).mul(Fmt(w)).accumulate(terms) for conv2d, dense and matmul,
// i.e. hlsf::sum_t<hlsf::product_t<T_X, T_W>, TERMS>; Fmt(x).accumulate(KH*KW) for an average pool; double
// for float32 graphs). The caller then assigns the result once to the node's output type.
//
// A window snapshot (line_buffer::snapshot) holds TAPS*C values, tap-major: taps[t*C + c]; a row snapshot
// holds the K values of a row. Weights are flat arrays in the graph's row-major layout (a ROM declared by the
// stage, or a held input), partitioned by the stage so that all products of one output read their weights
// in the same cycle:
//   conv2d  w[KH][KW][Cin/groups][Cout] -> w[(t*CG + ci)*COUT + co]   ARRAY_PARTITION type=block factor=TAPS*CG
//   dense   w[N][K]                     -> w[n*K + k]                  ARRAY_PARTITION type=cyclic factor=K
//   matmul  b[..., K, N]                -> b[base + k*N + n]           ARRAY_PARTITION type=block factor=size/N
//
//   conv_mac<ACC, TAPS, COUT, GROUPS>(taps, w, co)   output channel co of conv2d: the sum over taps t and
//       ci < CG = C/GROUPS of taps[t*C + g*CG + ci] * w[(t*CG + ci)*COUT + co], g = co / (COUT/GROUPS) the
//       group of co (GROUPS = C: a depthwise convolution)
//   dense_mac<ACC>(x, w, n)              output n of dense: the sum over k of x[k] * w[n*K + k]
//   matmul_mac<ACC, N>(x, b, base, n)    output n of a row of matmul: the sum over k of x[k] * b[base + k*N + n]
//   window_sum<ACC, TAPS>(taps, c)       sum of channel c over the taps (padding was pushed as zeros)
//   window_max<TAPS>(taps, c, real)      maximum of channel c over the taps t with real[t] (not padding: padding
//                                        never wins, and every pooling window has a real tap)
#ifndef HLSFUSE_KERNELS_MAC_H
#define HLSFUSE_KERNELS_MAC_H

#include "numeric.h"

namespace hlsf {

template <class ACC, int TAPS, int COUT, int GROUPS, class T_X, int NT, class T_W, int NW>
ACC conv_mac(const T_X (&taps)[NT], const T_W (&w)[NW], int co) {
#pragma HLS INLINE
  const int C = NT / TAPS;
  const int CG = C / GROUPS;
  const int CO_G = COUT / GROUPS;
  static_assert(NT % TAPS == 0 && C % GROUPS == 0 && COUT % GROUPS == 0,
                "conv_mac: GROUPS must divide the input and output channels");
  static_assert(NW == TAPS * CG * COUT, "conv_mac: w must hold KH*KW*(Cin/GROUPS)*COUT weights");
  const int base = (co / CO_G) * CG;
  ACC acc = 0;
  for (int t = 0; t < TAPS; ++t) {
#pragma HLS UNROLL
    for (int ci = 0; ci < CG; ++ci) {
#pragma HLS UNROLL
      accumulate(acc, mul(taps[t * C + base + ci], w[(t * CG + ci) * COUT + co]));
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

template <class ACC, int N, class T_X, int K, class T_W, int NB>
ACC matmul_mac(const T_X (&x)[K], const T_W (&b)[NB], int base, int n) {
#pragma HLS INLINE
  static_assert(NB % (K * N) == 0, "matmul_mac: b must hold whole K x N matrices");
  ACC acc = 0;
  for (int k = 0; k < K; ++k) {
#pragma HLS UNROLL
    accumulate(acc, mul(x[k], b[base + k * N + n]));
  }
  return acc;
}

template <class ACC, int TAPS, class T_X, int NT>
ACC window_sum(const T_X (&taps)[NT], int c) {
#pragma HLS INLINE
  const int C = NT / TAPS;
  ACC acc = 0;
  for (int t = 0; t < TAPS; ++t) {
#pragma HLS UNROLL
    accumulate(acc, taps[t * C + c]);
  }
  return acc;
}

// The first real tap seeds the maximum; later real taps replace it only when strictly greater.
template <int TAPS, class T_X, int NT>
T_X window_max(const T_X (&taps)[NT], int c, const bool (&real)[TAPS]) {
#pragma HLS INLINE
  const int C = NT / TAPS;
  T_X best = taps[c];
  bool found = false;
  for (int t = 0; t < TAPS; ++t) {
#pragma HLS UNROLL
    const T_X v = taps[t * C + c];
    if (real[t] && (!found || v > best)) {
      best = v;
      found = true;
    }
  }
  return best;
}

}  // namespace hlsf

#endif  // HLSFUSE_KERNELS_MAC_H
