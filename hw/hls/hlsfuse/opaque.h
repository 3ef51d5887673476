// hlsfuse kernel library: stages of the "own" kind that compute over a whole axis: softmax, argmax, topk.
//
// Complete stages for one frame, bit-exact with hlsfuse/ops/opaque.py, each one loop (PIPELINE II=1) with the
// iteration count of its schedule (hlsfuse/lower/own.py). The tensor is seen as ROWS (or OUTER) independent
// rows; `in` has read() (an hls::stream or an hlsf::rom_reader); buffers are the caller's, declared by the
// stage function with their partitioning and dependence pragmas.
//
// Lanes: with L > 1 (the template argument before the deduced ones, 1 when left out) each read takes a token
// of L consecutive innermost elements (convert.h's token<T, L>::type, an hlsf::lanes<T, L>), so a loop phase over
// a row of N runs N / L iterations; buffers read L at a time are partitioned cyclically by L by the caller.
//
//   softmax_stage<T_IN, T_OUT, T_EXP, T_RECIP, ROWS, N, L, T_D>(in, out, exp_table, recip_table, x, e)
//       softmax over the last axis (N elements per row, ROWS = product of the other axes), fixed point, in
//       three passes of N / L iterations per row:
//         read:   x[i] = in, m = max(x)   (a token's lanes by a tree of comparators first)
//         exp:    d = x[i] - m (exact: the type of `x - m`; with T_D, hlsfuse's exp_int_bits, saturated to T_D,
//                 its fractional bits and fewer integer bits)   e[i] = exp_table[d]   s = sum(e) (exact: sum_t<T_EXP, N>,
//                 a token's lanes by a tree of adders first, exact as well)
//         write:  r = recip_table[s]   y = T_OUT(e[i] * r)   (the exact product, assigned once)
//       The tables are hlsfuse.ops.opaque.softmax_tables(sig)[0:2], of T_EXP and T_RECIP values or (as luts.h
//       holds them) their raw integers (their index shifts follow from their sizes, see lut_lookup); x and e
//       hold one row. With L > 2 exp_table is the stage's copies [ceil(L / 2)][E] of
//       the exp table, lane l reading copy l / 2 (lut_copy): the L lookups of an iteration need L ROM ports.
//   masked_softmax_stage<T_IN, T_OUT, T_EXP, T_RECIP, ROWS, N, R, L, T_D>(in, out, exp_table, recip_table, mask, x, e)
//       softmax_stage leaving out the positions a constant mask sets (hlsfuse's masked_softmax): mask is its
//       ROM of R rows of N entries (raw 0/1, partitioned cyclically by L), row r of the tensor reading mask
//       row r % R. A position left out enters the maximum as T_IN's minimum and gets e = 0, so it adds
//       nothing to the sum and writes exactly 0; every row keeps a position (the graph check refuses others).
//   softmax_float_stage<ROWS, N>(in, out, x), masked_softmax_float_stage<ROWS, N, R>(in, out, mask, x)
//       float32 softmax: exp(x - max) / sum, in float (compared with a tolerance, as float results are); no
//       lanes (a float sum depends on its order). Masked: a position left out is -inf before the max, 0 after.
//   argmax_stage<T_IN, T_OUT, OUTER, N, INNER, L>(in, out, best, where)
//       index of the first maximum along an axis of extent N; OUTER, INNER = products of the axes before and
//       after it. Per outer index: N * INNER / L reads keeping INNER running maxima (best, where), then
//       INNER / L_o writes of T_OUT(index) (int32 = ap_fixed<32, 32> by default). With INNER > 1 a token's
//       lanes are L inner positions, each with its own running maximum, and L_o = L; with INNER = 1 (the
//       innermost axis) they are L positions along the axis: the token's first maximum (lowest lane on ties)
//       replaces the running one when strictly greater, and L_o = 1.
//   topk_stage<T_IN, T_OUT, ROWS, N, K, INDICES, L>(in, out)
//       the K largest of each row of N, descending, ties by lower index first; INDICES selects the output: the
//       indices (T_OUT(index)) or the values (T_OUT(x)). Per row: N / L reads into a sorted K-slot register
//       list (parallel compare and shift; a token's lanes inserted one after another, in lane order, within
//       the iteration), then K writes of one element.
#ifndef HLSFUSE_KERNELS_OPAQUE_H
#define HLSFUSE_KERNELS_OPAQUE_H

#include <hls_stream.h>

#include <cmath>
#include <type_traits>
#include <utility>

#include "convert.h"
#include "numeric.h"

