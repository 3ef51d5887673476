// hlsfuse kernel library: numeric building blocks (formats, raw bits, exact types, quotient, table index).
//
// Numbers follow DESIGN.md section 3 / docs/numerics.md: every node computes exactly and rounds once, when
// its exact result is assigned to the node's output type with that type's quantization and overflow modes.
// In C++ that single rounding is ap_fixed's own assignment `T_OUT(exact)`, so these helpers build exact
// values and leave the rounding to it. Everything here compiles against hlsfuse's work-alike headers and
// against AMD's ap_types (only their common, documented API is used: range(), width/iwidth, arithmetic).
//
// Contents (namespace hlsf):
//   format<T>                 ::width, ::iwidth, ::frac, ::is_signed of an ap_fixed/ap_ufixed/ap_int/ap_uint
//                             type, or of the result type of ap arithmetic (AMD returns ap_fixed_base there)
//   is_fixed<T>::value        true for ap_fixed/ap_ufixed (and their arithmetic results)
//   raw_of(x) / from_raw<T>(r)  the raw integer R of a value (sign-extended to long long) and back
//   raw<W, SIGNED>::type      how a ROM or a lookup table stores W-bit raw integers (weights.h and luts.h list
//                             them): ap_int<W>/ap_uint<W> for synthesis, the smallest C integer in C simulation
//                             (a brace list of millions of them compiles in seconds). Defining HLSFUSE_AP_ROMS
//                             gives C simulation the synthesis form, which the tests build with both header sets
//   element<T>(s)             a stored element as T: from_raw<T> of a raw integer, or s itself when it is a T
//   product_t<A, B>           the exact type of a * b (double for float operands)
//   sum_t<T, N>               the exact type of a sum of N values of T: W + ceil(log2 N), I + ceil(log2 N)
//                             (hlsfuse.types.Fmt.accumulate; double for float/double)
//   mul(a, b)                 a * b at full precision (in double for float operands)
//   accumulate(acc, term)     acc += term, exactly, also for a 64-bit accumulator
//   assign_quotient<T_OUT>(acc, n)   the exact quotient acc / n assigned to T_OUT (means, average pools)
//   lut_index<W, SIGNED, SHIFT>(x)   table index (X - X_min) >> SHIFT of hlsfuse/lut.py
//   lut_lookup<E>(x, table)   element<E>(table[lut_index(x)]) with W, SIGNED from x's type and SHIFT from the table
//                             size (a table of E's raw integers, as luts.h holds them, or of E values)
//   lut_copy(table, r)        the table read number r of an iteration reads: the table itself, or of a stage's
//                             copies [C][N] (each a 2-port ROM serving two reads) copy r / 2
//   lanes<T, L>               a token of L elements of T (element 0 first): what a channel of L lanes carries
//   tree_sum(v) / tree_max(v) the sum (exact in ACC) or maximum of L values, combined pairwise: a tree of
//                             L - 1 adders or comparators, ceil(log2 L) deep (a reduce stage's lanes)
#ifndef HLSFUSE_KERNELS_NUMERIC_H
#define HLSFUSE_KERNELS_NUMERIC_H

#include <ap_fixed.h>
#include <ap_int.h>

#include <type_traits>
#include <utility>

