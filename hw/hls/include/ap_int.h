// hlsfuse work-alike of AMD's ap_int.h: arbitrary-precision integers ap_int<W> / ap_uint<W>.
//
// Written for hlsfuse's C simulation (g++ -std=c++14), after the documented semantics of AMD's ap_int
// (UG1399). It covers what hlsfuse's generated code and kernel headers use; code written against it also
// compiles with AMD's real headers (tests/test_hls_headers.py builds the same program with both and
// compares every result). Including this header also brings in ap_fixed.h, as AMD's does.
//
// Semantics (as AMD's):
//   - ap_int<W> holds a W-bit two's-complement value, ap_uint<W> a W-bit unsigned value.
//   - Assignment from another ap_int/ap_uint or a C integer keeps the low W bits (wrap-around).
//   - Assignment from double/float or from ap_fixed rounds toward zero (as a C cast), then wraps.
//   - a*b has W1+W2 bits; a+b and a-b have max(W1,W2)+1 bits, where the unsigned operand counts one bit
//     wider when the signedness differs; a-b is always signed; &, |, ^ have max(W1,W2) bits (same rule).
//     A C integer operand acts as ap_int/ap_uint of its own width (ap_int<32> for an int).
//   - Shifts keep the left operand's type (bits shifted out are lost); a negative count shifts the other way.
//   - Comparisons compare values exactly, whatever the widths and signedness.
//   - ap_int converts implicitly to long long (ap_uint to unsigned long long), e.g. for array indexing.
// Used by generated code: the ap_int/ap_uint typedefs, construction from C integers, arithmetic and
// comparisons, to_int()/to_uint64(), range(hi, lo) reads and writes (raw bit access), operator[].
//
// Widths up to 64 bits have all of the above. Wider ones (ap_int_wide.h: the TDATA of a port of many
// lanes, up to 1024 bits and beyond) are bit containers: construction and assignment from any
// ap_int/ap_uint, C integer or range(), range(hi, lo) and operator[] reads and writes of any length, shifts,
// ~, == and !=, to_int()/to_uint64() (the low bits). Their arithmetic, ordering, &, |, ^, conversion to or
// from floating point and ap_fixed, and implicit conversion to a C integer are not provided.
//
// Not provided (a compile error, never a silent difference): arithmetic results wider than 64 bits (an
// exact intermediate such as a product that would need more is rejected by a static_assert; hlsfuse keeps
// them <= 64 bits), division and modulo, string construction, concatenation (a, b), reduction methods such
// as and_reduce().
//
// Storage of up to 64 bits is one 64-bit C integer. Intermediates are computed in the GCC/Clang 128-bit
// integer type so that every operation on 64-bit operands is exact before the result is reduced to its
// declared width. Wider values are stored as 64-bit words, least significant first.
#ifndef HLSFUSE_AP_INT_H
#define HLSFUSE_AP_INT_H

#include <cmath>
#include <cstdint>
#include <iostream>
#include <type_traits>

// Quantization and overflow modes of ap_fixed (declared here, like AMD's ap_decl.h, so both headers agree).
enum ap_q_mode { AP_RND, AP_RND_ZERO, AP_RND_MIN_INF, AP_RND_INF, AP_RND_CONV, AP_TRN, AP_TRN_ZERO };
// AP_WRAP_SM exists only so that the numbering matches AMD's; using it is rejected at compile time.
enum ap_o_mode { AP_SAT, AP_SAT_ZERO, AP_SAT_SYM, AP_WRAP, AP_WRAP_SM };

// Big: more than 64 bits, stored as words (the partial specialization in ap_int_wide.h). Code that names
// ap_int_base<W, S> (as AMD's two-parameter template) deduces W and S and gets Big from W.
template <int W, bool S, bool Big = (W > 64)>
struct ap_int_base;
template <int W, int I, bool S, ap_q_mode Q, ap_o_mode O, int N>
struct ap_fixed_base;

template <int W>
using ap_int = ap_int_base<W, true>;
template <int W>
using ap_uint = ap_int_base<W, false>;

