// hlsfuse work-alike of AMD's ap_fixed.h: fixed-point ap_fixed<W,I,Q,O,N> / ap_ufixed<W,I,Q,O,N>, W <= 64.
//
// A value is a W-bit two's-complement (ap_fixed) or unsigned (ap_ufixed) integer R standing for
// R * 2^-(W-I). Semantics follow AMD's ap_fixed and hlsfuse's DESIGN.md section 3 / hlsfuse/types.py
// bit for bit (tests/test_hls_headers.py checks all three against each other):
//
//   Assignment of an exact value X * 2^-F2 to a type with F = W-I fractional bits, d = F2-F:
//     d <= 0: Q = X << -d
//     d  > 0: T = X >> d (floor); qb = bit d-1 of X; r = any of bits 0..d-2 set; neg = X < 0
//             Q = T + inc:  AP_TRN 0 | AP_TRN_ZERO neg&(qb|r) | AP_RND qb | AP_RND_ZERO qb&(neg|r) |
//                           AP_RND_MIN_INF qb&r | AP_RND_INF qb&(!neg|r) | AP_RND_CONV qb&((T&1)|r)
//     then, if Q is outside [lo, hi]: AP_WRAP keeps the low W bits | AP_SAT clips | AP_SAT_ZERO gives 0 |
//     AP_SAT_SYM clips to [-hi, hi] (signed) or [0, hi] (unsigned).
//   Sources: another ap_fixed/ap_ufixed, ap_int/ap_uint (I = W), C integers, and double/float, which are
//   converted exactly (a double is a 53-bit integer times a power of two) before the rounding above.
//   Full-precision results: a*b is <W1+W2, I1+I2>; a+b and a-b have F = max(F1,F2) and
//   I = max(I1,I2)+1, where the unsigned operand gains one integer bit when the signedness differs; a-b
//   and -a are always signed. ap_int<W> operands act as ap_fixed<W,W>, C integers as ap_fixed<32,32> (or
//   their own width). Compound assignments (+=, -=, *=) compute at full precision and assign with the
//   target's quantization and overflow modes. Shifts keep the type and drop bits without rounding or
//   saturation, as AMD's do. Comparisons are exact; comparisons with a double use to_double().
//
// Used by generated code: the ap_fixed/ap_ufixed typedefs and their Q/O modes, construction and assignment
// from ap_fixed/ap_int/C integers/double, +, -, *, unary -, +=, comparisons, to_double()/to_float()/
// to_int(), and raw bit access through range(): `x.range(W-1, 0) = bits` writes the raw pattern and
// `x.range(W-1, 0).to_uint64()` (or `ap_uint<W>(x.range(W-1, 0))`) reads it. There is no `.V` member.
//
// Not provided (a compile error, never a silent difference): widths above 64 bits (static_assert; hlsfuse
// lowering keeps exact intermediates within 64 bits), saturation bits N != 0, AP_WRAP_SM, division,
// bitwise operators on fixed values, arithmetic with double/float operands (AMD rejects these too), string
// construction, and implicit conversion to C types (use to_double()/to_int(); AMD has implicit ones).
#ifndef HLSFUSE_AP_FIXED_H
#define HLSFUSE_AP_FIXED_H

#include "ap_int.h"

template <int W, int I, ap_q_mode Q = AP_TRN, ap_o_mode O = AP_WRAP, int N = 0>
using ap_fixed = ap_fixed_base<W, I, true, Q, O, N>;
template <int W, int I, ap_q_mode Q = AP_TRN, ap_o_mode O = AP_WRAP, int N = 0>
using ap_ufixed = ap_fixed_base<W, I, false, Q, O, N>;

