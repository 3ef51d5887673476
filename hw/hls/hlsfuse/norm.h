// hlsfuse kernel library: stages of the "own" kind that normalise the last axis: layer_norm and rms_norm.
//
// Bit-exact with hlsfuse/ops/norm.py (docs/numerics.md section 9), one loop (PIPELINE II=1) with the iterations of
// its schedule (hlsfuse/lower/own_opaque.py, NormMain). `in` has read() (an hls::stream); gamma and beta are
// hlsf::rom_readers of the nodes' constants, read once per output element (they wrap at each row); the row buffer
// x is the caller's, declared with its partitioning. With L > 1 every read moves a token of L consecutive elements
// (convert.h's token<T, L>::type), a row is N / L iterations per pass, x is partitioned cyclically by L.
//
//   layer_norm_stage<T_IN, T_OUT, T_NORM, T_GAMMA, T_BETA, T_ENTRY, ROWS, N, E, V_BITS, L>(in, gamma, beta, out,
//                                                                                     rsqrt_table, x)
//   rms_norm_stage<T_IN, T_OUT, T_NORM, T_GAMMA, T_ENTRY, ROWS, N, E, V_BITS, L>(in, gamma, out, rsqrt_table, x)
//       per row of N elements (ROWS = the product of the other axes), two passes of N / L iterations:
//         read:   x[i] = in;  S1 += x, S2 += x * x  (exact: sum_t, a token's lanes by a tree of adders first)
//         write:  V = N S2 - S1^2 + E (rms_norm: N S2 + E; E the op's epsilon term, V < 2^V_BITS <= 2^63),
//                 (R, e) = rsqrt(V) (norm_rsqrt below), per element n = T_NORM((N X - S1) R 2^-(24 + e)) (the
//                 exact product, assigned once), y = T_OUT(n * gamma + beta) (exact, assigned once).
//       rsqrt_table is hlsfuse.ops.norm.rsqrt_table() (luts.h), of T_ENTRY values or their raw integers.
//   layer_norm_float_stage<ROWS, N>(in, gamma, beta, out, x, epsilon)
//   rms_norm_float_stage<ROWS, N>(in, gamma, out, x, epsilon)
//       float32: in double, y = (x - mean) / sqrt(var + epsilon) * gamma + beta over three passes (read and sum;
//       the squared deviations from the mean; write), rms_norm y = x / sqrt(mean(x^2) + epsilon) * gamma over two,
//       compared with a tolerance as float results are; no lanes (a sum depends on its order).
//
//   norm_rsqrt<V_BITS, T_ENTRY>(v, table, r, e)   R 2^-(24 + e) ~ 1/sqrt(V) for 1 <= V < 2^V_BITS: the leading one of
//       V gives e = floor(msb / 2) and the mantissa m = V / 4^e in [1, 4) on 20 fractional bits (truncated), the
//       table its first guess y0 (T_ENTRY, 16 fractional bits) from m's top 10 bits, then one Newton step
//       y0 (3 - m y0^2) / 2 in exact ap_ufixed products whose two truncations are assignments (TRN): 3 - m y0^2 to
//       32 fractional bits, y0 t to 23 (whose raw integer is y1 on 24).
#ifndef HLSFUSE_KERNELS_NORM_H
#define HLSFUSE_KERNELS_NORM_H

#include <hls_stream.h>

#include <cmath>

#include "convert.h"
#include "numeric.h"
#include "own.h"  // rom_reader