namespace ap_detail {

__extension__ typedef __int128 wide;  // exact intermediates: operands have at most 64 bits
typedef unsigned long long u64;

// Shift counts are capped here: operands stay below 2^65 in magnitude, so shifting a wide by more than
// this gives the same result as shifting by any larger count (0 or -1).
const int kShiftCap = 100;

inline u64 low_mask(int w) { return w >= 64 ? ~0ULL : (1ULL << w) - 1; }

// The value of a w-bit pattern (w <= 64) read as signed or unsigned.
inline wide from_bits(u64 bits, int w, bool s) {
  bits &= low_mask(w);
  if (s && ((bits >> (w - 1)) & 1)) return static_cast<wide>(bits) - (static_cast<wide>(1) << w);
  return static_cast<wide>(bits);
}

// Wrap-around: the value of the low w bits of v.
inline wide wrap(wide v, int w, bool s) { return from_bits(static_cast<u64>(v), w, s); }

// The bits of a default-constructed value. AMD's default constructors leave a value undefined (they do not
// write ap_private's storage, so a local holds whatever its stack held), and a value read before it is
// written is a bug that AMD's C simulation shows only by chance. Here it shows every time: default
// construction *poisons* a value with the next number of a fixed pseudo-random sequence (splitmix64), never
// zero in its low w bits, so code relying on it computes wrong numbers in every C simulation, the same
// wrong numbers in every run. Objects of static storage are poisoned too, where C++ and AMD's headers would
// leave zeros: hlsfuse's generated code writes every memory in a frame before reading it, and a design that
// relied on a zeroed static would compute different numbers in its second frame anyway.
inline u64 poison(int w) {
  static u64 state = 0;
  state += 0x9E3779B97F4A7C15ULL;
  u64 z = state;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  z ^= z >> 31;
  return (z & low_mask(w)) != 0 ? z : 1;
}

// Tag of the constructors that set a value's raw integer directly (access::make), which need no poison.
struct raw_tag {};

// Floor of v / 2^k (arithmetic shift), for any k >= 0.
inline wide shift_down(wide v, int k) { return v >> (k < kShiftCap ? k : kShiftCap); }

// True when any of the low k bits of v (two's complement, sign-extended) is set.
inline bool low_bits_set(wide v, int k) {
  if (k <= 0) return false;
  if (k >= kShiftCap) return v != 0;
  return (v & ((static_cast<wide>(1) << k) - 1)) != 0;
}

// Low 64 bits of a real number rounded toward zero (AMD's ap_int construction from double).
inline u64 trunc_bits(double d) {
  if (!std::isfinite(d) || d == 0) return 0;  // AMD: infinity gives 0; NaN is undefined there
  int e = 0;
  const double m = std::frexp(d, &e);  // d = m * 2^e, 0.5 <= |m| < 1
  const wide mant = static_cast<long long>(std::ldexp(m, 53));  // exact 53-bit integer
  const int shift = e - 53;                                       // d = mant * 2^shift
  wide mag = mant < 0 ? -mant : mant;
  if (shift >= 64) return 0;
  mag = shift >= 0 ? mag << shift : shift_down(mag, -shift);
  const u64 bits = static_cast<u64>(mag);
  return mant < 0 ? 0 - bits : bits;
}

// The right operand of ap_int's compound assignments. AMD converts an ap_fixed operand to an integer
// first (toward zero), so `i += x` is `i = i + int(x)`, not `i = int(i + x)`; other operands are used as is.
template <class T>
const T& int_operand(const T& b) { return b; }
template <int W, int I, bool S, ap_q_mode Q, ap_o_mode O, int N>
ap_int_base<(I > 1 ? I : 1), S> int_operand(const ap_fixed_base<W, I, S, Q, O, N>& b);  // in ap_fixed.h

// C integer types as AMD sees them: ap_int<bits> or ap_uint<bits>.
template <class T>
struct c_int {
  static const bool ok = std::is_integral<T>::value;
  static const int width = std::is_same<T, bool>::value ? 1 : static_cast<int>(sizeof(T) * 8);
  static const bool sign = std::is_signed<T>::value;
};
template <class T>
using if_c_int = typename std::enable_if<c_int<T>::ok>::type;
template <class T>
using int_of = ap_int_base<c_int<T>::width, c_int<T>::sign>;

// Result types of ap_int arithmetic (AMD's ap_int_base::RType).
template <int W1, bool S1, int W2, bool S2>
struct int_result {
  enum {
    joint = (W1 + (S2 && !S1)) > (W2 + (S1 && !S2)) ? W1 + (S2 && !S1) : W2 + (S1 && !S2),
    mult_w = W1 + W2,
    plus_w = joint + 1,
  };
  typedef ap_int_base<mult_w, S1 || S2> mult;
  typedef ap_int_base<plus_w, S1 || S2> plus;
  typedef ap_int_base<plus_w, true> minus;
  typedef ap_int_base<joint, S1 || S2> logic;
};

template <class Owner>
class range_ref;

inline int min_int(int a, int b) { return a < b ? a : b; }

// The one door to the raw representation, so that no public member exposes it (AMD's `.V` is not part of
// the documented API and generated code must not rely on it).
struct access {
  template <class T>
  static wide value(const T& x) { return x.raw_; }
  template <class T>
  static u64 bits(const T& x) { return static_cast<u64>(x.raw_) & low_mask(T::width); }
  template <class T>
  static void set_bits(T& x, u64 bits) {
    x.raw_ = static_cast<typename T::raw_type>(from_bits(bits, T::width, T::sign_flag));
  }
  template <class T>
  static T make(wide exact) {  // the caller guarantees that exact fits T
    static_assert(T::width <= 64,
                  "hlsfuse ap_int/ap_uint: an exact intermediate (product, sum, negation) wider than 64 bits is not "
                  "supported by these work-alike headers");
    return T(raw_tag(), static_cast<typename T::raw_type>(exact));
  }
  template <class T>
  static u64 trunc_bits(const T& x) { return x.trunc_bits(); }

