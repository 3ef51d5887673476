// hlsfuse kernel library: multiply-accumulate and window reductions over a snapshot of a window or a row.
//
// Each helper computes one output value exactly, in an accumulator type ACC chosen by the caller: the exact
// format hlsfuse's graph check proved (Fmt(x).mul(Fmt(w)).accumulate(terms) for conv2d, dense and matmul,
// i.e. hlsf::sum_t<hlsf::product_t<T_X, T_W>, TERMS>; Fmt(x).accumulate(KH*KW) for an average pool; double
// for float32 graphs). The caller then assigns the result once to the node's output type.
//
// A window snapshot (line_buffer::snapshot) holds TAPS*C values, tap-major: taps[t*C + c]; a row snapshot
// holds the K values of a row. Weights are arrays in the graph's row-major layout (a ROM declared by the
// stage, or a held input): flat, or 2-D as rows of their last dimension (the form a stage computing PE
// outputs per cycle declares, so that each dimension is partitioned on its own; detail::weights reads both).
// T_W is the weights' type: a ROM holds their raw integers (hlsf::raw), read back with hlsf::element<T_W>.
//
// The MAC helpers are folded (lower/schedule.py, Folded): an output's P products are computed SIMD per call,
// over F = P / SIMD calls f = 0..F-1, each adding its SIMD products to the ``acc`` it is given (0 for f = 0,
// the previous call's result after) in lane order; SIMD = P computes a whole output in one call. Lane s of
// fold f computes product j, and the stage partitions the weights so that the lanes of a call read SIMD
// different banks:
//   conv2d  j = s*F + f   w[KH][KW][Cin/groups][Cout] -> w[j*COUT + co]  ARRAY_PARTITION type=block factor=SIMD
//   dense   j = f*SIMD + s  w[N][K]                   -> w[n*K + j]      ARRAY_PARTITION type=cyclic factor=SIMD
//   matmul  j = s*F + f   b[..., K, N] -> b[(base + j)*N + n]  ARRAY_PARTITION type=block factor=SIMD*(batches of b)
// (product j of conv2d is tap t = j / CG, input channel ci = j % CG of its group). A stage of PE > 1 calls the
// helper once per output of an emit (an unrolled loop) and declares the weights 2-D: conv2d [KH*KW*CG][COUT]
// and matmul [rows][N] partitioned as above along dim=1 and cyclic factor=PE along dim=2; dense [N][K] cyclic
// factor=PE along dim=1 and cyclic factor=SIMD along dim=2, so that the PE x SIMD weights sit in as many banks.
//
//   conv_mac<ACC, TAPS, COUT, GROUPS, SIMD, T_W>(acc, taps, w, co, f)   fold f of output channel co of conv2d: the
//       products taps[t*C + g*CG + ci] * w[(t*CG + ci)*COUT + co] of its lanes, CG = C/GROUPS, g = co /
//       (COUT/GROUPS) the group of co (GROUPS = C: a depthwise convolution); w may also be [KH*KW*CG][COUT]
//   dense_mac<ACC, SIMD, T_W>(acc, x, w, n, f)        fold f of output n of dense: x[j] * w[n*K + j] (w may be [N][K])
//   matmul_mac<ACC, N, SIMD, T_W>(acc, x, b, base, n, f)  fold f of output n of a row of matmul: x[j] * b[(base + j)*N + n],
//       base the first row (of N) of b's matrix (b may be [rows][N])
// Each MAC helper takes a FABRIC template argument after T_W (default false): true builds every product from LUTs
// (BIND_OP impl=fabric), for a stage whose multiplier the folding set to "lut" (schedule.MULTIPLIERS: the products
// are the same exact values, only where they are computed changes).
// The packed helpers compute the PE outputs of an emit at once, for a stage whose multiplier the folding set to
// "packed" (lower/packing.py): outputs 2i and 2i + 1 read the same x, so each SIMD lane takes one DSP for both,
// x * (w_hi * 2^S + w_lo); G consecutive lanes' packed products are summed (the DSP's post-adder and cascade), and
// each group's sum Q splits exactly into lo = Q's low S bits, sign-extended, and hi = (Q - lo) >> S (the guard
// band: |a group's sum of x * w_lo| < 2^(S-1), proved from the operand types). An odd PE's last output is an
// unpacked conv_mac/dense_mac/matmul_mac. acc[l] holds output l's sum so far (0 for fold 0) and is added to:
//   conv_mac_packed<ACC, TAPS, COUT, GROUPS, SIMD, T_W, PK>(acc, taps, w, co, f)   outputs co .. co + PE - 1
//   dense_mac_packed<ACC, SIMD, T_W, PK>(acc, x, w, n, f)                           outputs n .. n + PE - 1
//   matmul_mac_packed<ACC, N, SIMD, T_W, PK>(acc, x, b, base, n, f)                 outputs n .. n + PE - 1
// PK = packing<S, G, WORD, XB, TOTAL>: the packed word's WORD and x's XB signed bits (the DSP's A and B port
// widths bound them), TOTAL a group's sum's.
//   window_sum<ACC, TAPS>(taps, c)       sum of channel c over the taps (padding was pushed as zeros)
//   window_max<TAPS>(taps, c, real)      maximum of channel c over the taps t with real[t] (not padding: padding
//                                        never wins, and every pooling window has a real tap)
#ifndef HLSFUSE_KERNELS_MAC_H
#define HLSFUSE_KERNELS_MAC_H