namespace ap_detail {

// Quantization of an exact value x * 2^-(f + d), d > 0, to f fractional bits (see the header comment).
inline wide quantize(wide x, int d, ap_q_mode q) {
  const wide t = shift_down(x, d);
  const bool qb = (shift_down(x, d - 1) & 1) != 0;
  const bool r = low_bits_set(x, d - 1);
  const bool neg = x < 0;
  bool inc = false;
  switch (q) {
    case AP_TRN: inc = false; break;
    case AP_TRN_ZERO: inc = neg && (qb || r); break;
    case AP_RND: inc = qb; break;
    case AP_RND_ZERO: inc = qb && (neg || r); break;
    case AP_RND_MIN_INF: inc = qb && r; break;
    case AP_RND_INF: inc = qb && (!neg || r); break;
    case AP_RND_CONV: inc = qb && ((t & 1) != 0 || r); break;
  }
  return t + (inc ? 1 : 0);
}

// Assign the exact value x * 2^-f2 (|x| <= 2^64) to fixed<w, i, s> with modes q, o; returns the new raw value.
inline wide assign_fixed(wide x, int f2, int w, int i, bool s, ap_q_mode q, ap_o_mode o) {
  const int d = f2 - (w - i);
  const wide lo = s ? -(static_cast<wide>(1) << (w - 1)) : 0;
  const wide hi = s ? (static_cast<wide>(1) << (w - 1)) - 1 : (static_cast<wide>(1) << w) - 1;
  wide result;     // the exact rounded value when in range; otherwise only its low 64 bits matter
  bool over, under;
  if (d > 0) {
    result = quantize(x, d, q);
    over = result > hi;
    under = result < lo;
  } else {
    // Test the range before shifting, so that saturation stays exact when x << -d needs more than 128 bits.
    const int up = -d;
    over = x > shift_down(hi, up);
    under = x < -shift_down(-lo, up);
    if (!over && !under) {
      result = x == 0 ? 0 : x * (static_cast<wide>(1) << up);  // fits w bits, so up <= 64 here
    } else {
      result = up >= 64 ? 0 : static_cast<wide>(static_cast<u64>(x) << up);
    }
  }
  if (over || under) {
    switch (o) {
      case AP_WRAP: return wrap(result, w, s);
      case AP_SAT: return over ? hi : lo;
      case AP_SAT_ZERO: return 0;
      case AP_SAT_SYM: return over ? hi : (s ? -hi : lo);
      case AP_WRAP_SM: break;  // rejected at compile time
    }
  }
  if (o == AP_SAT_SYM && s && result == lo) return -hi;
  return result;
}

// A finite double as an exact x * 2^-f2 with a 53-bit x. Infinity acts as +-2^1024 (saturating, or
// wrapping to 0), as in AMD's conversion; NaN gives 0 (AMD only warns).
inline void decompose(double d, wide& x, int& f2) {
  x = 0;
  f2 = 0;
  if (std::isnan(d) || d == 0) return;
  if (std::isinf(d)) {
    x = d > 0 ? 1 : -1;
    f2 = -1024;
    return;
  }
  int e = 0;
  const double m = std::frexp(d, &e);  // d = m * 2^e, 0.5 <= |m| < 1
  x = static_cast<long long>(std::ldexp(m, 53));
  f2 = 53 - e;
}

// Three-way comparison of the exact values a * 2^-fa and b * 2^-fb.
inline int compare(wide a, int fa, wide b, int fb) {
  if (fa < fb) return -compare(b, fb, a, fa);
  const wide q = shift_down(a, fa - fb);  // floor(a / 2^(fa-fb)); the remainder is >= 0
  if (q != b) return q < b ? -1 : 1;
  return low_bits_set(a, fa - fb) ? 1 : 0;
}

// Result types of ap_fixed arithmetic (AMD's ap_fixed_base::RType).
template <int W1, int I1, bool S1, int W2, int I2, bool S2>
struct fixed_result {
  enum {
    F1 = W1 - I1,
    F2 = W2 - I2,
    F = F1 > F2 ? F1 : F2,
    J1 = I1 + (S2 && !S1),
    J2 = I2 + (S1 && !S2),
    plus_i = (J1 > J2 ? J1 : J2) + 1,
  };
  typedef ap_fixed_base<W1 + W2, I1 + I2, S1 || S2, AP_TRN, AP_WRAP, 0> mult;
  typedef ap_fixed_base<plus_i + F, plus_i, S1 || S2, AP_TRN, AP_WRAP, 0> plus;
  typedef ap_fixed_base<plus_i + F, plus_i, true, AP_TRN, AP_WRAP, 0> minus;
};

}  // namespace ap_detail

