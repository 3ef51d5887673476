// hlsfuse kernel library: compile-time tensor shapes and row-major index counters.
//
// A stream carries one tensor in row-major order of its shape (DESIGN.md section 2). Kernels that reorder,
// select or insert elements take their shapes as types, so that every extent is a compile-time constant:
//
//   hlsf::dims<D0, ..., Dr-1>   rank 1..6 (a scalar stream is dims<1>); the generator writes the tensor's
//                               shape as is, e.g. dims<1, 8, 8, 16>. Also used for per-axis parameters
//                               (slice starts and steps, pad widths, a permutation), which may be negative.
//     ::rank, at(i), size(), stride(i)   (constexpr; stride(i) = product of the extents after axis i)
//
//   hlsf::step_index<R>(idx, extent, first, last)
//                               advance the row-major counter idx[first..last-1] by one element over the
//                               extents extent[first..last-1] (the last axis moves fastest, wrapping to 0).
//                               Used inside II=1 loops instead of dividing a flat index.
#ifndef HLSFUSE_KERNELS_SHAPE_H
#define HLSFUSE_KERNELS_SHAPE_H

namespace hlsf {

const int kMaxRank = 6;

template <int... D>
struct dims {
  static const int rank = sizeof...(D);
  static_assert(rank >= 1 && rank <= kMaxRank, "hlsf::dims: rank must be 1..6");

  static constexpr int at(int i) {
    const int v[] = {D...};
    return v[i];
  }
  static constexpr int size() {
    int n = 1;
    for (int i = 0; i < rank; ++i) n *= at(i);
    return n;
  }
  static constexpr int stride(int i) {
    int s = 1;
    for (int j = i + 1; j < rank; ++j) s *= at(j);
    return s;
  }
  // Product of the extents of axes first..last-1 (1 for an empty range).
  static constexpr int span(int first, int last) {
    int n = 1;
    for (int i = first; i < last; ++i) n *= at(i);
    return n;
  }
};

template <int... D>
const int dims<D...>::rank;

// Advance a row-major counter over axes first..last-1; axes outside that range are left alone.
template <int R>
void step_index(int (&idx)[R], const int (&extent)[R], int first, int last) {
#pragma HLS INLINE
  bool carry = true;
  for (int d = R - 1; d >= 0; --d) {
#pragma HLS UNROLL
    if (carry && d >= first && d < last) {
      if (idx[d] + 1 == extent[d]) {
        idx[d] = 0;
      } else {
        idx[d] += 1;
        carry = false;
      }
    }
  }
}

// The extents of a dims type as an array (constants once the stage is synthesized).
template <class S>
struct extents {
  int v[S::rank];
  extents() {
#pragma HLS ARRAY_PARTITION variable=v type=complete
    for (int d = 0; d < S::rank; ++d) v[d] = S::at(d);
  }
};

}  // namespace hlsf

#endif  // HLSFUSE_KERNELS_SHAPE_H