namespace hlsf {

// --------------------------------------------------------------------------------------------------------
// softmax
// --------------------------------------------------------------------------------------------------------

namespace detail {
// The softmax loop of softmax_stage and masked_softmax_stage. MASKED: `mask` (R rows of N raw 0/1 entries) leaves
// positions out; else it is never read.
template <class T_IN, class T_OUT, class T_EXP, class T_RECIP, int ROWS, int N, int R, int L, bool MASKED, class T_D,
          class IN, class EXPS, class RECIPS, int E, class M, int MN>
void softmax_rows(IN& in, hls::stream<typename token<T_OUT, L>::type>& out, const EXPS& exp_table,
                  const RECIPS (&recip_table)[E], const M (&mask)[MN], T_IN (&x)[N], T_EXP (&e)[N]) {
#pragma HLS INLINE
  static_assert(N % L == 0, "softmax_stage: a row is whole tokens");
  static_assert(!MASKED || MN == R * N, "masked_softmax_stage: the mask is R rows of N");
  typedef decltype(std::declval<T_IN>() - std::declval<T_IN>()) D;  // the exact x - m
  // the exp table's input: D, or (exp_int_bits) T_D, the same fractional bits and fewer integer bits, d
  // saturating at its minimum (raw integers compared: the two formats share their LSB)
  typedef typename std::conditional<std::is_void<T_D>::value, D, T_D>::type DT;
  const long long d_floor = -(1LL << (format<DT>::width - 1));
  typedef sum_t<T_EXP, N> S;  // holds every partial sum of a row exactly, so a token's tree adds exactly too
  const int TOKENS = N / L;
  // a position left out enters the maximum as T_IN's minimum (raw: the sign bit alone, or 0 unsigned)
  const long long lowest_raw =
      format<T_IN>::is_signed ? static_cast<long long>(1ULL << (format<T_IN>::width - 1)) : 0LL;
  const T_IN lowest = hlsf::from_raw<T_IN>(lowest_raw);
  T_IN m = 0;
  S s = 0;
  int pass = 0;  // 0: read, 1: exp and sum, 2: write
  int i = 0;     // the token of the row
  int row = 0;   // the mask row: the tensor's row modulo R
  for (int t = 0; t < 3 * ROWS * TOKENS; ++t) {
#pragma HLS PIPELINE II=1
    if (pass == 0) {
      const typename token<T_IN, L>::type v = in.read();
      T_IN values[L];
#pragma HLS ARRAY_PARTITION variable=values type=complete
      for (int l = 0; l < L; ++l) {
#pragma HLS UNROLL
        values[l] = token<T_IN, L>::get(v, l);
        x[i * L + l] = values[l];
        if (MASKED && hlsf::detail::stored_raw(mask[row * N + i * L + l]) != 0) values[l] = lowest;
      }
      const T_IN top = hlsf::tree_max(values);
      if (i == 0 || top > m) m = top;
    } else if (pass == 1) {
      S terms[L];
#pragma HLS ARRAY_PARTITION variable=terms type=complete
      for (int l = 0; l < L; ++l) {
#pragma HLS UNROLL
        const D d = x[i * L + l] - m;
        const long long d_raw = hlsf::raw_of(d);
        const DT dt = hlsf::from_raw<DT>(std::is_void<T_D>::value || d_raw >= d_floor ? d_raw : d_floor);
        const bool left_out = MASKED && hlsf::detail::stored_raw(mask[row * N + i * L + l]) != 0;
        const T_EXP ei = left_out ? T_EXP(0) : hlsf::lut_lookup<T_EXP>(dt, hlsf::lut_copy(exp_table, l));
        e[i * L + l] = ei;
        terms[l] = ei;
      }
      const S part = hlsf::tree_sum(terms);
      if (i == 0) {
        s = part;
      } else {
        hlsf::accumulate(s, part);
      }
    } else {
      const T_RECIP r = hlsf::lut_lookup<T_RECIP>(s, recip_table);
      typename token<T_OUT, L>::type y;
      for (int l = 0; l < L; ++l) {
#pragma HLS UNROLL
        token<T_OUT, L>::set(y, l, T_OUT(e[i * L + l] * r));
      }
      out.write(y);
    }
    if (i == TOKENS - 1) {
      i = 0;
      if (pass == 2) row = row == R - 1 ? 0 : row + 1;
      pass = pass == 2 ? 0 : pass + 1;
    } else {
      i++;
    }
  }
}

template <int ROWS, int N, int R, bool MASKED, class IN, class M, int MN>
void softmax_float_rows(IN& in, hls::stream<float>& out, const M (&mask)[MN], float (&x)[N]) {
#pragma HLS INLINE
  static_assert(!MASKED || MN == R * N, "masked_softmax_float_stage: the mask is R rows of N");
  float m = 0;
  float s = 0;
  int pass = 0;
  int i = 0;
  int row = 0;
  for (int t = 0; t < 3 * ROWS * N; ++t) {
#pragma HLS PIPELINE
    const bool left_out = MASKED && hlsf::detail::stored_raw(mask[row * N + i]) != 0;
    if (pass == 0) {
      const float v = in.read();
      const float top = left_out ? -HUGE_VALF : v;
      x[i] = v;
      if (i == 0 || top > m) m = top;
    } else if (pass == 1) {
      x[i] = left_out ? 0.0f : std::exp(x[i] - m);
      s = i == 0 ? x[i] : s + x[i];
    } else {
      out.write(x[i] / s);
    }
    if (i == N - 1) {
      i = 0;
      if (pass == 2) row = row == R - 1 ? 0 : row + 1;
      pass = pass == 2 ? 0 : pass + 1;
    } else {
      i++;
    }
  }
}

// softmax_stage's stand-in for a mask: never read
static const bool no_mask[1] = {false};
}  // namespace detail

template <class T_IN, class T_OUT, class T_EXP, class T_RECIP, int ROWS, int N, int L = 1, class T_D = void, class IN,
          class EXPS, class RECIPS, int R>
void softmax_stage(IN& in, hls::stream<typename token<T_OUT, L>::type>& out, const EXPS& exp_table,
                   const RECIPS (&recip_table)[R], T_IN (&x)[N], T_EXP (&e)[N]) {
  detail::softmax_rows<T_IN, T_OUT, T_EXP, T_RECIP, ROWS, N, 1, L, false, T_D>(in, out, exp_table, recip_table,
                                                                              detail::no_mask, x, e);
}

template <class T_IN, class T_OUT, class T_EXP, class T_RECIP, int ROWS, int N, int R, int L = 1, class T_D = void,
          class IN, class EXPS, class RECIPS, int E, class M, int MN>
void masked_softmax_stage(IN& in, hls::stream<typename token<T_OUT, L>::type>& out, const EXPS& exp_table,
                          const RECIPS (&recip_table)[E], const M (&mask)[MN], T_IN (&x)[N], T_EXP (&e)[N]) {
  detail::softmax_rows<T_IN, T_OUT, T_EXP, T_RECIP, ROWS, N, R, L, true, T_D>(in, out, exp_table, recip_table, mask,
                                                                             x, e);
}

template <int ROWS, int N, class IN>
void softmax_float_stage(IN& in, hls::stream<float>& out, float (&x)[N]) {
  detail::softmax_float_rows<ROWS, N, 1, false>(in, out, detail::no_mask, x);
}

template <int ROWS, int N, int R, class IN, class M, int MN>
void masked_softmax_float_stage(IN& in, hls::stream<float>& out, const M (&mask)[MN], float (&x)[N]) {
  detail::softmax_float_rows<ROWS, N, R, true>(in, out, mask, x);
}

// --------------------------------------------------------------------------------------------------------
// argmax
// --------------------------------------------------------------------------------------------------------

namespace detail {

// The first maximum of a token's lanes (the lowest lane among equal ones) and its lane: a balanced tree of
// L - 1 comparators, where the higher half of a pair wins only when strictly greater.
template <class T, int L>
void first_max(const typename token<T, L>::type& v, T& best, int& lane) {
#pragma HLS INLINE
  T value[L];
  int at[L];
#pragma HLS ARRAY_PARTITION variable=value type=complete
#pragma HLS ARRAY_PARTITION variable=at type=complete
  for (int l = 0; l < L; ++l) {
#pragma HLS UNROLL
    value[l] = token<T, L>::get(v, l);
    at[l] = l;
  }
  for (int k = 0; k < ceil_log2(L); ++k) {
#pragma HLS UNROLL
    for (int l = 0; l < L; ++l) {
#pragma HLS UNROLL
      if (l % (2 << k) == 0 && l + (1 << k) < L && value[l + (1 << k)] > value[l]) {
        value[l] = value[l + (1 << k)];
        at[l] = at[l + (1 << k)];
      }
    }
  }
  best = value[0];
  lane = at[0];
}

// A token read by argmax_stage: its lanes are L inner positions j * L + l at axis position n, each against
// its own running maximum (INNER > 1), or L positions n * L + l along the axis against the one (INNER = 1).
template <class T, int L, int INNER>
void argmax_take(const typename token<T, L>::type& v, int n, int j, T (&best)[INNER], int (&where)[INNER],
                 std::true_type /* lanes are inner positions */) {
#pragma HLS INLINE
  for (int l = 0; l < L; ++l) {
#pragma HLS UNROLL
    const T x = token<T, L>::get(v, l);
    if (n == 0 || x > best[j * L + l]) {  // strictly greater: the first maximum wins
      best[j * L + l] = x;
      where[j * L + l] = n;
    }
  }
}

template <class T, int L, int INNER>
void argmax_take(const typename token<T, L>::type& v, int n, int, T (&best)[INNER], int (&where)[INNER],
                 std::false_type /* lanes are positions along the axis */) {
#pragma HLS INLINE
  T top;
  int lane;
  first_max<T, L>(v, top, lane);
  if (n == 0 || top > best[0]) {  // strictly greater: an earlier token's maximum wins a tie
    best[0] = top;
    where[0] = n * L + lane;
  }
}

}  // namespace detail

template <class T_IN, class T_OUT, int OUTER, int N, int INNER, int L = 1, class IN>
void argmax_stage(IN& in, hls::stream<typename token<T_OUT, (INNER > 1 ? L : 1)>::type>& out, T_IN (&best)[INNER],
                  int (&where)[INNER]) {
  const int LO = INNER > 1 ? L : 1;       // lanes of the output: the inner positions of a token
  const int J = INNER / LO;               // tokens of running maxima
  const int NT = INNER > 1 ? N : N / L;   // tokens along the axis per inner token
  static_assert(INNER % LO == 0 && (INNER > 1 || N % L == 0), "argmax_stage: whole tokens");
  int n = 0, j = 0;  // token position along the axis and in the inner block
  bool reading = true;
  for (int t = 0; t < OUTER * (NT + 1) * J; ++t) {
#pragma HLS PIPELINE II=1
    if (reading) {
      const typename token<T_IN, L>::type v = in.read();
      detail::argmax_take<T_IN, L>(v, n, j, best, where, std::integral_constant<bool, (INNER > 1)>());
    } else {
      typename token<T_OUT, LO>::type y;
      for (int l = 0; l < LO; ++l) {
#pragma HLS UNROLL
        token<T_OUT, LO>::set(y, l, T_OUT(where[j * LO + l]));
      }
      out.write(y);
    }
    if (j == J - 1) {
      j = 0;
      if (!reading) {
        reading = true;
      } else if (n == NT - 1) {
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

template <class T_IN, class T_OUT, int ROWS, int N, int K, bool INDICES, int L = 1, class IN>
void topk_stage(IN& in, hls::stream<T_OUT>& out) {
  static_assert(K >= 1 && K <= N, "topk_stage: K must be in 1..N");
  static_assert(N % L == 0, "topk_stage: a row is whole tokens");
  const int TOKENS = N / L;
  T_IN value[K] = {};  // slot p is read only once filled (p < at); {} clears only float slots, for g++
  int index[K] = {};
#pragma HLS ARRAY_PARTITION variable=value type=complete
#pragma HLS ARRAY_PARTITION variable=index type=complete
  int i = 0;  // reading: the token of the row; writing: i - TOKENS is the slot
  for (int t = 0; t < ROWS * (TOKENS + K); ++t) {
#pragma HLS PIPELINE II=1
    if (i < TOKENS) {
      const typename token<T_IN, L>::type x = in.read();
      // The token's lanes go in one after another, as L single inserts would: element at = i * L + l.
      for (int l = 0; l < L; ++l) {
#pragma HLS UNROLL
        const T_IN v = token<T_IN, L>::get(x, l);
        const int at = i * L + l;
        // Slot p is filled once p < at. The list is sorted descending and filled slots come first, so "v goes
        // before slot p" (p empty, or v strictly greater: an equal value stays ahead, having the lower index)
        // is false up to v's place and true from there on. Each slot then keeps its entry, takes v, or takes
        // its predecessor's entry; going down from the last slot reads each predecessor before it changes.
        for (int p = K - 1; p >= 0; --p) {
#pragma HLS UNROLL
          const bool before_p = p >= at || v > value[p];
          const bool before_prev = p > 0 && (p - 1 >= at || v > value[p - 1]);
          if (before_prev) {
            value[p] = value[p - 1];
            index[p] = index[p - 1];
          } else if (before_p) {
            value[p] = v;
            index[p] = at;
          }
        }
      }
    } else {
      const int p = i - TOKENS;
      out.write(INDICES ? T_OUT(index[p]) : T_OUT(value[p]));
    }
    i = i == TOKENS + K - 1 ? 0 : i + 1;
  }
}

}  // namespace hlsf

#endif  // HLSFUSE_KERNELS_OPAQUE_H
