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
//   slice_stage<T_IN, T_OUT, IN_SHAPE, OUT_SHAPE, START, STEP, ITERATIONS>(in, out)
//       out[o] = in[START + o * STEP] per axis; START, STEP and OUT_SHAPE are Python's normalised slice per
//       axis (range(*slice(b, e, s).indices(n))); unsliced axes have START 0, STEP 1 and their full extent.
//       Streams: one iteration per input element, writing the picked ones.
//   slice_block_stage<T_IN, T_OUT, IN_SHAPE, OUT_SHAPE, START, STEP, B, ITERATIONS>(in, out, block)
//       a slice reading axis B (its first reversed axis) backwards: per index of the axes before B, read the
//       block of axes B.. into block[prod IN_SHAPE[B:]], then, when that index is picked, write the block's
//       picked elements in output order.
//   pad_stage<T_IN, T_OUT, IN_SHAPE, BEFORE, OUT_SHAPE>(in, out, fill)
//       constant padding, one iteration per output element; `fill` is the pad value already in T_OUT.
//   concat_stage<T_OUT, OUTER, INNER, A0, A1, ...>(out, in0, in1, ...)
//       1..8 inputs along one axis: OUTER = product of the axes before it, INNER = product of the axes after
//       it, A_i = input i's extent on it; per outer index, A_i * INNER elements of each input in turn.
//   transpose_stage<T_IN, T_OUT, OUTER, IN_SHAPE, PERM>(in, out, block)
//       numpy.transpose of OUTER blocks of IN_SHAPE (the axes from the first moved one on) by PERM (the
//       permutation of those axes): per block, read it into block[IN_SHAPE::size()], then write it permuted.
//
// Index counters advance with step_index instead of dividing a flat index.
#ifndef HLSFUSE_KERNELS_OWN_H
#define HLSFUSE_KERNELS_OWN_H

#include <hls_stream.h>

#include <cstddef>
#include <utility>

#include "shape.h"