template <int W, int I, bool S, ap_q_mode Q, ap_o_mode O, int N>
struct ap_fixed_base {
  static_assert(W >= 1 && W <= 64,
                "hlsfuse ap_fixed/ap_ufixed: width must be 1..64; an exact intermediate (product, sum, "
                "negation) wider than 64 bits is not supported by these work-alike headers");
  static_assert(N == 0, "hlsfuse ap_fixed/ap_ufixed: saturation bits N other than 0 are not supported");
  static_assert(O != AP_WRAP_SM, "hlsfuse ap_fixed/ap_ufixed: overflow mode AP_WRAP_SM is not supported");

  typedef typename std::conditional<S, long long, unsigned long long>::type raw_type;
  static const int width = W;
  static const int iwidth = I;
  static const bool sign_flag = S;
  static const ap_q_mode qmode = Q;
  static const ap_o_mode omode = O;

  // Construction and assignment round and saturate with this type's modes (header comment). Default
  // construction leaves the value undefined, as AMD's does: poisoned (ap_detail::poison in ap_int.h).
  ap_fixed_base() { ap_detail::access::set_bits(*this, ap_detail::poison(W)); }
  template <int W2, int I2, bool S2, ap_q_mode Q2, ap_o_mode O2, int N2>
  ap_fixed_base(const ap_fixed_base<W2, I2, S2, Q2, O2, N2>& x) { set(ap_detail::access::value(x), W2 - I2); }
  template <int W2, bool S2>
  ap_fixed_base(const ap_int_base<W2, S2>& x) { set(ap_detail::access::value(x), 0); }
  template <class T, class = ap_detail::if_c_int<T>>
  ap_fixed_base(T v) { set(v, 0); }
  ap_fixed_base(double d) {
    ap_detail::wide x;
    int f2;
    ap_detail::decompose(d, x, f2);
    set(x, f2);
  }
  ap_fixed_base(float f) : ap_fixed_base(static_cast<double>(f)) {}

  // Conversions. to_int() and friends round toward zero, as a C cast of the value would.
  double to_double() const { return std::ldexp(static_cast<double>(raw_), -(W - I)); }
  float to_float() const { return std::ldexp(static_cast<float>(raw_), -(W - I)); }
  int to_int() const { return static_cast<int>(ap_detail::from_bits(trunc_bits(), 32, true)); }
  unsigned to_uint() const { return static_cast<unsigned>(trunc_bits() & 0xffffffffULL); }
  long long to_int64() const { return static_cast<long long>(ap_detail::from_bits(trunc_bits(), 64, true)); }
  unsigned long long to_uint64() const { return trunc_bits(); }
  int length() const { return W; }
  int wl() const { return W; }
  int iwl() const { return I; }
  bool is_neg() const { return ap_detail::wide(raw_) < 0; }
  bool is_zero() const { return raw_ == 0; }

  // Raw bit access: range(hi, lo) reads/writes bits lo..hi of the W-bit pattern as an unsigned integer.
  ap_detail::range_ref<ap_fixed_base> range(int hi, int lo) const {
    return ap_detail::range_ref<ap_fixed_base>(const_cast<ap_fixed_base*>(this), hi, lo);
  }
  ap_detail::range_ref<ap_fixed_base> range() const { return range(W - 1, 0); }
  ap_detail::range_ref<ap_fixed_base> operator()(int hi, int lo) const { return range(hi, lo); }
  ap_detail::bit_ref<ap_fixed_base> operator[](int i) { return ap_detail::bit_ref<ap_fixed_base>(this, i); }
  bool operator[](int i) const { return ((ap_detail::access::bits(*this) >> i) & 1) != 0; }

