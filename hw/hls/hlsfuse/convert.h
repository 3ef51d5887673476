// hlsfuse kernel library: the width converter, a stage re-packing a channel's tokens of A lanes into tokens of B.
//
//   token<T, L>::type            what a channel of L lanes carries: T itself for one lane, else hlsf::lanes<T, L>
//   token<T, L>::get(t, l), set(t, l, x)   lane l of a token
//   convert_stage<T, A, B, ITERATIONS>(in, out)
//       one frame of the gearbox of hlsfuse/lower/schedule.py (ConvertMain): per iteration, read a token of A
//       elements when fewer than B elements wait, then write a token of B when B do. It runs max(tokens in,
//       tokens out) iterations; at most max(A, B) - gcd(A, B) elements wait between iterations, in registers.
//       Any two widths work (both divide the frame's elements, so no frame sees another's elements).
#ifndef HLSFUSE_KERNELS_CONVERT_H
#define HLSFUSE_KERNELS_CONVERT_H

#include <hls_stream.h>

#include "numeric.h"

namespace hlsf {

template <class T, int L>
struct token {
  typedef lanes<T, L> type;
  static T get(const type& t, int l) {
#pragma HLS INLINE
    return t.v[l];
  }
  static void set(type& t, int l, const T& x) {
#pragma HLS INLINE
    t.v[l] = x;
  }
};

template <class T>
struct token<T, 1> {
  typedef T type;
  static T get(const T& t, int) {
#pragma HLS INLINE
    return t;
  }
  static void set(T& t, int, const T& x) {
#pragma HLS INLINE
    t = x;
  }
};

namespace detail {

constexpr int gcd(int a, int b) {
  while (b != 0) {
    const int r = a % b;
    a = b;
    b = r;
  }
  return a;
}

}  // namespace detail

template <class T, int A, int B, int ITERATIONS>
void convert_stage(hls::stream<typename token<T, A>::type>& in, hls::stream<typename token<T, B>::type>& out) {
#pragma HLS INLINE
  static_assert(A >= 1 && B >= 1 && A != B, "convert_stage: two different widths");
  const int KEPT = (A > B ? A : B) - detail::gcd(A, B);
  const int V = A + B - 1;  // the kept elements, then the token read: fewer than B + A
  T kept[KEPT];
#pragma HLS ARRAY_PARTITION variable=kept type=complete dim=0
  int fill = 0;  // elements kept, a multiple of gcd(A, B)
  for (int t = 0; t < ITERATIONS; ++t) {
#pragma HLS PIPELINE II=1
    const bool reads = fill < B;
    typename token<T, A>::type in_token = typename token<T, A>::type();
    if (reads) in_token = in.read();
    T v[V];
#pragma HLS ARRAY_PARTITION variable=v type=complete dim=0
    for (int l = 0; l < V; ++l) {
#pragma HLS UNROLL
      const int j = l - fill;
      if (l < fill) {
        v[l] = kept[l < KEPT ? l : KEPT - 1];
      } else if (reads && j < A) {
        v[l] = token<T, A>::get(in_token, j);
      } else {
        v[l] = T();
      }
    }
    const int have = fill + (reads ? A : 0);
    const int shift = have >= B ? B : 0;
    if (shift) {
      typename token<T, B>::type out_token;
      for (int l = 0; l < B; ++l) {
#pragma HLS UNROLL
        token<T, B>::set(out_token, l, v[l]);
      }
      out.write(out_token);
    }
    for (int l = 0; l < KEPT; ++l) {
#pragma HLS UNROLL
      kept[l] = l + shift < V ? v[l + shift < V ? l + shift : V - 1] : T();
    }
    fill = have - shift;
  }
}

}  // namespace hlsf

#endif  // HLSFUSE_KERNELS_CONVERT_H