  // Word i (bits 64 i .. 64 i + 63) of the two's-complement bits of a value, extended without end (by its
  // sign, or zeros): the source of every copy into a bit field, whatever the widths.
  template <class T>
  static u64 word(const T& x, int i) {
    const wide v = x.raw_;
    return i == 0 ? static_cast<u64>(v) : (v < 0 ? ~0ULL : 0);
  }
  template <int W, bool S>
  static u64 word(const ap_int_base<W, S, true>& x, int i) { return x.word_at(i); }
  template <class Owner>
  static u64 word(const range_ref<Owner>& r, int i) { return r.word(i); }

  // Bits lo .. lo + len - 1 (len <= 64) of x, and writing them: the raw access of range() and operator[].
  template <class T>
  static u64 load(const T& x, int lo, int len) { return (bits(x) >> lo) & low_mask(len); }
  template <class T>
  static void store(T& x, int lo, int len, u64 v) {
    const u64 field = low_mask(len) << lo;
    set_bits(x, (bits(x) & ~field) | ((v << lo) & field));
  }
  template <int W, bool S>
  static u64 load(const ap_int_base<W, S, true>& x, int lo, int len) { return x.load(lo, len); }
  template <int W, bool S>
  static void store(ap_int_base<W, S, true>& x, int lo, int len, u64 v) { x.store(lo, len, v); }
};

// Proxy returned by range(hi, lo): reads the selected bits as an unsigned integer and writes them. A range
// of more than 64 bits (of a wide ap_uint) copies all of them from and to other ranges and ap_int/ap_uint.
template <class Owner>
class range_ref {
 public:
  range_ref(Owner* owner, int hi, int lo) : owner_(owner), hi_(hi), lo_(lo) {}
  range_ref(const range_ref&) = default;

  u64 to_uint64() const { return access::load(*owner_, lo_, min_int(length(), 64)); }
  long long to_int64() const { return static_cast<long long>(wrap(to_uint64(), 64, true)); }
  unsigned to_uint() const { return static_cast<unsigned>(to_uint64()); }
  int to_int() const { return static_cast<int>(wrap(to_uint64(), 32, true)); }
  int length() const { return hi_ - lo_ + 1; }
  operator u64() const { return to_uint64(); }

  // Word i of the selected bits, zero-extended (access::word).
  u64 word(int i) const {
    return i * 64 < length() ? access::load(*owner_, lo_ + i * 64, min_int(length() - i * 64, 64)) : 0;
  }

  range_ref& operator=(u64 v) {
    for (int i = 0; i * 64 < length(); i++) {
      access::store(*owner_, lo_ + i * 64, min_int(length() - i * 64, 64), i ? 0 : v);
    }
    return *this;
  }
  template <class T, class = if_c_int<T>>
  range_ref& operator=(T v) { return put(int_of<T>(v)); }
  template <int W2, bool S2>
  range_ref& operator=(const ap_int_base<W2, S2>& v) { return put(v); }
  range_ref& operator=(const range_ref& v) { return put(v); }
  template <class Other>
  range_ref& operator=(const range_ref<Other>& v) { return put(v); }