namespace hlsf {

// A constant operand read like a stream: its ROM in row-major order, one element per read().
template <class T, int N>
struct rom_reader {
  const T (&rom)[N];
  int at;
  explicit rom_reader(const T (&values)[N]) : rom(values), at(0) {}
  T read() {
#pragma HLS INLINE
    const T v = rom[at];
    at = at == N - 1 ? 0 : at + 1;
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

}  // namespace detail

// --------------------------------------------------------------------------------------------------------
// slice
// --------------------------------------------------------------------------------------------------------

template <class T_IN, class T_OUT, class IN_SHAPE, class OUT_SHAPE, class START, class STEP, int ITERATIONS, class IN>
void slice_stage(IN& in, hls::stream<T_OUT>& out) {
  const int R = IN_SHAPE::rank;
  static_assert(OUT_SHAPE::rank == R && START::rank == R && STEP::rank == R,
                "slice_stage: IN_SHAPE, OUT_SHAPE, START and STEP must have the same rank");
  static_assert(ITERATIONS == IN_SHAPE::size(), "slice_stage: one iteration per input element");
  const extents<IN_SHAPE> in_ext;
  int i[R] = {};
  for (int e = 0; e < ITERATIONS; ++e) {
#pragma HLS PIPELINE II=1
    const T_IN x = in.read();
    bool keep = true;
    for (int d = 0; d < R; ++d) {
#pragma HLS UNROLL
      keep = keep && detail::slice_picks(i[d], START::at(d), STEP::at(d), OUT_SHAPE::at(d));
    }
    if (keep) out.write(T_OUT(x));
    step_index(i, in_ext.v, 0, R);
  }
}

template <class T_IN, class T_OUT, class IN_SHAPE, class OUT_SHAPE, class START, class STEP, int B, int ITERATIONS,
          class IN, int BLOCK>
void slice_block_stage(IN& in, hls::stream<T_OUT>& out, T_IN (&block)[BLOCK]) {
  const int R = IN_SHAPE::rank;
  static_assert(BLOCK == IN_SHAPE::span(B, R), "slice_block_stage: the block holds the axes from B on");
  const extents<IN_SHAPE> in_ext;
  const extents<OUT_SHAPE> out_ext;
  int outer[R] = {};  // the index of the axes before B
  int k[R] = {};      // writing: the output index within the block (axes B..)
  int e = 0;          // reading: the block element
  bool writing = false;
  for (int t = 0; t < ITERATIONS; ++t) {
#pragma HLS PIPELINE II=1
    bool keep = true;
    for (int d = 0; d < B; ++d) {
#pragma HLS UNROLL
      keep = keep && detail::slice_picks(outer[d], START::at(d), STEP::at(d), OUT_SHAPE::at(d));
    }
    if (!writing) {
      block[e] = in.read();
      if (e == BLOCK - 1) {
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
      out.write(T_OUT(block[at]));
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

template <class T_IN, class T_OUT, class IN_SHAPE, class BEFORE, class OUT_SHAPE, class IN>
void pad_stage(IN& in, hls::stream<T_OUT>& out, const T_OUT& fill) {
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
    T_OUT v = fill;
    if (inside) v = T_OUT(in.read());
    out.write(v);
    step_index(o, out_ext.v, 0, R);
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

template <class T_OUT, class IN>
void read_if(bool take, IN& in, T_OUT& v) {
#pragma HLS INLINE
  if (take) v = T_OUT(in.read());
}

// v = T_OUT(in_part.read()): one guarded read per input, only the selected one happens.
template <class T_OUT, class... IN, std::size_t... P>
void read_part(int part, T_OUT& v, std::index_sequence<P...>, IN&... in) {
#pragma HLS INLINE
  const int unused[] = {(read_if(part == static_cast<int>(P), in, v), 0)...};
  (void)unused;
}

}  // namespace detail

template <class T_OUT, int OUTER, int INNER, int... A, class... IN>
void concat_stage(hls::stream<T_OUT>& out, IN&... in) {
  const int N = sizeof...(IN);
  static_assert(N >= 1 && N <= 8, "concat_stage: 1..8 inputs");
  static_assert(sizeof...(A) == N, "concat_stage: one extent A_i per input");
  const int block[] = {(A * INNER)...};
  const int ROW = detail::int_sum<A...>() * INNER;

  int part = 0;         // the input being copied
  int left = block[0];  // its elements still to copy for this outer index
  for (int e = 0; e < OUTER * ROW; ++e) {
#pragma HLS PIPELINE II=1
    T_OUT v = T_OUT();
    detail::read_part(part, v, std::index_sequence_for<IN...>(), in...);
    out.write(v);
    if (left == 1) {
      part = part + 1 == N ? 0 : part + 1;
      left = block[part];
    } else {
      left -= 1;
    }
  }
}

// --------------------------------------------------------------------------------------------------------
// transpose
// --------------------------------------------------------------------------------------------------------

template <class T_IN, class T_OUT, int OUTER, class IN_SHAPE, class PERM, class IN, int BLOCK>
void transpose_stage(IN& in, hls::stream<T_OUT>& out, T_IN (&block)[BLOCK]) {
  const int R = IN_SHAPE::rank;
  static_assert(PERM::rank == R, "transpose_stage: PERM must have one entry per axis");
  static_assert(BLOCK == IN_SHAPE::size(), "transpose_stage: the block holds IN_SHAPE");
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
  for (int t = 0; t < 2 * OUTER * BLOCK; ++t) {
#pragma HLS PIPELINE II=1
    if (!writing) {
      block[e] = in.read();
    } else {
      int at = 0;
      for (int d = 0; d < R; ++d) {
#pragma HLS UNROLL
        at += o[d] * from_stride[d];
      }
      out.write(T_OUT(block[at]));
      step_index(o, out_ext, 0, R);
    }
    if (e == BLOCK - 1) {
      e = 0;
      writing = !writing;
    } else {
      e++;
    }
  }
}

}  // namespace hlsf

#endif  // HLSFUSE_KERNELS_OWN_H
