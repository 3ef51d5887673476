// hlsfuse kernel library: stages of the "own" kind that move elements: slice, pad, concat, transpose.
//
// Each is a complete stage function for one frame: it reads its input stream(s) in row-major order and
// writes the output tensor in row-major order. Shapes and per-axis parameters are hlsf::dims types (shape.h)
// of the tensor's own rank (1..6). Element types are template parameters; every output element is the exact
// input value assigned to the output type, `T_OUT(x)` (hlsfuse's injective ops: a no-op when the types are
// equal; ap_fixed rounds and saturates otherwise, exactly like hlsfuse.types.assign).
//
//   slice_stage<T_IN, T_OUT, IN_SHAPE, OUT_SHAPE, START, STEP, TAG = 0>(in, out)
//       out[o] = in[START + o * STEP] per axis, STEP != 0 (negative steps read backwards). START, STEP and
//       OUT_SHAPE are Python's normalised slice per axis: range(*slice(b, e, s).indices(n)) gives START =
//       its start, STEP = its step and OUT_SHAPE = its length; unsliced axes have START 0, STEP 1 and their
//       full extent. Without a reversed axis (negative step and more than one output element) the stage
//       streams, keeping nothing. Otherwise it buffers the block of input axes from the first reversed axis
//       B inwards (prod IN_SHAPE[B:] elements), once per index of the outer axes.
//   pad_stage<T_IN, T_OUT, IN_SHAPE, BEFORE, OUT_SHAPE>(in, out, fill)
//       constant padding, BEFORE the pads before each axis; OUT_SHAPE = IN_SHAPE + before + after. `fill` is
//       the pad value already in T_OUT (hlsfuse: the attribute `value` as T_OUT with RND, SAT). Streams.
//   concat_stage<T_OUT, OUTER, INNER, A0, A1, ...>(out, in0, in1, ...)
//       concat of 1..8 inputs along one axis: OUTER = product of the axes before it, INNER = product of the
//       axes after it, A_i = input i's extent on the axis. For each outer index it copies A_i * INNER
//       elements of each input in turn. The output stream comes first (the inputs are a parameter pack and
//       may have different element types). Streams (no storage); a reader of several channels in turn, so
//       the lowering must size those FIFOs (the blocks of later inputs wait).
//   transpose_stage<T_IN, T_OUT, IN_SHAPE, PERM, TAG = 0>(in, out)
//   (TAG: a distinct value per calling stage gives each its own static buffer, as DATAFLOW processes need)
//       out[o] = in[i] with i[PERM[d]] = o[d] (numpy.transpose(x, PERM)); a frame buffer of IN_SHAPE's size.
//
// Every loop moves one element per cycle (PIPELINE II=1). Index counters advance with step_index instead
// of dividing a flat index.
#ifndef HLSFUSE_KERNELS_OWN_H
#define HLSFUSE_KERNELS_OWN_H

#include <hls_stream.h>

#include <cstddef>
#include <type_traits>
#include <utility>

#include "shape.h"

