// hlsfuse kernel library: stages of the "own" kind that compute over a whole axis: softmax, argmax, topk.
//
// Complete stages for one frame, bit-exact with hlsfuse/ops/opaque.py, each one loop (PIPELINE II=1) with the
// iteration count of its schedule (hlsfuse/lower/own.py). The tensor is seen as ROWS (or OUTER) independent
// rows; `in` has read() (an hls::stream or an hlsf::rom_reader); buffers are the caller's, declared by the
// stage function with their partitioning and dependence pragmas.
//
//   softmax_stage<T_IN, T_OUT, T_EXP, T_RECIP, ROWS, N>(in, out, exp_table, recip_table, x, e)
//       softmax over the last axis (N elements per row, ROWS = product of the other axes), fixed point, in
//       three passes of N iterations per row:
//         read:   x[i] = in, m = max(x)
//         exp:    d = x[i] - m (exact: the type of `x - m`)   e[i] = exp_table[d]   s = sum(e) (exact: sum_t<T_EXP, N>)
//         write:  r = recip_table[s]   y = T_OUT(e[i] * r)   (the exact product, assigned once)
//       The tables are hlsfuse.ops.opaque.softmax_tables(sig)[0:2] (their index shifts follow from their sizes,
//       see lut_lookup); x and e hold one row.
//   softmax_float_stage<ROWS, N>(in, out, x)
//       float32 softmax: exp(x - max) / sum, in float (compared with a tolerance, as float results are).
//   argmax_stage<T_IN, T_OUT, OUTER, N, INNER>(in, out, best, where)
//       index of the first maximum along an axis of extent N; OUTER, INNER = products of the axes before and
//       after it. Per outer index: N * INNER reads keeping INNER running maxima (best, where), then INNER
//       writes of T_OUT(index) (int32 = ap_fixed<32, 32> by default).
//   topk_stage<T_IN, T_OUT, ROWS, N, K, INDICES>(in, out)
//       the K largest of each row of N, descending, ties by lower index first; INDICES selects the output: the
//       indices (T_OUT(index)) or the values (T_OUT(x)). Per row: N reads into a sorted K-slot register list
//       (parallel compare and shift), then K writes.
#ifndef HLSFUSE_KERNELS_OPAQUE_H
#define HLSFUSE_KERNELS_OPAQUE_H

#include <hls_stream.h>

#include <cmath>

#include "numeric.h"

namespace hlsf {

// --------------------------------------------------------------------------------------------------------
// softmax
// --------------------------------------------------------------------------------------------------------

template <class T_IN, class T_OUT, class T_EXP, class T_RECIP, int ROWS, int N, class IN, int E, int R>
void softmax_stage(IN& in, hls::stream<T_OUT>& out, const T_EXP (&exp_table)[E], const T_RECIP (&recip_table)[R],
                   T_IN (&x)[N], T_EXP (&e)[N]) {
  typedef decltype(std::declval<T_IN>() - std::declval<T_IN>()) D;  // the exact x - m
  typedef sum_t<T_EXP, N> S;
  T_IN m = 0;
  S s = 0;
  int pass = 0;  // 0: read, 1: exp and sum, 2: write
  int i = 0;
  for (int t = 0; t < 3 * ROWS * N; ++t) {
#pragma HLS PIPELINE II=1
    if (pass == 0) {
      const T_IN v = in.read();
      x[i] = v;
      if (i == 0 || v > m) m = v;
    } else if (pass == 1) {
      const D d = x[i] - m;
      const T_EXP ei = lut_lookup(d, exp_table);
      e[i] = ei;
      if (i == 0) {
        s = ei;
      } else {
        accumulate(s, ei);
      }
    } else {
      const T_RECIP r = lut_lookup(s, recip_table);
      out.write(T_OUT(e[i] * r));
    }
    if (i == N - 1) {
      i = 0;
      pass = pass == 2 ? 0 : pass + 1;
    } else {
      i++;
    }
  }
}

template <int ROWS, int N, class IN>
void softmax_float_stage(IN& in, hls::stream<float>& out, float (&x)[N]) {
  float m = 0;
  float s = 0;
  int pass = 0;
  int i = 0;
  for (int t = 0; t < 3 * ROWS * N; ++t) {
#pragma HLS PIPELINE
    if (pass == 0) {
      const float v = in.read();
      x[i] = v;
      if (i == 0 || v > m) m = v;
    } else if (pass == 1) {
      x[i] = std::exp(x[i] - m);
      s = i == 0 ? x[i] : s + x[i];
    } else {
      out.write(x[i] / s);
    }
    if (i == N - 1) {
      i = 0;
      pass = pass == 2 ? 0 : pass + 1;
    } else {
      i++;
    }
  }
}

// --------------------------------------------------------------------------------------------------------
// argmax
// --------------------------------------------------------------------------------------------------------

template <class T_IN, class T_OUT, int OUTER, int N, int INNER, class IN>
void argmax_stage(IN& in, hls::stream<T_OUT>& out, T_IN (&best)[INNER], int (&where)[INNER]) {
  int n = 0, j = 0;  // position along the axis and in the inner block
  bool reading = true;
  for (int t = 0; t < OUTER * (N + 1) * INNER; ++t) {
#pragma HLS PIPELINE II=1
    if (reading) {
      const T_IN v = in.read();
      if (n == 0 || v > best[j]) {  // strictly greater: the first maximum wins
        best[j] = v;
        where[j] = n;
      }
    } else {
      out.write(T_OUT(where[j]));
    }
    if (j == INNER - 1) {
      j = 0;
      if (!reading) {
        reading = true;
      } else if (n == N - 1) {
        n = 0;
        reading = false;
      } else {
        n++;
      }
    } else {
      j++;
    }
  }
}

// --------------------------------------------------------------------------------------------------------
// topk
// --------------------------------------------------------------------------------------------------------

template <class T_IN, class T_OUT, int ROWS, int N, int K, bool INDICES, class IN>
void topk_stage(IN& in, hls::stream<T_OUT>& out) {
  static_assert(K >= 1 && K <= N, "topk_stage: K must be in 1..N");
  T_IN value[K] = {};  // zeroed only to quiet g++'s -Wmaybe-uninitialized: slots are written before they are read
  int index[K] = {};
#pragma HLS ARRAY_PARTITION variable=value type=complete
#pragma HLS ARRAY_PARTITION variable=index type=complete
  int i = 0;  // reading: the element of the row; writing: i - N is the slot
  for (int t = 0; t < ROWS * (N + K); ++t) {
#pragma HLS PIPELINE II=1
    if (i < N) {
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
    } else {
      const int p = i - N;
      out.write(INDICES ? T_OUT(index[p]) : T_OUT(value[p]));
    }
    i = i == N + K - 1 ? 0 : i + 1;
  }
}

}  // namespace hlsf

#endif  // HLSFUSE_KERNELS_OPAQUE_H