namespace hlsf {

// --------------------------------------------------------------------------------------------------------
// Formats of the ap types
// --------------------------------------------------------------------------------------------------------

template <int W, int I, bool S>
struct fixed_format {
  static const int width = W;
  static const int iwidth = I;
  static const int frac = W - I;
  static const bool is_signed = S;
};

namespace detail {
// Overload resolution sees through AMD's ap_fixed (a class derived from ap_fixed_base) as well as through
// the work-alike's alias templates, so one declaration per base template covers both header sets.
template <int W, int I, bool S, ap_q_mode Q, ap_o_mode O, int N>
fixed_format<W, I, S> format_of(const ap_fixed_base<W, I, S, Q, O, N>&);
template <int W, bool S>
fixed_format<W, W, S> format_of(const ap_int_base<W, S>&);

template <int W, int I, bool S, ap_q_mode Q, ap_o_mode O, int N>
std::true_type fixed_of(const ap_fixed_base<W, I, S, Q, O, N>&);
std::false_type fixed_of(...);

template <class T>
using format_t = decltype(format_of(std::declval<T>()));
}  // namespace detail

// format<T>: width, iwidth, frac and is_signed of an ap type (a compile error for other types).
template <class T>
struct format : detail::format_t<T> {};

// is_fixed<T>::value: T is ap_fixed/ap_ufixed. ap_int/ap_uint targets are not: assigning to them rounds
// toward zero (C semantics), so hlsfuse spells its integer types as ap_fixed<W, W> instead.
template <class T>
struct is_fixed : decltype(detail::fixed_of(std::declval<T>())) {};

// ceil(log2(n)) for n >= 1: the bits a sum of n terms grows by (hlsfuse.types.Fmt.accumulate).
constexpr int ceil_log2(int n) {
  int bits = 0;
  while ((1LL << bits) < n) ++bits;
  return bits;
}

// --------------------------------------------------------------------------------------------------------
// Raw bits
// --------------------------------------------------------------------------------------------------------

// The raw integer R of x (value R * 2^-F), sign-extended for signed types. Unsigned types have at most 63
// bits in hlsfuse, so R always fits a long long.
template <class T>
long long raw_of(const T& x) {
  const int w = format<T>::width;
  const unsigned long long bits = x.range(w - 1, 0).to_uint64();
  if (!format<T>::is_signed || w == 64 || ((bits >> (w - 1)) & 1ULL) == 0) return static_cast<long long>(bits);
  return static_cast<long long>(bits | (~0ULL << (w % 64)));  // w < 64 here; `% 64` only keeps the shift valid
}

// The value of T whose raw integer is r (its low W bits).
template <class T>
T from_raw(long long r) {
  T x;
  x.range(format<T>::width - 1, 0) = static_cast<unsigned long long>(r);
  return x;
}

// How a ROM stores the raw integers of W-bit values, and an element read back as its type T.
template <int W, bool SIGNED>
struct raw {
#if defined(__SYNTHESIS__) || defined(HLSFUSE_AP_ROMS)
  typedef typename std::conditional<SIGNED, ap_int<W>, ap_uint<W> >::type type;
#else
  typedef typename std::conditional<
      (W <= 8), typename std::conditional<SIGNED, signed char, unsigned char>::type,
      typename std::conditional<
          (W <= 16), typename std::conditional<SIGNED, short, unsigned short>::type,
          typename std::conditional<(W <= 32), typename std::conditional<SIGNED, int, unsigned>::type,
                                    typename std::conditional<SIGNED, long long, unsigned long long>::type>::type>::
          type>::type type;
#endif
};

namespace detail {
template <class S>
typename std::enable_if<std::is_integral<S>::value, long long>::type stored_raw(S s) {
  return static_cast<long long>(s);  // unsigned long long: its low 64 bits, which is all from_raw reads
}
template <int W>
long long stored_raw(const ap_int<W>& s) {
  return s.to_int64();
}
template <int W>
long long stored_raw(const ap_uint<W>& s) {
  return static_cast<long long>(s.to_uint64());
}
template <class T, class S>
struct stored {  // S holds T's raw integer
  static T get(const S& s) { return from_raw<T>(stored_raw(s)); }
};
template <class T>
struct stored<T, T> {  // a typed array (a held input, a float ROM)
  static const T& get(const T& s) { return s; }
};
}  // namespace detail

template <class T, class S>
T element(const S& s) {
#pragma HLS INLINE
  return detail::stored<T, S>::get(s);
}

// --------------------------------------------------------------------------------------------------------
// Exact intermediate types
// --------------------------------------------------------------------------------------------------------

namespace detail {
template <class A, class B, bool FLOAT = std::is_floating_point<A>::value || std::is_floating_point<B>::value>
struct product {
  typedef decltype(std::declval<A>() * std::declval<B>()) type;  // ap_fixed: <W1+W2, I1+I2>, exact
};
template <class A, class B>
struct product<A, B, true> {
  typedef double type;
};

template <class T, int N, bool FLOAT = std::is_floating_point<T>::value>
struct sum {
  typedef format<T> f;
  static const int grow = ceil_log2(N);
  typedef typename std::conditional<f::is_signed, ap_fixed<f::width + grow, f::iwidth + grow>,
                                    ap_ufixed<f::width + grow, f::iwidth + grow> >::type type;
};
template <class T, int N>
struct sum<T, N, true> {
  typedef double type;
};
}  // namespace detail

// The exact type of a * b: what `a * b` gives for ap types, double for float operands.
template <class A, class B>
using product_t = typename detail::product<A, B>::type;

// The exact type of a sum of N values of T (N >= 1), e.g. an accumulator: sum_t<product_t<X, W>, TERMS>.
template <class T, int N>
using sum_t = typename detail::sum<T, N>::type;

// a * b at full precision. For ap types the product type is exact; floats are multiplied in double, as the
// reference accumulates float32 convolutions and matmuls in float64.
template <class A, class B>
product_t<A, B> mul(const A& a, const B& b) {
  return a * b;
}
inline double mul(float a, float b) { return static_cast<double>(a) * static_cast<double>(b); }

// acc += term for an accumulator whose type holds every partial sum exactly (the graph check proved it with
// Fmt.accumulate) and at least term's fractional bits. ap arithmetic makes the sum one bit wider than acc;
// for a 64-bit accumulator that is 65 bits, which hlsfuse's work-alike headers do not provide, so there
// the raw integers are added instead (no overflow: the exact sum fits the accumulator).
namespace detail {
template <class ACC, class T>
void accumulate(ACC& acc, const T& term, std::false_type /* raw */) {
  acc += term;
}
template <class ACC, class T>
void accumulate(ACC& acc, const T& term, std::true_type /* raw */) {
  acc = from_raw<ACC>(raw_of(acc) + raw_of(ACC(term)));
}
template <class T, bool FLOAT = std::is_floating_point<T>::value>
struct is_wide : std::integral_constant<bool, format<T>::width >= 64> {};
template <class T>
struct is_wide<T, true> : std::false_type {};
}  // namespace detail

template <class ACC, class T>
void accumulate(ACC& acc, const T& term) {
#pragma HLS INLINE
  detail::accumulate(acc, term, detail::is_wide<ACC>());
}

// --------------------------------------------------------------------------------------------------------
// Exact quotient: means and average pools
// --------------------------------------------------------------------------------------------------------
//
// assign_quotient<T_OUT>(acc, n): the rational value acc / n (acc any ap_fixed/ap_ufixed/ap_int holding an
// exact sum, n >= 1) assigned to T_OUT (ap_fixed/ap_ufixed) with T_OUT's quantization and overflow modes;
// bit-exact with hlsfuse.types.assign_quotient. For float T_OUT (acc a double sum): T_OUT(acc / n).
//
// Method. Let F be T_OUT's fractional bits, F_a acc's, S acc's raw integer and k = F - F_a + 1. Integer
// floor division gives q2 = floor(S * 2^k / n), the quotient floored one bit below T_OUT's LSB (for k < 0 a
// floor shift comes first: floor(floor(S / 2^-k) / n) is the same number), and r = 1 when the shift or the
// division left a remainder. The value
//     X * 2^-(F+2)  with  X = 2 * q2 + r
// is assigned to T_OUT, i.e. rounded by ap_fixed itself with d = 2 dropped bits. This is exactly the
// reference's rounding:
//   - T  = X >> 2 = floor((2 q2 + r) / 4) = floor(q2 / 2) = q2 >> 1, since 0 <= r <= 1 never carries;
//   - qb = bit 1 of X = bit 0 of q2;
//   - the sticky bit is bit 0 of X = r;
//   - neg: X < 0  <=>  q2 < 0  <=>  S < 0 (S < 0 gives S * 2^k / n < 0, so q2 <= -1 and X <= -1; S >= 0 gives
//     q2 >= 0 and X >= 0).
// So Q = T + inc(mode, T, qb, r, neg) is the reference's Q, and overflow is decided on that same Q.
//
// Widths. hlsfuse's graph check bounds the dividend S << max(k, 0) by Fmt.dividend: at most 64 bits signed,
// 63 unsigned (a static_assert repeats it). |q2| <= |dividend|, so X needs one bit more than the dividend
// (two for an unsigned one, as X is held signed). Where that exceeds 64 bits, n >= 2 halves q2 and X fits
// 64 bits again; n == 1 is an exact quotient and assigns acc itself, which rounds the same value once.
namespace detail {

template <class T_OUT, class ACC>
T_OUT quotient(const ACC& acc, int n, std::false_type /* float */) {
  static_assert(is_fixed<T_OUT>::value, "assign_quotient: T_OUT must be ap_fixed or ap_ufixed");
  typedef format<ACC> A;
  const int k = format<T_OUT>::frac - A::frac + 1;
  const int up = k > 0 ? k : 0;
  const int down = k < 0 ? -k : 0;
  const int dividend_width = A::width + up;
  static_assert(dividend_width <= (A::is_signed ? 64 : 63),
                "assign_quotient: the dividend needs more than 64 bits (hlsfuse's graph check rejects this)");
  const int x_width_exact = dividend_width + (A::is_signed ? 1 : 2);
  const int x_width = x_width_exact < 64 ? x_width_exact : 64;
  typedef ap_fixed<x_width, x_width - (format<T_OUT>::frac + 2)> X;

  if (n == 1) return T_OUT(acc);
  const long long s = raw_of(acc);
  long long dividend;
  bool dropped = false;
  if (up > 0) {
    dividend = static_cast<long long>(static_cast<unsigned long long>(s) << (up % 64));  // fits: see above
  } else if (down >= 64) {
    dividend = s < 0 ? -1 : 0;
    dropped = s != 0;
  } else {
    dividend = s >> down;  // arithmetic shift: floor
    dropped = (static_cast<unsigned long long>(s) & ((1ULL << down) - 1)) != 0;
  }
  long long q2 = dividend / n;  // C division truncates toward zero: correct it to the floor
  const long long rem = dividend % n;
  if (rem < 0) q2 -= 1;
  const long long r = (dropped || rem != 0) ? 1 : 0;
  return T_OUT(from_raw<X>(static_cast<long long>(static_cast<unsigned long long>(q2) << 1) + r));
}

template <class T_OUT, class ACC>
T_OUT quotient(const ACC& acc, int n, std::true_type /* float */) {
  return static_cast<T_OUT>(static_cast<double>(acc) / n);
}

}  // namespace detail

template <class T_OUT, class ACC>
T_OUT assign_quotient(const ACC& acc, int n) {
#pragma HLS INLINE
  return detail::quotient<T_OUT>(acc, n, std::is_floating_point<T_OUT>());
}

// --------------------------------------------------------------------------------------------------------
// Lookup-table index (hlsfuse/lut.py)
// --------------------------------------------------------------------------------------------------------
//
// lut_index<W, SIGNED, SHIFT>(x): (X - X_min) >> SHIFT for x of a W-bit format (X its raw integer, X_min
// = -2^(W-1) signed, 0 unsigned), computed on the raw bits without any wider arithmetic: X - X_min is the
// W-bit pattern with its sign bit flipped. W and SIGNED must be those of x's type (checked); they are the
// table's input format, e.g. Fmt(x).sub(Fmt(x)) for softmax's exp table, which is the type of `x - max`.
template <int W, bool SIGNED, int SHIFT, class T>
unsigned lut_index(const T& x) {
#pragma HLS INLINE
  static_assert(format<T>::width == W && format<T>::is_signed == SIGNED,
                "lut_index: W and SIGNED must be the width and signedness of x's type (the table's input format)");
  static_assert(SHIFT >= 0 && SHIFT < W, "lut_index: SHIFT must be in 0..W-1");
  unsigned long long bits = x.range(W - 1, 0).to_uint64();
  if (SIGNED) bits ^= 1ULL << (W - 1);
  return static_cast<unsigned>(bits >> SHIFT);
}

// Entry (X - X_min) >> shift, as an E, of a table of N = 2^min(W, table_bits) entries built by hlsfuse/lut.py for
// x's format: shift = W - log2(N) follows from the table's size.
template <class E, class T, class S, int N>
E lut_lookup(const T& x, const S (&table)[N]) {
#pragma HLS INLINE
  static_assert(N >= 2 && (N & (N - 1)) == 0, "lut_lookup: the table size must be a power of two");
  static_assert(ceil_log2(N) <= format<T>::width, "lut_lookup: the table has more entries than x has values");
  return element<E>(table[lut_index<format<T>::width, format<T>::is_signed, format<T>::width - ceil_log2(N)>(x)]);
}

// lut_copy(table, r): a table of one ROM serves every read (at most two per iteration), a stage's copies of a
// table (hlsfuse/backends/hls/replicas.py: C = ceil(reads / 2), partitioned by copy) serve reads 2c and 2c + 1
// with copy c. r is a constant after unrolling, so no multiplexer is built.
template <class E, int N>
const E (&lut_copy(const E (&table)[N], int))[N] {
#pragma HLS INLINE
  return table;
}

template <class E, int C, int N>
const E (&lut_copy(const E (&copies)[C][N], int r))[N] {
#pragma HLS INLINE
  return copies[r / 2];
}

// --------------------------------------------------------------------------------------------------------
// Wide tokens
// --------------------------------------------------------------------------------------------------------

// L consecutive elements of a tensor moved in one transfer of a channel. A plain aggregate (no member
// functions, as UG1399 asks of a stream's element type), so an hls::stream of it is one FIFO of L x W bits.
template <class T, int L>
struct lanes {
  T v[L];
};

namespace detail {

// Value l + 2^k joins value l at level k of ceil(log2 L) levels: a balanced tree of L - 1 COMBINE::join.
template <class T, int L, class COMBINE>
T tree(const T (&v)[L]) {
#pragma HLS INLINE
  T s[L];
#pragma HLS ARRAY_PARTITION variable=s type=complete dim=0
  for (int l = 0; l < L; ++l) {
#pragma HLS UNROLL
    s[l] = v[l];
  }
  for (int k = 0; k < ceil_log2(L); ++k) {
#pragma HLS UNROLL
    for (int l = 0; l < L; ++l) {
#pragma HLS UNROLL
      if (l % (2 << k) == 0 && l + (1 << k) < L) COMBINE::join(s[l], s[l + (1 << k)]);
    }
  }
  return s[0];
}

struct add_into {
  template <class T>
  static void join(T& a, const T& b) {
#pragma HLS INLINE
    hlsf::accumulate(a, b);
  }
};

struct max_into {
  template <class T>
  static void join(T& a, const T& b) {
#pragma HLS INLINE
    if (b > a) a = b;
  }
};

}  // namespace detail

// The sum of the L values of v, combined pairwise: a balanced tree of L - 1 adders. ACC must hold every
// partial sum exactly (a reduce stage's accumulator holds the sum of all its n >= L values), so the order of
// the additions does not change the result.
template <class ACC, int L>
ACC tree_sum(const ACC (&v)[L]) {
#pragma HLS INLINE
  return detail::tree<ACC, L, detail::add_into>(v);
}

// The maximum of the L values of v by the same tree of L - 1 comparators (exact: it is one of them).
template <class T, int L>
T tree_max(const T (&v)[L]) {
#pragma HLS INLINE
  return detail::tree<T, L, detail::max_into>(v);
}

}  // namespace hlsf

#endif  // HLSFUSE_KERNELS_NUMERIC_H