namespace hlsf {

namespace detail {

// Does axis index i belong to the slice start, start + step, ... (count elements)?
inline bool slice_picks(int i, int start, int step, int count) {
  const int diff = step > 0 ? i - start : start - i;
  const int size = step > 0 ? step : -step;
  return diff >= 0 && diff % size == 0 && diff / size < count;
}

// The first axis read backwards (a negative step and more than one element), or the rank if none.
template <class OUT_SHAPE, class STEP>
constexpr int first_reversed_axis() {
  for (int d = 0; d < OUT_SHAPE::rank; ++d) {
    if (STEP::at(d) < 0 && OUT_SHAPE::at(d) > 1) return d;
  }
  return OUT_SHAPE::rank;
}

}  // namespace detail

// --------------------------------------------------------------------------------------------------------
// slice
// --------------------------------------------------------------------------------------------------------

namespace detail {

// Stream order is kept: pass on the elements picked on every axis.
template <class T_IN, class T_OUT, class IN_SHAPE, class OUT_SHAPE, class START, class STEP>
void slice_streaming(hls::stream<T_IN>& in, hls::stream<T_OUT>& out) {
  const int R = IN_SHAPE::rank;
  const extents<IN_SHAPE> in_ext;
  int i[R] = {};
  for (int e = 0; e < IN_SHAPE::size(); ++e) {
#pragma HLS PIPELINE II=1
    const T_IN x = in.read();
    bool keep = true;
    for (int d = 0; d < R; ++d) {
#pragma HLS UNROLL
      keep = keep && slice_picks(i[d], START::at(d), STEP::at(d), OUT_SHAPE::at(d));
    }
    if (keep) out.write(T_OUT(x));
    step_index(i, in_ext.v, 0, R);
  }
}

// Axes B.. are read backwards: hold one block of them per index of the outer axes, then emit the block's
// picked elements in output order (when the outer index is picked too).
template <class T_IN, class T_OUT, class IN_SHAPE, class OUT_SHAPE, class START, class STEP, int B, int TAG>
void slice_buffered(hls::stream<T_IN>& in, hls::stream<T_OUT>& out) {
  const int R = IN_SHAPE::rank;
  const int BLOCK = IN_SHAPE::span(B, R);
  const extents<IN_SHAPE> in_ext;
  const extents<OUT_SHAPE> out_ext;
  static T_IN block[BLOCK];  // static: a block can be larger than a C simulation's stack
  int outer[R] = {};
  for (int o = 0; o < IN_SHAPE::span(0, B); ++o) {
    bool keep = true;
    for (int d = 0; d < B; ++d) {
#pragma HLS UNROLL
      keep = keep && slice_picks(outer[d], START::at(d), STEP::at(d), OUT_SHAPE::at(d));
    }
    for (int e = 0; e < BLOCK; ++e) {
#pragma HLS PIPELINE II=1
      block[e] = in.read();
    }
    if (keep) {
      int k[R] = {};
      for (int e = 0; e < OUT_SHAPE::span(B, R); ++e) {
#pragma HLS PIPELINE II=1
        int at = 0;
        for (int d = B; d < R; ++d) {
#pragma HLS UNROLL
          at += (START::at(d) + k[d] * STEP::at(d)) * IN_SHAPE::stride(d);
        }
        out.write(T_OUT(block[at]));
        step_index(k, out_ext.v, B, R);
      }
    }
    step_index(outer, in_ext.v, 0, B);
  }
}

template <class T_IN, class T_OUT, class IN_SHAPE, class OUT_SHAPE, class START, class STEP, int B, int TAG>
void slice(hls::stream<T_IN>& in, hls::stream<T_OUT>& out, std::true_type /* streams */) {
  slice_streaming<T_IN, T_OUT, IN_SHAPE, OUT_SHAPE, START, STEP>(in, out);
}
template <class T_IN, class T_OUT, class IN_SHAPE, class OUT_SHAPE, class START, class STEP, int B, int TAG>
void slice(hls::stream<T_IN>& in, hls::stream<T_OUT>& out, std::false_type /* streams */) {
  slice_buffered<T_IN, T_OUT, IN_SHAPE, OUT_SHAPE, START, STEP, B, TAG>(in, out);
}

}  // namespace detail

template <class T_IN, class T_OUT, class IN_SHAPE, class OUT_SHAPE, class START, class STEP, int TAG = 0>
void slice_stage(hls::stream<T_IN>& in, hls::stream<T_OUT>& out) {
  const int R = IN_SHAPE::rank;
  static_assert(OUT_SHAPE::rank == R && START::rank == R && STEP::rank == R,
                "slice_stage: IN_SHAPE, OUT_SHAPE, START and STEP must have the same rank");
  const int B = detail::first_reversed_axis<OUT_SHAPE, STEP>();
  detail::slice<T_IN, T_OUT, IN_SHAPE, OUT_SHAPE, START, STEP, B, TAG>(in, out,
                                                                     std::integral_constant<bool, B == R>());
}

// --------------------------------------------------------------------------------------------------------
// pad
// --------------------------------------------------------------------------------------------------------

template <class T_IN, class T_OUT, class IN_SHAPE, class BEFORE, class OUT_SHAPE>
void pad_stage(hls::stream<T_IN>& in, hls::stream<T_OUT>& out, const T_OUT& fill) {
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

template <class T_OUT, class T_IN>
void read_if(bool take, hls::stream<T_IN>& in, T_OUT& v) {
#pragma HLS INLINE
  if (take) v = T_OUT(in.read());
}

// v = T_OUT(in_part.read()): one guarded read per input, only the selected one happens.
template <class T_OUT, class... T_IN, std::size_t... P>
void read_part(int part, T_OUT& v, std::index_sequence<P...>, hls::stream<T_IN>&... in) {
#pragma HLS INLINE
  const int unused[] = {(read_if(part == static_cast<int>(P), in, v), 0)...};
  (void)unused;
}

}  // namespace detail

template <class T_OUT, int OUTER, int INNER, int... A, class... T_IN>
void concat_stage(hls::stream<T_OUT>& out, hls::stream<T_IN>&... in) {
  const int N = sizeof...(T_IN);
  static_assert(N >= 1 && N <= 8, "concat_stage: 1..8 inputs");
  static_assert(sizeof...(A) == N, "concat_stage: one extent A_i per input");
  const int block[] = {(A * INNER)...};
  const int ROW = detail::int_sum<A...>() * INNER;

  int part = 0;         // the input being copied
  int left = block[0];  // its elements still to copy for this outer index
  for (int e = 0; e < OUTER * ROW; ++e) {
#pragma HLS PIPELINE II=1
    T_OUT v = T_OUT();
    detail::read_part(part, v, std::index_sequence_for<T_IN...>(), in...);
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

template <class T_IN, class T_OUT, class IN_SHAPE, class PERM, int TAG = 0>
void transpose_stage(hls::stream<T_IN>& in, hls::stream<T_OUT>& out) {
  const int R = IN_SHAPE::rank;
  const int SIZE = IN_SHAPE::size();
  static_assert(PERM::rank == R, "transpose_stage: PERM must have one entry per axis");
  static T_IN frame[SIZE];  // static: a frame can be larger than a C simulation's stack
  for (int e = 0; e < SIZE; ++e) {
#pragma HLS PIPELINE II=1
    frame[e] = in.read();
  }
  int out_ext[R];
  int from_stride[R];  // the input stride of output axis d
#pragma HLS ARRAY_PARTITION variable=out_ext complete
#pragma HLS ARRAY_PARTITION variable=from_stride complete
  for (int d = 0; d < R; ++d) {
#pragma HLS UNROLL
    out_ext[d] = IN_SHAPE::at(PERM::at(d));
    from_stride[d] = IN_SHAPE::stride(PERM::at(d));
  }
  int o[R] = {};
  for (int e = 0; e < SIZE; ++e) {
#pragma HLS PIPELINE II=1
    int at = 0;
    for (int d = 0; d < R; ++d) {
#pragma HLS UNROLL
      at += o[d] * from_stride[d];
    }
    out.write(T_OUT(frame[at]));
    step_index(o, out_ext, 0, R);
  }
}

}  // namespace hlsf

#endif  // HLSFUSE_KERNELS_OWN_H
