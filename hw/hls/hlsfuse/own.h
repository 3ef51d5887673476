// hlsfuse kernel library: stages of the "own" kind that move elements: slice, pad, concat, transpose.
//
// Each is a complete stage for one frame and one loop of ITERATIONS iterations (PIPELINE II=1), the
// iteration count of the stage's schedule (hlsfuse/lower/own.py says which iteration reads and writes what;
// the kernels follow it exactly). Inputs are read in row-major order from an `in` that has read(): an
// hls::stream, or an hlsf::rom_reader over a constant operand's ROM. Shapes and per-axis parameters are
// hlsf::dims types (shape.h) of the tensor's own rank (1..6). Every output element is the exact input value
// assigned to the output type, `T_OUT(x)`. Buffers are the caller's: the stage function declares them with
// their partitioning and dependence pragmas (where the pragmas apply).
//
// Lanes: with L > 1 (the last template argument before the deduced ones, 1 when left out) every read and
// write moves a token of L consecutive innermost elements, an hlsf::lanes<T, L> (numeric.h), and the shapes
// and per-axis parameters along the innermost axis count tokens (hlsfuse.lower.own.tokens). The loops are
// the same; a token moves whole, each of its lanes assigned to T_OUT on its own. A block buffer then holds
// L elements per token (lane l of token e at e * L + l), partitioned cyclically by L by the caller, so that
// a token is L parallel accesses.
//
//   rom_reader<T, N, L, S>(rom)  a constant operand read like a stream: one token of L consecutive ROM elements
//                             (convert.h's token<T, L>::type) per read()
//
//   slice_stage<T_IN, T_OUT, IN_SHAPE, OUT_SHAPE, START, STEP, ITERATIONS, L>(in, out)
//       out[o] = in[START + o * STEP] per axis; START, STEP and OUT_SHAPE are Python's normalised slice per
//       axis (range(*slice(b, e, s).indices(n))); unsliced axes have START 0, STEP 1 and their full extent.
//       Streams: one iteration per input element, writing the picked ones.
//   slice_block_stage<T_IN, T_OUT, IN_SHAPE, OUT_SHAPE, START, STEP, B, ITERATIONS, L>(in, out, block)
//       a slice reading axis B (its first reversed axis) backwards: per index of the axes before B, read the
//       block of axes B.. into block[prod IN_SHAPE[B:] * L], then, when that index is picked, write the block's
//       picked elements in output order.
//   pad_stage<T_IN, T_OUT, IN_SHAPE, BEFORE, OUT_SHAPE, L>(in, out, fill)
//       constant padding, one iteration per output token; `fill` is the pad value already in T_OUT (a
//       padded token is L copies of it).
//   pad_block_stage<T_IN, T_OUT, IN_SHAPE, OUT_SHAPE, B, L>(in, out, block, from)
//       reflect or edge padding from axis B (the first padded one) on: per index of the axes before B, read
//       the block of axes B.. into block[prod IN_SHAPE[B:] * L], then write the padded block, output index k
//       of axis d copying input index from[OUT_SHAPE[B] + ... + OUT_SHAPE[d - 1] + k] (the schedule's tables
//       of the axes B.. one after another, so the mode's geometry is the reference's).
//   concat_stage<T_OUT, OUTER, INNER, A0, A1, ...>(out, in0, in1, ...)
//       1..8 inputs along one axis: OUTER = product of the axes before it, INNER = product of the axes after
//       it, A_i = input i's extent on it; per outer index, A_i * INNER elements of each input in turn.
//   concat_lanes_stage<T_OUT, L, OUTER, INNER, A0, A1, ...>(out, in0, in1, ...)
//       the same over tokens of L elements (INNER, or the A_i along the innermost axis, count tokens).
//   transpose_stage<T_IN, T_OUT, OUTER, IN_SHAPE, PERM, L>(in, out, block)
//       numpy.transpose of OUTER blocks of IN_SHAPE (the axes from the first moved one on) by PERM (the
//       permutation of those axes): per block, read it into block[IN_SHAPE::size() * L], then write it
//       permuted (with lanes, PERM keeps the innermost axis, whose tokens move whole).
//   upsample_stage<T_IN, T_OUT, ROWS, W, C, SH, SW, L>(in, out, row)
//       nearest NHWC upsampling: per input row (ROWS of them) of W pixels of C tokens, SH output rows of each
//       pixel SW times, one iteration per output token; the first copy of a pixel in the first output row
//       reads it, stores it in row[W * C * L] and writes it, the other copies read it back.
//   upsample_zeros_stage<T_IN, T_OUT, ROWS, W, C, SH, SW, L>(in, out)
//       zero insertion in the same loop: a pixel's first copy in the first output row is the input, every
//       other token is zero.
//
// Index counters advance with step_index instead of dividing a flat index.
#ifndef HLSFUSE_KERNELS_OWN_H
#define HLSFUSE_KERNELS_OWN_H