  // Arithmetic at full precision; the result type holds the exact value.
  template <int W2, int I2, bool S2, ap_q_mode Q2, ap_o_mode O2, int N2>
  typename ap_detail::fixed_result<W, I, S, W2, I2, S2>::plus operator+(
      const ap_fixed_base<W2, I2, S2, Q2, O2, N2>& b) const {
    typedef typename ap_detail::fixed_result<W, I, S, W2, I2, S2>::plus R;
    return ap_detail::access::make<R>(aligned(R::width - R::iwidth) + b.aligned(R::width - R::iwidth));
  }
  template <int W2, int I2, bool S2, ap_q_mode Q2, ap_o_mode O2, int N2>
  typename ap_detail::fixed_result<W, I, S, W2, I2, S2>::minus operator-(
      const ap_fixed_base<W2, I2, S2, Q2, O2, N2>& b) const {
    typedef typename ap_detail::fixed_result<W, I, S, W2, I2, S2>::minus R;
    return ap_detail::access::make<R>(aligned(R::width - R::iwidth) - b.aligned(R::width - R::iwidth));
  }
  template <int W2, int I2, bool S2, ap_q_mode Q2, ap_o_mode O2, int N2>
  typename ap_detail::fixed_result<W, I, S, W2, I2, S2>::mult operator*(
      const ap_fixed_base<W2, I2, S2, Q2, O2, N2>& b) const {
    typedef typename ap_detail::fixed_result<W, I, S, W2, I2, S2>::mult R;
    return ap_detail::access::make<R>(ap_detail::wide(raw_) * ap_detail::access::value(b));
  }
  ap_fixed_base operator+() const { return *this; }
  ap_fixed_base<W + 1, I + 1, true, AP_TRN, AP_WRAP, 0> operator-() const {
    return ap_detail::access::make<ap_fixed_base<W + 1, I + 1, true, AP_TRN, AP_WRAP, 0>>(-ap_detail::wide(raw_));
  }

  // Shifts keep this type: bits move, nothing is rounded or saturated (AMD's behaviour). A negative count
  // shifts the other way; a count >= W gives 0 (or -1 LSB for a negative value shifted right).
  template <class T, class = ap_detail::if_c_int<T>>
  ap_fixed_base operator<<(T n) const { return shifted(static_cast<long long>(n)); }
  template <class T, class = ap_detail::if_c_int<T>>
  ap_fixed_base operator>>(T n) const { return shifted(-static_cast<long long>(n)); }
  template <int W2, bool S2>
  ap_fixed_base operator<<(const ap_int_base<W2, S2>& n) const { return shifted(n.to_int64()); }
  template <int W2, bool S2>
  ap_fixed_base operator>>(const ap_int_base<W2, S2>& n) const { return shifted(-n.to_int64()); }

  // Compound assignment: full-precision result, then assignment with this type's modes.
  template <class T>
  auto operator+=(const T& b) -> decltype(*this = *this + b) { return *this = *this + b; }
  template <class T>
  auto operator-=(const T& b) -> decltype(*this = *this - b) { return *this = *this - b; }
  template <class T>
  auto operator*=(const T& b) -> decltype(*this = *this * b) { return *this = *this * b; }
  template <class T>
  auto operator<<=(const T& n) -> decltype(*this = *this << n) { return *this = *this << n; }
  template <class T>
  auto operator>>=(const T& n) -> decltype(*this = *this >> n) { return *this = *this >> n; }

  // Exact comparisons with any ap_fixed/ap_ufixed; with a double through to_double() (as AMD).
  template <int W2, int I2, bool S2, ap_q_mode Q2, ap_o_mode O2, int N2>
  bool operator==(const ap_fixed_base<W2, I2, S2, Q2, O2, N2>& b) const { return compare(b) == 0; }
  template <int W2, int I2, bool S2, ap_q_mode Q2, ap_o_mode O2, int N2>
  bool operator!=(const ap_fixed_base<W2, I2, S2, Q2, O2, N2>& b) const { return compare(b) != 0; }
  template <int W2, int I2, bool S2, ap_q_mode Q2, ap_o_mode O2, int N2>
  bool operator<(const ap_fixed_base<W2, I2, S2, Q2, O2, N2>& b) const { return compare(b) < 0; }
  template <int W2, int I2, bool S2, ap_q_mode Q2, ap_o_mode O2, int N2>
  bool operator<=(const ap_fixed_base<W2, I2, S2, Q2, O2, N2>& b) const { return compare(b) <= 0; }
  template <int W2, int I2, bool S2, ap_q_mode Q2, ap_o_mode O2, int N2>
  bool operator>(const ap_fixed_base<W2, I2, S2, Q2, O2, N2>& b) const { return compare(b) > 0; }
  template <int W2, int I2, bool S2, ap_q_mode Q2, ap_o_mode O2, int N2>
  bool operator>=(const ap_fixed_base<W2, I2, S2, Q2, O2, N2>& b) const { return compare(b) >= 0; }
  bool operator==(double d) const { return to_double() == d; }
  bool operator!=(double d) const { return to_double() != d; }
  bool operator<(double d) const { return to_double() < d; }
  bool operator<=(double d) const { return to_double() <= d; }
  bool operator>(double d) const { return to_double() > d; }
  bool operator>=(double d) const { return to_double() >= d; }