 private:
  Owner* owner_;
  int hi_, lo_;

  // The low length() bits of v's two's-complement bits, into the selected bits.
  template <class Source>
  range_ref& put(const Source& v) {
    for (int i = 0; i * 64 < length(); i++) {
      access::store(*owner_, lo_ + i * 64, min_int(length() - i * 64, 64), access::word(v, i));
    }
    return *this;
  }
};

// Proxy returned by operator[] on a non-const object: one bit, readable and writable.
template <class Owner>
class bit_ref {
 public:
  bit_ref(Owner* owner, int index) : owner_(owner), index_(index) {}
  bit_ref(const bit_ref&) = default;
  operator bool() const { return access::load(*owner_, index_, 1) != 0; }
  bit_ref& operator=(bool b) {
    access::store(*owner_, index_, 1, b ? 1 : 0);
    return *this;
  }
  bit_ref& operator=(const bit_ref& b) { return *this = static_cast<bool>(b); }

 private:
  Owner* owner_;
  int index_;
};

}  // namespace ap_detail

template <int W, bool S, bool Big>
struct ap_int_base {
  static_assert(W >= 1, "hlsfuse ap_int/ap_uint: width must be 1..64 (or wider: ap_int_wide.h)");

  typedef typename std::conditional<S, long long, unsigned long long>::type raw_type;
  static const int width = W;
  static const bool sign_flag = S;

  // Construction and assignment: from ap_int/ap_uint and C integers keep the low W bits; from
  // double/float and ap_fixed round toward zero, then keep the low W bits. Default construction leaves
  // the value undefined, as AMD's does: poisoned (ap_detail::poison).
  ap_int_base() { set_bits(ap_detail::poison(W)); }
  template <int W2, bool S2>
  ap_int_base(const ap_int_base<W2, S2>& x) { set_bits(ap_detail::access::word(x, 0)); }
  template <class T, class = ap_detail::if_c_int<T>>
  ap_int_base(T v) { set(v); }
  ap_int_base(double d) { set_bits(ap_detail::trunc_bits(d)); }
  ap_int_base(float f) { set_bits(ap_detail::trunc_bits(f)); }
  template <int W2, int I2, bool S2, ap_q_mode Q2, ap_o_mode O2, int N2>
  ap_int_base(const ap_fixed_base<W2, I2, S2, Q2, O2, N2>& x) { set_bits(ap_detail::access::trunc_bits(x)); }
  template <class Owner>
  ap_int_base(const ap_detail::range_ref<Owner>& r) { set_bits(r.to_uint64()); }

  // Conversions.
  int to_int() const { return static_cast<int>(ap_detail::wrap(raw_, 32, true)); }
  unsigned to_uint() const { return static_cast<unsigned>(ap_detail::wrap(raw_, 32, false)); }
  long long to_int64() const { return static_cast<long long>(ap_detail::wrap(raw_, 64, true)); }
  unsigned long long to_uint64() const { return static_cast<unsigned long long>(raw_); }
  double to_double() const { return static_cast<double>(raw_); }
  float to_float() const { return static_cast<float>(raw_); }
  bool to_bool() const { return raw_ != 0; }
  operator raw_type() const { return raw_; }
  int length() const { return W; }

  // Bit access: range(hi, lo) reads/writes bits lo..hi as an unsigned integer; range() is all W bits.
  ap_detail::range_ref<ap_int_base> range(int hi, int lo) const {
    return ap_detail::range_ref<ap_int_base>(const_cast<ap_int_base*>(this), hi, lo);
  }
  ap_detail::range_ref<ap_int_base> range() const { return range(W - 1, 0); }
  ap_detail::range_ref<ap_int_base> operator()(int hi, int lo) const { return range(hi, lo); }
  ap_detail::bit_ref<ap_int_base> operator[](int i) { return ap_detail::bit_ref<ap_int_base>(this, i); }
  bool operator[](int i) const { return ((ap_detail::access::bits(*this) >> i) & 1) != 0; }

