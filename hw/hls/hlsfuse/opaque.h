// hlsfuse kernel library: stages of the "own" kind that compute over a whole axis: softmax, argmax, topk.
//
// Complete stage functions for one frame, bit-exact with hlsfuse/ops/opaque.py. The tensor is seen as
// ROWS (or OUTER) independent rows; element types are template parameters.
//
//   softmax_stage<T_IN, T_OUT, T_EXP, T_RECIP, ROWS, N>(in, out, exp_table, recip_table)
//       softmax over the last axis (N elements per row, ROWS = product of the other axes), fixed point:
//         m = max(x)   d = x - m (exact: the type of `x - m`, Fmt(x).sub(Fmt(x)))   e = exp_table[d]
//         s = sum(e)   (exact: sum_t<T_EXP, N>, Fmt(exp_dtype).accumulate(N))      r = recip_table[s]
//         y = T_OUT(e * r)   (the exact product, assigned once)
//       The tables are hlsfuse.ops.opaque.softmax_tables(sig)[0:2]: their entries as const arrays of T_EXP
//       and T_RECIP (their index shifts follow from their sizes, see lut_lookup). Holds one row of x and of e.
//   softmax_float_stage<ROWS, N>(in, out)
//       float32 softmax: exp(x - max) / sum, in float (compared with a tolerance, as float results are).
//   argmax_stage<T_IN, T_OUT, OUTER, N, INNER>(in, out)
//       index of the first maximum along an axis of extent N; OUTER, INNER = products of the axes before and
//       after it (keepdims does not change the order). Holds INNER running maxima, so over the last axis
//       (INNER = 1) it streams. Output T_OUT(index) (int32 = ap_fixed<32, 32> by default).
//   topk_stage<T_IN, T_OUT, ROWS, N, K, INDICES>(in, out)
//       the K largest of each row of N, descending, ties by lower index first; INDICES selects the output:
//       the indices (T_OUT(index)) or the values (T_OUT(x)). A sorted K-entry register list takes one
//       element per cycle (parallel compare and shift), then the K results are written.
#ifndef HLSFUSE_KERNELS_OPAQUE_H
#define HLSFUSE_KERNELS_OPAQUE_H

#include <hls_stream.h>

#include <cmath>

#include "numeric.h"

namespace hlsf {

// --------------------------------------------------------------------------------------------------------
// softmax
// --------------------------------------------------------------------------------------------------------

template <class T_IN, class T_OUT, class T_EXP, class T_RECIP, int ROWS, int N, int E, int R>
void softmax_stage(hls::stream<T_IN>& in, hls::stream<T_OUT>& out, const T_EXP (&exp_table)[E],
                   const T_RECIP (&recip_table)[R]) {
  typedef decltype(std::declval<T_IN>() - std::declval<T_IN>()) D;  // the exact x - m
  typedef sum_t<T_EXP, N> S;
  T_IN x[N];
  T_EXP e[N];
  for (int row = 0; row < ROWS; ++row) {
    T_IN m = 0;
    for (int i = 0; i < N; ++i) {
#pragma HLS PIPELINE II=1
      const T_IN v = in.read();
      x[i] = v;
      if (i == 0 || v > m) m = v;
    }
    S s = 0;
    for (int i = 0; i < N; ++i) {
#pragma HLS PIPELINE II=1
      const D d = x[i] - m;
      e[i] = lut_lookup(d, exp_table);
      accumulate(s, e[i]);
    }
    const T_RECIP r = lut_lookup(s, recip_table);
    for (int i = 0; i < N; ++i) {
#pragma HLS PIPELINE II=1
      out.write(T_OUT(e[i] * r));
    }
  }
}

template <int ROWS, int N>
void softmax_float_stage(hls::stream<float>& in, hls::stream<float>& out) {
  float x[N];
  for (int row = 0; row < ROWS; ++row) {
    float m = 0;
    for (int i = 0; i < N; ++i) {
#pragma HLS PIPELINE II=1
      const float v = in.read();
      x[i] = v;
      if (i == 0 || v > m) m = v;
    }
    float s = 0;
    for (int i = 0; i < N; ++i) {
#pragma HLS PIPELINE
      x[i] = std::exp(x[i] - m);
      s += x[i];
    }
    for (int i = 0; i < N; ++i) {
#pragma HLS PIPELINE II=1
      out.write(x[i] / s);
    }
  }
}

// --------------------------------------------------------------------------------------------------------
// argmax
// --------------------------------------------------------------------------------------------------------

template <class T_IN, class T_OUT, int OUTER, int N, int INNER>
void argmax_stage(hls::stream<T_IN>& in, hls::stream<T_OUT>& out) {
  T_IN best[INNER];
  int where[INNER];
  for (int o = 0; o < OUTER; ++o) {
    int n = 0, j = 0;  // position along the axis and in the inner block
    for (int e = 0; e < N * INNER; ++e) {
#pragma HLS PIPELINE II=1
      const T_IN v = in.read();
      if (n == 0 || v > best[j]) {  // strictly greater: the first maximum wins
        best[j] = v;
        where[j] = n;
      }
      if (j + 1 == INNER) {
        j = 0;
        n += 1;
      } else {
        j += 1;
      }
    }
    for (int i = 0; i < INNER; ++i) {
#pragma HLS PIPELINE II=1
      out.write(T_OUT(where[i]));
    }
  }
}

// --------------------------------------------------------------------------------------------------------
// topk
// --------------------------------------------------------------------------------------------------------

template <class T_IN, class T_OUT, int ROWS, int N, int K, bool INDICES>
void topk_stage(hls::stream<T_IN>& in, hls::stream<T_OUT>& out) {
  static_assert(K >= 1 && K <= N, "topk_stage: K must be in 1..N");
  T_IN value[K];
  int index[K] = {};  // zeroed only to quiet g++'s -Wmaybe-uninitialized (K = 1): slots are written before read
#pragma HLS ARRAY_PARTITION variable=value complete
#pragma HLS ARRAY_PARTITION variable=index complete
  for (int row = 0; row < ROWS; ++row) {
    for (int i = 0; i < N; ++i) {
#pragma HLS PIPELINE II=1
      const T_IN v = in.read();
      // Slot p is filled once p < i. The list is sorted descending and filled slots come first, so "v goes
      // before slot p" (p empty, or v strictly greater: an equal value stays ahead, having the lower index)
      // is false up to v's place and true from there on. Each slot then keeps its entry, takes v, or takes
      // its predecessor's entry; going down from the last slot reads each predecessor before it changes.
      for (int p = K - 1; p >= 0; --p) {
#pragma HLS UNROLL
        const bool before_p = p >= i || v > value[p];
        const bool before_prev = p > 0 && (p - 1 >= i || v > value[p - 1]);
        if (before_prev) {
          value[p] = value[p - 1];
          index[p] = index[p - 1];
        } else if (before_p) {
          value[p] = v;
          index[p] = i;
        }
      }
    }
    for (int p = 0; p < K; ++p) {
#pragma HLS PIPELINE II=1
      out.write(INDICES ? T_OUT(index[p]) : T_OUT(value[p]));
    }
  }
}

}  // namespace hlsf

#endif  // HLSFUSE_KERNELS_OPAQUE_H