 private:
  template <int, int, bool, ap_q_mode, ap_o_mode, int>
  friend struct ap_fixed_base;
  friend struct ap_detail::access;
  raw_type raw_;

  ap_fixed_base(ap_detail::raw_tag, raw_type raw) : raw_(raw) {}

  template <int W2, int I2, bool S2, ap_q_mode Q2, ap_o_mode O2, int N2>
  int compare(const ap_fixed_base<W2, I2, S2, Q2, O2, N2>& b) const {
    return ap_detail::compare(raw_, W - I, ap_detail::access::value(b), W2 - I2);
  }

  void set(ap_detail::wide x, int f2) {
    raw_ = static_cast<raw_type>(ap_detail::assign_fixed(x, f2, W, I, S, Q, O));
  }

  // The exact value with f >= W-I fractional bits, as an integer (the caller's result type bounds it).
  ap_detail::wide aligned(int f) const {
    return ap_detail::wide(raw_) * (static_cast<ap_detail::wide>(1) << (f - (W - I)));
  }

  // Low 64 bits of the value rounded toward zero.
  ap_detail::u64 trunc_bits() const {
    const int f = W - I;
    const ap_detail::wide v = raw_;
    if (f <= 0) return -f >= 64 ? 0 : static_cast<ap_detail::u64>(v) << -f;
    ap_detail::wide q = ap_detail::shift_down(v, f);
    if (v < 0 && ap_detail::low_bits_set(v, f)) q += 1;
    return static_cast<ap_detail::u64>(q);
  }

  ap_fixed_base shifted(long long n) const {  // n > 0: left, n < 0: right
    ap_fixed_base r(ap_detail::raw_tag(), 0);
    if (n >= W) return r;
    if (n >= 0) {
      ap_detail::access::set_bits(r, static_cast<ap_detail::u64>(raw_) << n);
    } else {
      r.raw_ = static_cast<raw_type>(ap_detail::shift_down(raw_, n <= -W ? W : static_cast<int>(-n)));
    }
    return r;
  }
};

template <int W, int I, bool S, ap_q_mode Q, ap_o_mode O, int N>
const int ap_fixed_base<W, I, S, Q, O, N>::width;
template <int W, int I, bool S, ap_q_mode Q, ap_o_mode O, int N>
const int ap_fixed_base<W, I, S, Q, O, N>::iwidth;
template <int W, int I, bool S, ap_q_mode Q, ap_o_mode O, int N>
const bool ap_fixed_base<W, I, S, Q, O, N>::sign_flag;
template <int W, int I, bool S, ap_q_mode Q, ap_o_mode O, int N>
const ap_q_mode ap_fixed_base<W, I, S, Q, O, N>::qmode;
template <int W, int I, bool S, ap_q_mode Q, ap_o_mode O, int N>
const ap_o_mode ap_fixed_base<W, I, S, Q, O, N>::omode;