  // Arithmetic at full precision (see the header comment for the result widths).
  template <int W2, bool S2>
  typename ap_detail::int_result<W, S, W2, S2>::plus operator+(const ap_int_base<W2, S2>& b) const {
    typedef typename ap_detail::int_result<W, S, W2, S2>::plus R;
    return ap_detail::access::make<R>(ap_detail::wide(raw_) + ap_detail::access::value(b));
  }
  template <int W2, bool S2>
  typename ap_detail::int_result<W, S, W2, S2>::minus operator-(const ap_int_base<W2, S2>& b) const {
    typedef typename ap_detail::int_result<W, S, W2, S2>::minus R;
    return ap_detail::access::make<R>(ap_detail::wide(raw_) - ap_detail::access::value(b));
  }
  template <int W2, bool S2>
  typename ap_detail::int_result<W, S, W2, S2>::mult operator*(const ap_int_base<W2, S2>& b) const {
    typedef typename ap_detail::int_result<W, S, W2, S2>::mult R;
    return ap_detail::access::make<R>(ap_detail::wide(raw_) * ap_detail::access::value(b));
  }
  template <int W2, bool S2>
  typename ap_detail::int_result<W, S, W2, S2>::logic operator&(const ap_int_base<W2, S2>& b) const {
    return logic<W2, S2>(ap_detail::wide(raw_) & ap_detail::access::value(b));
  }
  template <int W2, bool S2>
  typename ap_detail::int_result<W, S, W2, S2>::logic operator|(const ap_int_base<W2, S2>& b) const {
    return logic<W2, S2>(ap_detail::wide(raw_) | ap_detail::access::value(b));
  }
  template <int W2, bool S2>
  typename ap_detail::int_result<W, S, W2, S2>::logic operator^(const ap_int_base<W2, S2>& b) const {
    return logic<W2, S2>(ap_detail::wide(raw_) ^ ap_detail::access::value(b));
  }
  ap_int_base operator+() const { return *this; }
  typename ap_detail::int_result<1, false, W, S>::minus operator-() const {  // AMD: ap_uint<1>(0) - *this
    return ap_int_base<1, false>(0) - *this;
  }
  ap_int_base operator~() const { return ap_int_base(~raw_); }
  bool operator!() const { return raw_ == 0; }

  // Shifts keep this type; a negative count shifts the other way, a count >= W gives 0 (or -1 for a
  // negative value shifted right).
  template <class T, class = ap_detail::if_c_int<T>>
  ap_int_base operator<<(T n) const { return shifted(static_cast<long long>(n)); }
  template <class T, class = ap_detail::if_c_int<T>>
  ap_int_base operator>>(T n) const { return shifted(-static_cast<long long>(n)); }
  template <int W2, bool S2>
  ap_int_base operator<<(const ap_int_base<W2, S2>& n) const { return shifted(n.to_int64()); }
  template <int W2, bool S2>
  ap_int_base operator>>(const ap_int_base<W2, S2>& n) const { return shifted(-n.to_int64()); }

  // Compound assignment: the full-precision result is assigned back (wrapping to W bits); an ap_fixed
  // operand is first rounded toward zero to an integer, as AMD does.
#define HLSFUSE_AP_INT_COMPOUND(OP)                                                       \
  template <class T>                                                                      \
  auto operator OP##=(const T& b) -> decltype(*this = *this OP ap_detail::int_operand(b)) { \
    return *this = *this OP ap_detail::int_operand(b);                                    \
  }
  HLSFUSE_AP_INT_COMPOUND(+)
  HLSFUSE_AP_INT_COMPOUND(-)
  HLSFUSE_AP_INT_COMPOUND(*)
  HLSFUSE_AP_INT_COMPOUND(&)
  HLSFUSE_AP_INT_COMPOUND(|)
  HLSFUSE_AP_INT_COMPOUND(^)