#include <hls_stream.h>

#include <cstddef>
#include <utility>

#include "convert.h"
#include "numeric.h"
#include "shape.h"

namespace hlsf {

// --------------------------------------------------------------------------------------------------------
// Tokens
// --------------------------------------------------------------------------------------------------------

namespace detail {

// What a channel of L lanes carries (convert.h's token).
template <class T, int L>
using token_t = typename token<T, L>::type;

// Lane l of a token: of an hlsf::lanes, or the element itself.
template <class T>
const T& lane_of(const T& x, int) {
#pragma HLS INLINE
  return x;
}

template <class T, int L>
const T& lane_of(const lanes<T, L>& x, int l) {
#pragma HLS INLINE
  return x.v[l];
}

// The token x (of L lanes of any type) with each lane assigned to T_OUT.
template <class T_OUT, int L, class X>
token_t<T_OUT, L> assign_token(const X& x) {
#pragma HLS INLINE
  token_t<T_OUT, L> y;
  for (int l = 0; l < L; ++l) {
#pragma HLS UNROLL
    token<T_OUT, L>::set(y, l, T_OUT(lane_of(x, l)));
  }
  return y;
}

}  // namespace detail

// A constant operand read like a stream: its ROM in row-major order, one token of L elements per read() (the
// caller partitions the ROM cyclically by L). S: how the ROM stores its elements (hlsf::raw's raw integers of a
// fixed-point constant, read back with hlsf::element<T>; T itself for a float constant).
template <class T, int N, int L = 1, class S = T>
struct rom_reader {
  static_assert(N % L == 0, "rom_reader: the ROM must hold whole tokens");
  const S (&rom)[N];
  int at;
  explicit rom_reader(const S (&values)[N]) : rom(values), at(0) {}
  typename token<T, L>::type read() {
#pragma HLS INLINE
    typename token<T, L>::type v;
    for (int l = 0; l < L; ++l) {
#pragma HLS UNROLL
      token<T, L>::set(v, l, element<T>(rom[at * L + l]));
    }
    at = at == N / L - 1 ? 0 : at + 1;
    return v;
  }
};

namespace detail {

// Does axis index i belong to the slice start, start + step, ... (count elements)?
inline bool slice_picks(int i, int start, int step, int count) {
#pragma HLS INLINE
  const int diff = step > 0 ? i - start : start - i;
  const int size = step > 0 ? step : -step;
  return diff >= 0 && diff % size == 0 && diff / size < count;
}

// Token e of a block held L elements per token.
template <class T, int L, int BLOCK>
void store_token(T (&block)[BLOCK], int e, const token_t<T, L>& x) {
#pragma HLS INLINE
  for (int l = 0; l < L; ++l) {
#pragma HLS UNROLL
    block[e * L + l] = token<T, L>::get(x, l);
  }
}

template <class T_OUT, int L, class T, int BLOCK>
token_t<T_OUT, L> load_token(const T (&block)[BLOCK], int e) {
#pragma HLS INLINE
  token_t<T_OUT, L> y;
  for (int l = 0; l < L; ++l) {
#pragma HLS UNROLL
    token<T_OUT, L>::set(y, l, T_OUT(block[e * L + l]));
  }
  return y;
}

}  // namespace detail

// --------------------------------------------------------------------------------------------------------
// slice
// --------------------------------------------------------------------------------------------------------

template <class T_IN, class T_OUT, class IN_SHAPE, class OUT_SHAPE, class START, class STEP, int ITERATIONS,
          int L = 1, class IN>
void slice_stage(IN& in, hls::stream<detail::token_t<T_OUT, L>>& out) {
  const int R = IN_SHAPE::rank;
  static_assert(OUT_SHAPE::rank == R && START::rank == R && STEP::rank == R,
                "slice_stage: IN_SHAPE, OUT_SHAPE, START and STEP must have the same rank");
  static_assert(ITERATIONS == IN_SHAPE::size(), "slice_stage: one iteration per input element (token of L)");
  const extents<IN_SHAPE> in_ext;
  int i[R] = {};
  for (int e = 0; e < ITERATIONS; ++e) {
#pragma HLS PIPELINE II=1
    const detail::token_t<T_IN, L> x = in.read();
    bool keep = true;
    for (int d = 0; d < R; ++d) {
#pragma HLS UNROLL
      keep = keep && detail::slice_picks(i[d], START::at(d), STEP::at(d), OUT_SHAPE::at(d));
    }
    if (keep) out.write(detail::assign_token<T_OUT, L>(x));
    step_index(i, in_ext.v, 0, R);
  }
}

template <class T_IN, class T_OUT, class IN_SHAPE, class OUT_SHAPE, class START, class STEP, int B, int ITERATIONS,
          int L = 1, class IN, int BLOCK>
void slice_block_stage(IN& in, hls::stream<detail::token_t<T_OUT, L>>& out, T_IN (&block)[BLOCK]) {
  const int R = IN_SHAPE::rank;
  const int TOKENS = IN_SHAPE::span(B, R);
  static_assert(BLOCK == TOKENS * L, "slice_block_stage: the block holds the axes from B on");
  const extents<IN_SHAPE> in_ext;
  const extents<OUT_SHAPE> out_ext;
  int outer[R] = {};  // the index of the axes before B
  int k[R] = {};      // writing: the output index within the block (axes B..)
  int e = 0;          // reading: the block token
  bool writing = false;
  for (int t = 0; t < ITERATIONS; ++t) {
#pragma HLS PIPELINE II=1
    bool keep = true;
    for (int d = 0; d < B; ++d) {
#pragma HLS UNROLL
      keep = keep && detail::slice_picks(outer[d], START::at(d), STEP::at(d), OUT_SHAPE::at(d));
    }
    if (!writing) {
      detail::store_token<T_IN, L>(block, e, in.read());
      if (e == TOKENS - 1) {
        e = 0;
        if (keep) {
          writing = true;
        } else {
          step_index(outer, in_ext.v, 0, B);
        }
      } else {
        e++;
      }
    } else {
      int at = 0;
      bool last = true;
      for (int d = B; d < R; ++d) {
#pragma HLS UNROLL
        at += (START::at(d) + k[d] * STEP::at(d)) * IN_SHAPE::stride(d);
        last = last && k[d] == OUT_SHAPE::at(d) - 1;
      }
      out.write(detail::load_token<T_OUT, L>(block, at));
      step_index(k, out_ext.v, B, R);
      if (last) {
        writing = false;
        step_index(outer, in_ext.v, 0, B);
      }
    }
  }
}

// --------------------------------------------------------------------------------------------------------
// pad
// --------------------------------------------------------------------------------------------------------

template <class T_IN, class T_OUT, class IN_SHAPE, class BEFORE, class OUT_SHAPE, int L = 1, class IN>
void pad_stage(IN& in, hls::stream<detail::token_t<T_OUT, L>>& out, const T_OUT& fill) {
  const int R = IN_SHAPE::rank;
  static_assert(BEFORE::rank == R && OUT_SHAPE::rank == R, "pad_stage: shapes and BEFORE must have the same rank");
  const extents<OUT_SHAPE> out_ext;
  int o[R] = {};
  for (int e = 0; e < OUT_SHAPE::size(); ++e) {
#pragma HLS PIPELINE II=1
    bool inside = true;
    for (int d = 0; d < R; ++d) {
#pragma HLS UNROLL
      inside = inside && o[d] >= BEFORE::at(d) && o[d] < BEFORE::at(d) + IN_SHAPE::at(d);
    }
    detail::token_t<T_OUT, L> v;
    if (inside) {
      v = detail::assign_token<T_OUT, L>(in.read());
    } else {
      for (int l = 0; l < L; ++l) {
#pragma HLS UNROLL
        token<T_OUT, L>::set(v, l, fill);
      }
    }
    out.write(v);
    step_index(o, out_ext.v, 0, R);
  }
}

namespace detail {

// The sum of the extents of axes first.. of S: the length of pad_block_stage's tables.
template <class S>
constexpr int extent_sum(int first) {
  int n = 0;
  for (int i = first; i < S::rank; ++i) n += S::at(i);
  return n;
}

}  // namespace detail

template <class T_IN, class T_OUT, class IN_SHAPE, class OUT_SHAPE, int B, int L = 1, class IN, int BLOCK, int FROM>
void pad_block_stage(IN& in, hls::stream<detail::token_t<T_OUT, L>>& out, T_IN (&block)[BLOCK],
                     const int (&from)[FROM]) {
  const int R = IN_SHAPE::rank;
  const int TOKENS = IN_SHAPE::span(B, R);
  const int OUT_TOKENS = OUT_SHAPE::span(B, R);
  static_assert(OUT_SHAPE::rank == R, "pad_block_stage: IN_SHAPE and OUT_SHAPE must have the same rank");
  static_assert(BLOCK == TOKENS * L, "pad_block_stage: the block holds the axes from B on");
  static_assert(FROM == detail::extent_sum<OUT_SHAPE>(B), "pad_block_stage: one entry per output index of axes B..");
  const extents<OUT_SHAPE> out_ext;
  int k[R] = {};  // writing: the output index within the block (axes B..)
  int e = 0;      // reading: the block token
  bool writing = false;
  for (int t = 0; t < IN_SHAPE::span(0, B) * (TOKENS + OUT_TOKENS); ++t) {
#pragma HLS PIPELINE II=1
    if (!writing) {
      detail::store_token<T_IN, L>(block, e, in.read());
      writing = e == TOKENS - 1;
      e = writing ? 0 : e + 1;
    } else {
      int at = 0;
      int table = 0;  // where axis d's table starts in `from`
      bool last = true;
      for (int d = B; d < R; ++d) {
#pragma HLS UNROLL
        at += from[table + k[d]] * IN_SHAPE::stride(d);
        table += OUT_SHAPE::at(d);
        last = last && k[d] == OUT_SHAPE::at(d) - 1;
      }
      out.write(detail::load_token<T_OUT, L>(block, at));
      step_index(k, out_ext.v, B, R);
      writing = !last;
    }
  }
}

// --------------------------------------------------------------------------------------------------------
// upsample
// --------------------------------------------------------------------------------------------------------

namespace detail {

// The next (row copy r, pixel w, pixel copy k, token c) of an upsampling loop, c fastest.
template <int W, int C, int SH, int SW>
void upsample_step(int& r, int& w, int& k, int& c) {
#pragma HLS INLINE
  if (c < C - 1) {
    c++;
    return;
  }
  c = 0;
  if (k < SW - 1) {
    k++;
    return;
  }
  k = 0;
  if (w < W - 1) {
    w++;
    return;
  }
  w = 0;
  r = r == SH - 1 ? 0 : r + 1;
}

}  // namespace detail

template <class T_IN, class T_OUT, int ROWS, int W, int C, int SH, int SW, int L = 1, class IN, int ROW>
void upsample_stage(IN& in, hls::stream<detail::token_t<T_OUT, L>>& out, T_IN (&row)[ROW]) {
  static_assert(ROW == W * C * L, "upsample_stage: the row buffer holds one input row");
  int r = 0, w = 0, k = 0, c = 0;
  for (int t = 0; t < ROWS * SH * W * SW * C; ++t) {
#pragma HLS PIPELINE II=1
    const int e = w * C + c;
    if (r == 0 && k == 0) {
      const detail::token_t<T_IN, L> x = in.read();
      detail::store_token<T_IN, L>(row, e, x);
      out.write(detail::assign_token<T_OUT, L>(x));
    } else {
      out.write(detail::load_token<T_OUT, L>(row, e));
    }
    detail::upsample_step<W, C, SH, SW>(r, w, k, c);
  }
}

template <class T_IN, class T_OUT, int ROWS, int W, int C, int SH, int SW, int L = 1, class IN>
void upsample_zeros_stage(IN& in, hls::stream<detail::token_t<T_OUT, L>>& out) {
  int r = 0, w = 0, k = 0, c = 0;
  for (int t = 0; t < ROWS * SH * W * SW * C; ++t) {
#pragma HLS PIPELINE II=1
    detail::token_t<T_OUT, L> v;
    if (r == 0 && k == 0) {
      v = detail::assign_token<T_OUT, L>(in.read());
    } else {
      for (int l = 0; l < L; ++l) {
#pragma HLS UNROLL
        token<T_OUT, L>::set(v, l, T_OUT(0));
      }
    }
    out.write(v);
    detail::upsample_step<W, C, SH, SW>(r, w, k, c);
  }
}

// --------------------------------------------------------------------------------------------------------
// concat
// --------------------------------------------------------------------------------------------------------

namespace detail {

template <int... A>
constexpr int int_sum() {
  const int v[] = {A...};
  int s = 0;
  for (int a : v) s += a;
  return s;
}

template <class T_OUT, int L, class IN>
void read_if(bool take, IN& in, token_t<T_OUT, L>& v) {
#pragma HLS INLINE
  if (take) v = assign_token<T_OUT, L>(in.read());
}

// v = the token of in_part.read() in T_OUT: one guarded read per input, only the selected one happens.
template <class T_OUT, int L, class... IN, std::size_t... P>
void read_part(int part, token_t<T_OUT, L>& v, std::index_sequence<P...>, IN&... in) {
#pragma HLS INLINE
  const int unused[] = {(read_if<T_OUT, L>(part == static_cast<int>(P), in, v), 0)...};
  (void)unused;
}

}  // namespace detail

template <class T_OUT, int L, int OUTER, int INNER, int... A, class... IN>
void concat_lanes_stage(hls::stream<detail::token_t<T_OUT, L>>& out, IN&... in) {
  const int N = sizeof...(IN);
  static_assert(N >= 1 && N <= 8, "concat_stage: 1..8 inputs");
  static_assert(sizeof...(A) == N, "concat_stage: one extent A_i per input");
  const int block[] = {(A * INNER)...};
  const int ROW = detail::int_sum<A...>() * INNER;

  int part = 0;         // the input being copied
  int left = block[0];  // its tokens still to copy for this outer index
  for (int e = 0; e < OUTER * ROW; ++e) {
#pragma HLS PIPELINE II=1
    detail::token_t<T_OUT, L> v = detail::token_t<T_OUT, L>();
    detail::read_part<T_OUT, L>(part, v, std::index_sequence_for<IN...>(), in...);
    out.write(v);
    if (left == 1) {
      part = part + 1 == N ? 0 : part + 1;
      left = block[part];
    } else {
      left -= 1;
    }
  }
}

template <class T_OUT, int OUTER, int INNER, int... A, class... IN>
void concat_stage(hls::stream<T_OUT>& out, IN&... in) {
#pragma HLS INLINE
  concat_lanes_stage<T_OUT, 1, OUTER, INNER, A...>(out, in...);
}

// --------------------------------------------------------------------------------------------------------
// transpose
// --------------------------------------------------------------------------------------------------------

template <class T_IN, class T_OUT, int OUTER, class IN_SHAPE, class PERM, int L = 1, class IN, int BLOCK>
void transpose_stage(IN& in, hls::stream<detail::token_t<T_OUT, L>>& out, T_IN (&block)[BLOCK]) {
  const int R = IN_SHAPE::rank;
  const int TOKENS = IN_SHAPE::size();
  static_assert(PERM::rank == R, "transpose_stage: PERM must have one entry per axis");
  static_assert(BLOCK == TOKENS * L, "transpose_stage: the block holds IN_SHAPE");
  static_assert(L == 1 || PERM::at(R - 1) == R - 1, "transpose_stage: tokens need the innermost axis kept");
  int out_ext[R];
  int from_stride[R];  // the input stride of output axis d
#pragma HLS ARRAY_PARTITION variable=out_ext type=complete
#pragma HLS ARRAY_PARTITION variable=from_stride type=complete
  for (int d = 0; d < R; ++d) {
#pragma HLS UNROLL
    out_ext[d] = IN_SHAPE::at(PERM::at(d));
    from_stride[d] = IN_SHAPE::stride(PERM::at(d));
  }
  int o[R] = {};
  int e = 0;
  bool writing = false;
  for (int t = 0; t < 2 * OUTER * TOKENS; ++t) {
#pragma HLS PIPELINE II=1
    if (!writing) {
      detail::store_token<T_IN, L>(block, e, in.read());
    } else {
      int at = 0;
      for (int d = 0; d < R; ++d) {
#pragma HLS UNROLL
        at += o[d] * from_stride[d];
      }
      out.write(detail::load_token<T_OUT, L>(block, at));
      step_index(o, out_ext, 0, R);
    }
    if (e == TOKENS - 1) {
      e = 0;
      writing = !writing;
    } else {
      e++;
    }
  }
}

}  // namespace hlsf

#endif  // HLSFUSE_KERNELS_OWN_H