namespace ap_detail {
// ap_int/ap_uint operands act as ap_fixed<W,W>/ap_ufixed<W,W>; C integers as fixed types of their width.
template <int W, bool S>
ap_fixed_base<W, W, S, AP_TRN, AP_WRAP, 0> as_fixed(const ap_int_base<W, S>& x) {
  return x;
}
template <class T, class = if_c_int<T>>
ap_fixed_base<c_int<T>::width, c_int<T>::width, c_int<T>::sign, AP_TRN, AP_WRAP, 0> as_fixed(T x) {
  return x;
}
}  // namespace ap_detail

template <int W, int I, bool S, ap_q_mode Q, ap_o_mode O, int N>
ap_int_base<(I > 1 ? I : 1), S> ap_detail::int_operand(const ap_fixed_base<W, I, S, Q, O, N>& b) {
  return b;
}

#define HLSFUSE_AP_FIXED_MIXED_OP(OP)                                                              \
  template <int W, int I, bool S, ap_q_mode Q, ap_o_mode O, int N, int W2, bool S2>               \
  auto operator OP(const ap_fixed_base<W, I, S, Q, O, N>& a, const ap_int_base<W2, S2>& b) {      \
    return a OP ap_detail::as_fixed(b);                                                           \
  }                                                                                               \
  template <int W, int I, bool S, ap_q_mode Q, ap_o_mode O, int N, int W2, bool S2>               \
  auto operator OP(const ap_int_base<W2, S2>& a, const ap_fixed_base<W, I, S, Q, O, N>& b) {      \
    return ap_detail::as_fixed(a) OP b;                                                           \
  }                                                                                               \
  template <int W, int I, bool S, ap_q_mode Q, ap_o_mode O, int N, class T,                       \
            class = ap_detail::if_c_int<T>>                                                       \
  auto operator OP(const ap_fixed_base<W, I, S, Q, O, N>& a, T b) {                               \
    return a OP ap_detail::as_fixed(b);                                                           \
  }                                                                                               \
  template <int W, int I, bool S, ap_q_mode Q, ap_o_mode O, int N, class T,                       \
            class = ap_detail::if_c_int<T>>                                                       \
  auto operator OP(T a, const ap_fixed_base<W, I, S, Q, O, N>& b) {                               \
    return ap_detail::as_fixed(a) OP b;                                                           \
  }
HLSFUSE_AP_FIXED_MIXED_OP(+)
HLSFUSE_AP_FIXED_MIXED_OP(-)
HLSFUSE_AP_FIXED_MIXED_OP(*)
HLSFUSE_AP_FIXED_MIXED_OP(==)
HLSFUSE_AP_FIXED_MIXED_OP(!=)
HLSFUSE_AP_FIXED_MIXED_OP(<)
HLSFUSE_AP_FIXED_MIXED_OP(<=)
HLSFUSE_AP_FIXED_MIXED_OP(>)
HLSFUSE_AP_FIXED_MIXED_OP(>=)
#undef HLSFUSE_AP_FIXED_MIXED_OP

#define HLSFUSE_AP_FIXED_DOUBLE_CMP(OP, SWAPPED)                                               \
  template <int W, int I, bool S, ap_q_mode Q, ap_o_mode O, int N>                             \
  bool operator OP(double d, const ap_fixed_base<W, I, S, Q, O, N>& b) { return b SWAPPED d; }
HLSFUSE_AP_FIXED_DOUBLE_CMP(==, ==)
HLSFUSE_AP_FIXED_DOUBLE_CMP(!=, !=)
HLSFUSE_AP_FIXED_DOUBLE_CMP(<, >)
HLSFUSE_AP_FIXED_DOUBLE_CMP(<=, >=)
HLSFUSE_AP_FIXED_DOUBLE_CMP(>, <)
HLSFUSE_AP_FIXED_DOUBLE_CMP(>=, <=)
#undef HLSFUSE_AP_FIXED_DOUBLE_CMP

// Prints to_double() (AMD prints the exact decimal expansion; they agree for widths up to 53 bits when the
// stream's precision is high enough).
template <int W, int I, bool S, ap_q_mode Q, ap_o_mode O, int N>
std::ostream& operator<<(std::ostream& os, const ap_fixed_base<W, I, S, Q, O, N>& x) {
  return os << x.to_double();
}

#endif  // HLSFUSE_AP_FIXED_H