#undef HLSFUSE_AP_INT_COMPOUND
  template <class T>
  auto operator<<=(const T& n) -> decltype(*this = *this << n) { return *this = *this << n; }
  template <class T>
  auto operator>>=(const T& n) -> decltype(*this = *this >> n) { return *this = *this >> n; }
  ap_int_base& operator++() { set(ap_detail::wide(raw_) + 1); return *this; }
  ap_int_base& operator--() { set(ap_detail::wide(raw_) - 1); return *this; }
  ap_int_base operator++(int) { ap_int_base old = *this; ++*this; return old; }
  ap_int_base operator--(int) { ap_int_base old = *this; --*this; return old; }

  // Exact comparisons with any ap_int/ap_uint (C integers: see the free operators below).
  template <int W2, bool S2>
  bool operator==(const ap_int_base<W2, S2>& b) const { return ap_detail::wide(raw_) == ap_detail::access::value(b); }
  template <int W2, bool S2>
  bool operator!=(const ap_int_base<W2, S2>& b) const { return ap_detail::wide(raw_) != ap_detail::access::value(b); }
  template <int W2, bool S2>
  bool operator<(const ap_int_base<W2, S2>& b) const { return ap_detail::wide(raw_) < ap_detail::access::value(b); }
  template <int W2, bool S2>
  bool operator<=(const ap_int_base<W2, S2>& b) const { return ap_detail::wide(raw_) <= ap_detail::access::value(b); }
  template <int W2, bool S2>
  bool operator>(const ap_int_base<W2, S2>& b) const { return ap_detail::wide(raw_) > ap_detail::access::value(b); }
  template <int W2, bool S2>
  bool operator>=(const ap_int_base<W2, S2>& b) const { return ap_detail::wide(raw_) >= ap_detail::access::value(b); }

 private:
  friend struct ap_detail::access;
  raw_type raw_;

  ap_int_base(ap_detail::raw_tag, raw_type raw) : raw_(raw) {}
  void set(ap_detail::wide v) { raw_ = static_cast<raw_type>(ap_detail::wrap(v, W, S)); }
  void set_bits(ap_detail::u64 bits) { raw_ = static_cast<raw_type>(ap_detail::from_bits(bits, W, S)); }

  template <int W2, bool S2>
  typename ap_detail::int_result<W, S, W2, S2>::logic logic(ap_detail::wide v) const {
    typedef typename ap_detail::int_result<W, S, W2, S2>::logic R;
    return ap_detail::access::make<R>(ap_detail::wrap(v, R::width, R::sign_flag));
  }

  ap_int_base shifted(long long n) const {  // n > 0: left, n < 0: right
    ap_int_base r(ap_detail::raw_tag(), 0);
    if (n >= W) return r;
    if (n >= 0) {
      r.set_bits(static_cast<ap_detail::u64>(raw_) << n);
    } else {
      r.set(ap_detail::shift_down(raw_, n <= -W ? W : static_cast<int>(-n)));
    }
    return r;
  }
};

template <int W, bool S, bool Big>
const int ap_int_base<W, S, Big>::width;
template <int W, bool S, bool Big>
const bool ap_int_base<W, S, Big>::sign_flag;

#include "ap_int_wide.h"

// C integer operands act as ap_int/ap_uint of their own width.

#define HLSFUSE_AP_INT_C_OP(OP)                                      \
  template <int W, bool S, class T, class = ap_detail::if_c_int<T>> \
  auto operator OP(const ap_int_base<W, S>& a, T b) {               \
    return a OP ap_detail::int_of<T>(b);                            \
  }                                                                 \
  template <int W, bool S, class T, class = ap_detail::if_c_int<T>> \
  auto operator OP(T a, const ap_int_base<W, S>& b) {               \
    return ap_detail::int_of<T>(a) OP b;                            \
  }
HLSFUSE_AP_INT_C_OP(+)
HLSFUSE_AP_INT_C_OP(-)
HLSFUSE_AP_INT_C_OP(*)
HLSFUSE_AP_INT_C_OP(&)
HLSFUSE_AP_INT_C_OP(|)
HLSFUSE_AP_INT_C_OP(^)
HLSFUSE_AP_INT_C_OP(==)
HLSFUSE_AP_INT_C_OP(!=)
HLSFUSE_AP_INT_C_OP(<)
HLSFUSE_AP_INT_C_OP(<=)
HLSFUSE_AP_INT_C_OP(>)
HLSFUSE_AP_INT_C_OP(>=)
#undef HLSFUSE_AP_INT_C_OP

template <int W, bool S>
std::ostream& operator<<(std::ostream& os, const ap_int_base<W, S>& x) {
  return os << static_cast<typename ap_int_base<W, S>::raw_type>(x);
}

#include "ap_fixed.h"

#endif  // HLSFUSE_AP_INT_H