namespace hlsf {

// hlsfuse/ops/norm.py's constants (tests/test_ops_norm.py checks that they agree)
const int NORM_MANTISSA_FRAC = 20;  // MANTISSA_FRAC: the mantissa ap_ufixed<22, 2>
const int NORM_ENTRY_FRAC = 16;     // RSQRT_ENTRY: ufixed<16,0>
const int NORM_NEWTON_FRAC = 32;    // NEWTON_FRAC
const int NORM_RSQRT_FRAC = 24;     // RSQRT_FRAC

namespace detail {

// The exact value p * 2^-frac assigned to T (ap_fixed/ap_ufixed) with T's modes. frac is known at run time only
// (it grows with the row's e), so the value is first brought to the fixed grid of F + 2 fractional bits (F: T's)
// as assign_quotient does: X = 2 floor(p / 2^(d-1)) + r, d = frac - F, r = 1 when the floor dropped a set bit
// (d <= 0: X = p 2^(2-d), exact). T's own assignment of X * 2^-(F+2) then sees the same truncated value, first
// dropped bit and sticky bit as the assignment of p * 2^-frac (numeric.h, assign_quotient). hlsfuse's graph check
// proves that X fits 64 bits.
template <class T>
T assign_scaled(long long p, int frac) {
#pragma HLS INLINE
  const int F = format<T>::frac;
  typedef ap_fixed<64, 64 - (F + 2)> X_t;
  const int d = frac - F;
  long long x;
  if (d <= 0) {
    x = static_cast<long long>(static_cast<unsigned long long>(p) << (2 - d));
  } else if (d - 1 >= 63) {
    x = p < 0 ? -1 : (p != 0 ? 1 : 0);  // 2 floor(p / 2^(d-1)) + r: the floor is -1 or 0, every bit dropped
  } else {
    const int s = d - 1;
    const long long q2 = p >> s;  // arithmetic shift: the floor
    const bool r = s > 0 && (static_cast<unsigned long long>(p) & ((1ULL << s) - 1)) != 0;
    x = static_cast<long long>(static_cast<unsigned long long>(q2) << 1) + (r ? 1 : 0);
  }
  return T(from_raw<X_t>(x));
}

}  // namespace detail

template <int V_BITS, class T_ENTRY, class TABLE, int R>
void norm_rsqrt(const long long v, const TABLE (&table)[R], long long& r, int& e) {
#pragma HLS INLINE
  static_assert(V_BITS >= 1 && V_BITS <= 63, "norm_rsqrt: V has 1..63 bits");
  static_assert(format<T_ENTRY>::frac == NORM_ENTRY_FRAC, "norm_rsqrt: the table's entries have 16 fractional bits");
  int msb = 0;  // the leading one (a priority encoder over V's V_BITS bits)
  for (int b = 0; b < V_BITS; ++b) {
#pragma HLS UNROLL
    if ((v >> b) & 1) msb = b;
  }
  e = msb >> 1;
  const int s = 2 * e - NORM_MANTISSA_FRAC;
  // V / 4^e on 20 fractional bits, truncated, in [2^20, 2^22); v < 2^(2e + 2) when s < 0, so nothing is lost there
  const long long m = s >= 0 ? v >> s : v << -s;
  typedef ap_ufixed<NORM_MANTISSA_FRAC + 2, 2> M_t;  // the table's input format, m in [1, 4)
  const M_t mantissa = from_raw<M_t>(m);
  const T_ENTRY y0 = lut_lookup<T_ENTRY>(mantissa, table);                  // 16 fractional bits
  const product_t<product_t<M_t, T_ENTRY>, T_ENTRY> q = mantissa * y0 * y0;  // m y0^2, exact: 52 fractional bits
  const ap_ufixed<2, 2> three = 3;
  const ap_ufixed<NORM_NEWTON_FRAC + 2, 2> t = three - q;  // 3 - m y0^2 in (0, 4), truncated to 32 fractional bits
  // y0 t = 2 y1 < 4, truncated to 23 fractional bits: its raw integer is y1 on 24 fractional bits, R
  const ap_ufixed<NORM_RSQRT_FRAC + 1, 2> twice = y0 * t;
  r = raw_of(twice);
}

namespace detail {

template <class T_IN, class T_OUT, class T_NORM, class T_GAMMA, class T_BETA, class T_ENTRY, int ROWS, int N,
          long long E, int V_BITS, bool RMS, int L, class IN, class GAMMA, class BETA, class TABLE, int R>
void norm_rows(IN& in, GAMMA& gamma, BETA& beta, hls::stream<typename token<T_OUT, L>::type>& out,
               const TABLE (&rsqrt_table)[R], T_IN (&x)[N]) {
  static_assert(N % L == 0, "norm_stage: a row is whole tokens");
  typedef sum_t<T_IN, N> S1;                   // every partial sum of a row exactly, so a token's tree too
  typedef sum_t<product_t<T_IN, T_IN>, N> S2;
  const int TOKENS = N / L;
  S1 s1 = 0;
  S2 s2 = 0;
  bool writing = false;
  int i = 0;  // the token of the row
  for (int t = 0; t < 2 * ROWS * TOKENS; ++t) {
#pragma HLS PIPELINE II=1
    if (!writing) {
      const typename token<T_IN, L>::type v = in.read();
      S1 ones[L];
      S2 squares[L];
#pragma HLS ARRAY_PARTITION variable=ones type=complete
#pragma HLS ARRAY_PARTITION variable=squares type=complete
      for (int l = 0; l < L; ++l) {
#pragma HLS UNROLL
        const T_IN xi = token<T_IN, L>::get(v, l);
        x[i * L + l] = xi;
        ones[l] = xi;
        squares[l] = xi * xi;
      }
      const S1 part1 = hlsf::tree_sum(ones);
      const S2 part2 = hlsf::tree_sum(squares);
      if (i == 0) {
        s1 = part1;
        s2 = part2;
      } else {
        hlsf::accumulate(s1, part1);
        hlsf::accumulate(s2, part2);
      }
    } else {
      // V and its rsqrt depend on the row's sums only: the same in every iteration of the pass
      const long long sum1 = RMS ? 0 : raw_of(s1);
      const long long v = static_cast<long long>(N) * raw_of(s2) - sum1 * sum1 + E;  // exact: < 2^V_BITS
      long long r;
      int e;
      norm_rsqrt<V_BITS, T_ENTRY>(v, rsqrt_table, r, e);
      const typename token<T_GAMMA, L>::type g = gamma.read();
      typename token<T_BETA, L>::type b;
      if (!RMS) b = beta.read();
      typename token<T_OUT, L>::type y;
      for (int l = 0; l < L; ++l) {
#pragma HLS UNROLL
        const long long dev = static_cast<long long>(N) * raw_of(x[i * L + l]) - sum1;  // N x - S1, exact
        const T_NORM n = assign_scaled<T_NORM>(dev * r, NORM_RSQRT_FRAC + e);
        if (RMS) {
          token<T_OUT, L>::set(y, l, T_OUT(n * token<T_GAMMA, L>::get(g, l)));
        } else {
          token<T_OUT, L>::set(y, l, T_OUT(n * token<T_GAMMA, L>::get(g, l) + token<T_BETA, L>::get(b, l)));
        }
      }
      out.write(y);
    }
    if (i == TOKENS - 1) {
      i = 0;
      writing = !writing;
    } else {
      i++;
    }
  }
}

}  // namespace detail

template <class T_IN, class T_OUT, class T_NORM, class T_GAMMA, class T_BETA, class T_ENTRY, int ROWS, int N,
          long long E, int V_BITS, int L = 1, class IN, class GAMMA, class BETA, class TABLE, int R>
void layer_norm_stage(IN& in, GAMMA& gamma, BETA& beta, hls::stream<typename token<T_OUT, L>::type>& out,
                      const TABLE (&rsqrt_table)[R], T_IN (&x)[N]) {
  detail::norm_rows<T_IN, T_OUT, T_NORM, T_GAMMA, T_BETA, T_ENTRY, ROWS, N, E, V_BITS, false, L>(
      in, gamma, beta, out, rsqrt_table, x);
}

template <class T_IN, class T_OUT, class T_NORM, class T_GAMMA, class T_ENTRY, int ROWS, int N, long long E,
          int V_BITS, int L = 1, class IN, class GAMMA, class TABLE, int R>
void rms_norm_stage(IN& in, GAMMA& gamma, hls::stream<typename token<T_OUT, L>::type>& out,
                    const TABLE (&rsqrt_table)[R], T_IN (&x)[N]) {
  // no beta: gamma stands in for it and is never read as such
  detail::norm_rows<T_IN, T_OUT, T_NORM, T_GAMMA, T_GAMMA, T_ENTRY, ROWS, N, E, V_BITS, true, L>(
      in, gamma, gamma, out, rsqrt_table, x);
}

template <int ROWS, int N, class IN, class GAMMA, class BETA>
void layer_norm_float_stage(IN& in, GAMMA& gamma, BETA& beta, hls::stream<float>& out, float (&x)[N],
                            const double epsilon) {
  double sum = 0, mean = 0, squares = 0;
  int pass = 0;  // 0: read and sum, 1: the squared deviations, 2: write
  int i = 0;
  for (int t = 0; t < 3 * ROWS * N; ++t) {
#pragma HLS PIPELINE
    if (pass == 0) {
      const float v = in.read();
      x[i] = v;
      sum = i == 0 ? static_cast<double>(v) : sum + v;
    } else if (pass == 1) {
      mean = sum / N;
      const double d = x[i] - mean;
      squares = i == 0 ? d * d : squares + d * d;
    } else {
      const double d = x[i] - mean;
      const double y = d / std::sqrt(squares / N + epsilon) * static_cast<double>(gamma.read()) +
                       static_cast<double>(beta.read());
      out.write(static_cast<float>(y));
    }
    if (i == N - 1) {
      i = 0;
      pass = pass == 2 ? 0 : pass + 1;
    } else {
      i++;
    }
  }
}

template <int ROWS, int N, class IN, class GAMMA>
void rms_norm_float_stage(IN& in, GAMMA& gamma, hls::stream<float>& out, float (&x)[N], const double epsilon) {
  double squares = 0;
  bool writing = false;
  int i = 0;
  for (int t = 0; t < 2 * ROWS * N; ++t) {
#pragma HLS PIPELINE
    if (!writing) {
      const float v = in.read();
      x[i] = v;
      const double d = v;
      squares = i == 0 ? d * d : squares + d * d;
    } else {
      const double y = x[i] / std::sqrt(squares / N + epsilon) * static_cast<double>(gamma.read());
      out.write(static_cast<float>(y));
    }
    if (i == N - 1) {
      i = 0;
      writing = !writing;
    } else {
      i++;
    }
  }
}

}  // namespace hlsf

#endif  // HLSFUSE_KERNELS_NORM_H