#include "numeric.h"

namespace hlsf {

namespace detail {

// Weight (row r, column c) of weights seen as rows of COLS: flat, w[r*COLS + c], or 2-D, w[r][c] (the form a
// stage computing PE outputs per cycle declares, each dimension partitioned on its own). COUNT: how many weights
// there are.
template <class W, int COLS>
struct weights;
template <class T, int N, int COLS>
struct weights<T[N], COLS> {
  static const int COUNT = N;
  static const T& at(const T (&w)[N], int r, int c) { return w[r * COLS + c]; }
};
template <class T, int ROWS, int COLS>
struct weights<T[ROWS][COLS], COLS> {
  static const int COUNT = ROWS * COLS;
  static const T& at(const T (&w)[ROWS][COLS], int r, int c) { return w[r][c]; }
};

// The exact product a * b: where Vitis HLS chooses (a DSP for a wide one), or (FABRIC) built from LUTs.
template <bool FABRIC>
struct multiply {
  template <class A, class B>
  static product_t<A, B> of(const A& a, const B& b) {
#pragma HLS INLINE
    return mul(a, b);
  }
};
template <>
struct multiply<true> {
  template <class A, class B>
  static product_t<A, B> of(const A& a, const B& b) {
#pragma HLS INLINE
    const product_t<A, B> p = a * b;
#pragma HLS BIND_OP variable=p op=mul impl=fabric
    return p;
  }
};

// The operands of one output's SIMD products in fold f: lane s's tap or element in xs[s] and its weight in ws[s]
// (product j of the layouts above). The one place that says which values product j reads, for every way of
// building the products: the multipliers here, the packed pairs below and narrow.h's products without one.
template <int TAPS, int COUT, int GROUPS, int SIMD, class T_W, class T_X, int NT, class W>
void conv_operands(T_X (&xs)[SIMD], T_W (&ws)[SIMD], const T_X (&taps)[NT], const W& w, int co, int f) {
#pragma HLS INLINE
  typedef weights<W, COUT> at;  // product j, output channel co
  const int C = NT / TAPS;
  const int CG = C / GROUPS;
  const int CO_G = COUT / GROUPS;
  const int F = TAPS * CG / SIMD;
  static_assert(NT % TAPS == 0 && C % GROUPS == 0 && COUT % GROUPS == 0,
                "conv2d: GROUPS must divide the input and output channels");
  static_assert(at::COUNT == TAPS * CG * COUT, "conv2d: w must hold KH*KW*(Cin/GROUPS)*COUT weights");
  static_assert((TAPS * CG) % SIMD == 0, "conv2d: SIMD must divide KH*KW*Cin/GROUPS");
  const int base = (co / CO_G) * CG;
  for (int s = 0; s < SIMD; ++s) {
#pragma HLS UNROLL
    const int j = s * F + f;
    xs[s] = taps[(j / CG) * C + base + j % CG];
    ws[s] = hlsf::element<T_W>(at::at(w, j, co));
  }
}

template <int SIMD, class T_W, class T_X, int K, class W>
void dense_operands(T_X (&xs)[SIMD], T_W (&ws)[SIMD], const T_X (&x)[K], const W& w, int n, int f) {
#pragma HLS INLINE
  typedef weights<W, K> at;  // output n, product j
  static_assert(at::COUNT % K == 0, "dense: w must hold N rows of K weights");
  static_assert(K % SIMD == 0, "dense: SIMD must divide K");
  for (int s = 0; s < SIMD; ++s) {
#pragma HLS UNROLL
    const int j = f * SIMD + s;
    xs[s] = x[j];
    ws[s] = hlsf::element<T_W>(at::at(w, n, j));
  }
}

template <int N, int SIMD, class T_W, class T_X, int K, class W>
void matmul_operands(T_X (&xs)[SIMD], T_W (&ws)[SIMD], const T_X (&x)[K], const W& b, int base, int n, int f) {
#pragma HLS INLINE
  typedef weights<W, N> at;  // row base + j, output n
  static_assert(at::COUNT % (K * N) == 0, "matmul: b must hold whole K x N matrices");
  static_assert(K % SIMD == 0, "matmul: SIMD must divide K");
  const int F = K / SIMD;
  for (int s = 0; s < SIMD; ++s) {
#pragma HLS UNROLL
    const int j = s * F + f;
    xs[s] = x[j];
    ws[s] = hlsf::element<T_W>(at::at(b, base + j, n));
  }
}

// acc plus the SIMD exact products xs[s] * ws[s], in lane order.
template <bool FABRIC, int SIMD, class T_X, class T_W, class ACC>
ACC mac_dot(ACC acc, const T_X (&xs)[SIMD], const T_W (&ws)[SIMD]) {
#pragma HLS INLINE
  for (int s = 0; s < SIMD; ++s) {
#pragma HLS UNROLL
    hlsf::accumulate(acc, multiply<FABRIC>::of(xs[s], ws[s]));
  }
  return acc;
}

}  // namespace detail

template <class ACC, int TAPS, int COUT, int GROUPS, int SIMD, class T_W, bool FABRIC = false, class T_X, int NT,
          class W>
ACC conv_mac(ACC acc, const T_X (&taps)[NT], const W& w, int co, int f) {
#pragma HLS INLINE
  T_X xs[SIMD];
  T_W ws[SIMD];
#pragma HLS ARRAY_PARTITION variable=xs type=complete
#pragma HLS ARRAY_PARTITION variable=ws type=complete
  detail::conv_operands<TAPS, COUT, GROUPS, SIMD>(xs, ws, taps, w, co, f);
  return detail::mac_dot<FABRIC>(acc, xs, ws);
}

template <class ACC, int SIMD, class T_W, bool FABRIC = false, class T_X, int K, class W>
ACC dense_mac(ACC acc, const T_X (&x)[K], const W& w, int n, int f) {
#pragma HLS INLINE
  T_X xs[SIMD];
  T_W ws[SIMD];
#pragma HLS ARRAY_PARTITION variable=xs type=complete
#pragma HLS ARRAY_PARTITION variable=ws type=complete
  detail::dense_operands<SIMD>(xs, ws, x, w, n, f);
  return detail::mac_dot<FABRIC>(acc, xs, ws);
}

template <class ACC, int N, int SIMD, class T_W, bool FABRIC = false, class T_X, int K, class W>
ACC matmul_mac(ACC acc, const T_X (&x)[K], const W& b, int base, int n, int f) {
#pragma HLS INLINE
  T_X xs[SIMD];
  T_W ws[SIMD];
#pragma HLS ARRAY_PARTITION variable=xs type=complete
#pragma HLS ARRAY_PARTITION variable=ws type=complete
  detail::matmul_operands<N, SIMD>(xs, ws, x, b, base, n, f);
  return detail::mac_dot<FABRIC>(acc, xs, ws);
}

// How two outputs share a DSP (lower/packing.py's Packing): w_hi's place S in the packed word, G lanes summed
// packed before a split, the signed bits of the packed word (WORD), of x (XB) and of a group's packed sum (TOTAL).
template <int S, int G, int WORD, int XB, int TOTAL>
struct packing {
  static const int shift = S;
  static const int group = G;
  static const int word = WORD;
  static const int x_bits = XB;
  static const int total = TOTAL;
};

namespace detail {

// x * (hi * 2^S + lo) in one DSP: the packed word through its pre-adder, x on its B port.
template <class PK, class T_X, class T_W>
ap_int<PK::word + PK::x_bits> packed_product(const T_X& x, const T_W& lo, const T_W& hi) {
#pragma HLS INLINE
  const ap_int<PK::x_bits> xr(raw_of(x));
  const ap_int<PK::word> w(((ap_int<PK::word>(raw_of(hi)) << PK::shift) + ap_int<PK::word>(raw_of(lo))));
  const ap_int<PK::word + PK::x_bits> p = w * xr;
#pragma HLS BIND_OP variable=p op=mul impl=dsp
  return p;
}

// A group's packed sum q = H * 2^S + L split exactly (|L| < 2^(S-1)): L is q's low S bits, sign-extended, and H
// is (q - L) >> S; each added to its output's sum as the exact sum of at most G products (T_P each).
template <class PK, class T_P, class ACC>
void packed_split(ACC& lo, ACC& hi, const ap_int<PK::total>& q) {
#pragma HLS INLINE
  typedef sum_t<T_P, PK::group> part_t;
  const ap_int<PK::shift> l(q);
  const ap_int<PK::total - PK::shift + 1> h((q - l) >> PK::shift);
  hlsf::accumulate(lo, from_raw<part_t>(l.to_int64()));  // (detail::accumulate would hide it)
  hlsf::accumulate(hi, from_raw<part_t>(h.to_int64()));
}

// lo and hi plus the exact sums of their SIMD products xs[s] * lo_w[s] and xs[s] * hi_w[s], two to a DSP: groups
// of G lanes summed packed, each group split.
template <class PK, int SIMD, class T_X, class T_W, class ACC>
void packed_dot(ACC& lo, ACC& hi, const T_X (&xs)[SIMD], const T_W (&lo_w)[SIMD], const T_W (&hi_w)[SIMD]) {
#pragma HLS INLINE
  for (int g = 0; g < SIMD; g += PK::group) {
#pragma HLS UNROLL
    ap_int<PK::total> q = 0;
    for (int s = g; s < g + PK::group && s < SIMD; ++s) {
#pragma HLS UNROLL
      q = q + packed_product<PK>(xs[s], lo_w[s], hi_w[s]);
    }
    packed_split<PK, product_t<T_X, T_W> >(lo, hi, q);
  }
}

}  // namespace detail

template <class ACC, int TAPS, int COUT, int GROUPS, int SIMD, class T_W, class PK, class T_X, int NT, class W, int PE>
void conv_mac_packed(ACC (&acc)[PE], const T_X (&taps)[NT], const W& w, int co, int f) {
#pragma HLS INLINE
  static_assert(PE >= 2 && (COUT / GROUPS) % 2 == 0, "conv_mac_packed: outputs 2i and 2i + 1 must be of one group");
  for (int p = 0; p < PE / 2; ++p) {
#pragma HLS UNROLL
    T_X xs[SIMD];
    T_W lo_w[SIMD], hi_w[SIMD];
#pragma HLS ARRAY_PARTITION variable=xs type=complete
#pragma HLS ARRAY_PARTITION variable=lo_w type=complete
#pragma HLS ARRAY_PARTITION variable=hi_w type=complete
    detail::conv_operands<TAPS, COUT, GROUPS, SIMD>(xs, lo_w, taps, w, co + 2 * p, f);
    detail::conv_operands<TAPS, COUT, GROUPS, SIMD>(xs, hi_w, taps, w, co + 2 * p + 1, f);  // the same taps
    detail::packed_dot<PK>(acc[2 * p], acc[2 * p + 1], xs, lo_w, hi_w);
  }
  if (PE % 2) acc[PE - 1] = conv_mac<ACC, TAPS, COUT, GROUPS, SIMD, T_W>(acc[PE - 1], taps, w, co + PE - 1, f);
}

template <class ACC, int SIMD, class T_W, class PK, class T_X, int K, class W, int PE>
void dense_mac_packed(ACC (&acc)[PE], const T_X (&x)[K], const W& w, int n, int f) {
#pragma HLS INLINE
  static_assert(PE >= 2, "dense_mac_packed: PE of at least 2");
  for (int p = 0; p < PE / 2; ++p) {
#pragma HLS UNROLL
    T_X xs[SIMD];
    T_W lo_w[SIMD], hi_w[SIMD];
#pragma HLS ARRAY_PARTITION variable=xs type=complete
#pragma HLS ARRAY_PARTITION variable=lo_w type=complete
#pragma HLS ARRAY_PARTITION variable=hi_w type=complete
    detail::dense_operands<SIMD>(xs, lo_w, x, w, n + 2 * p, f);
    detail::dense_operands<SIMD>(xs, hi_w, x, w, n + 2 * p + 1, f);
    detail::packed_dot<PK>(acc[2 * p], acc[2 * p + 1], xs, lo_w, hi_w);
  }
  if (PE % 2) acc[PE - 1] = dense_mac<ACC, SIMD, T_W>(acc[PE - 1], x, w, n + PE - 1, f);
}

template <class ACC, int N, int SIMD, class T_W, class PK, class T_X, int K, class W, int PE>
void matmul_mac_packed(ACC (&acc)[PE], const T_X (&x)[K], const W& b, int base, int n, int f) {
#pragma HLS INLINE
  static_assert(PE >= 2, "matmul_mac_packed: PE of at least 2");
  for (int p = 0; p < PE / 2; ++p) {
#pragma HLS UNROLL
    T_X xs[SIMD];
    T_W lo_w[SIMD], hi_w[SIMD];
#pragma HLS ARRAY_PARTITION variable=xs type=complete
#pragma HLS ARRAY_PARTITION variable=lo_w type=complete
#pragma HLS ARRAY_PARTITION variable=hi_w type=complete
    detail::matmul_operands<N, SIMD>(xs, lo_w, x, b, base, n + 2 * p, f);
    detail::matmul_operands<N, SIMD>(xs, hi_w, x, b, base, n + 2 * p + 1, f);
    detail::packed_dot<PK>(acc[2 * p], acc[2 * p + 1], xs, lo_w, hi_w);
  }
  if (PE % 2) acc[PE - 1] = matmul_mac<ACC, N, SIMD, T_W>(acc[PE - 1], x, b, base, n + PE - 1, f);
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
