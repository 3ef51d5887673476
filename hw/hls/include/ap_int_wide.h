// hlsfuse work-alike of AMD's ap_int/ap_uint wider than 64 bits, included by ap_int.h (not on its own).
//
// hlsfuse uses them as bit containers: the TDATA of an AXI4-Stream port of many lanes (ap_uint<L x W>,
// element 0 in the low bits), filled and emptied element by element with range(hi, lo). So they have what
// that needs, with AMD's semantics: construction and assignment from any ap_int/ap_uint, C integer or
// range() (the low W bits of the source, sign-extended when it is signed), range(hi, lo) reads and writes of
// any length, operator[], shifts (a negative count shifts the other way), ~, == and != (exact), and
// to_int()/to_uint()/to_int64()/to_uint64() (the low bits). Anything else -- arithmetic, ordering, &, |, ^,
// floating point, ap_fixed, implicit conversion to a C integer -- is a compile error.
//
// Storage: ceil(W / 64) words, least significant first. The bits of the last word above W always hold
// copies of the sign bit (ap_int) or zeros (ap_uint), so that word i of the value extended without end
// (access::word) is stored word i, or the fill beyond the last.
#ifndef HLSFUSE_AP_INT_WIDE_H
#define HLSFUSE_AP_INT_WIDE_H

template <int W, bool S>
struct ap_int_base<W, S, true> {
  static const int width = W;
  static const bool sign_flag = S;

  ap_int_base() {  // undefined, as AMD's: poisoned (ap_detail::poison)
    for (int k = 0; k < kWords; k++) words_[k] = ap_detail::poison(64);
    normalize();
  }
  template <int W2, bool S2, bool B2>
  ap_int_base(const ap_int_base<W2, S2, B2>& x) : words_() { take(x); }
  template <class T, class = ap_detail::if_c_int<T>>
  ap_int_base(T v) : words_() { take(ap_detail::int_of<T>(v)); }
  template <class Owner>
  ap_int_base(const ap_detail::range_ref<Owner>& r) : words_() { take(r); }

  // Conversions of the low bits.
  int to_int() const { return static_cast<int>(ap_detail::from_bits(words_[0], 32, true)); }
  unsigned to_uint() const { return static_cast<unsigned>(words_[0]); }
  long long to_int64() const { return static_cast<long long>(ap_detail::from_bits(words_[0], 64, true)); }
  unsigned long long to_uint64() const { return words_[0]; }
  bool to_bool() const { return *this != 0; }
  int length() const { return W; }

  // Bit access: range(hi, lo) reads/writes bits lo..hi; range() is all W bits.
  ap_detail::range_ref<ap_int_base> range(int hi, int lo) const {
    return ap_detail::range_ref<ap_int_base>(const_cast<ap_int_base*>(this), hi, lo);
  }
  ap_detail::range_ref<ap_int_base> range() const { return range(W - 1, 0); }
  ap_detail::range_ref<ap_int_base> operator()(int hi, int lo) const { return range(hi, lo); }
  ap_detail::bit_ref<ap_int_base> operator[](int i) { return ap_detail::bit_ref<ap_int_base>(this, i); }
  bool operator[](int i) const { return load(i, 1) != 0; }

  ap_int_base operator~() const {
    ap_int_base r(0);
    for (int k = 0; k < kWords; k++) r.words_[k] = ~words_[k];
    r.normalize();
    return r;
  }
  bool operator!() const { return *this == 0; }

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
  template <class T>
  ap_int_base& operator<<=(const T& n) { return *this = *this << n; }
  template <class T>
  ap_int_base& operator>>=(const T& n) { return *this = *this >> n; }

  // Exact comparisons with any ap_int/ap_uint (a C integer on the right: the free operators in ap_int.h).
  template <int W2, bool S2>
  bool operator==(const ap_int_base<W2, S2>& b) const {
    const int words = (kWords > (W2 + 63) / 64 ? kWords : (W2 + 63) / 64) + 1;  // the last: the fills
    for (int k = 0; k < words; k++) {
      if (word_at(k) != ap_detail::access::word(b, k)) return false;
    }
    return true;
  }
  template <int W2, bool S2>
  bool operator!=(const ap_int_base<W2, S2>& b) const { return !(*this == b); }

 private:
  friend struct ap_detail::access;
  enum { kWords = (W + 63) / 64 };
  ap_detail::u64 words_[kWords];

  // Word i of the value extended without end.
  ap_detail::u64 word_at(long long i) const {
    if (i < kWords) return words_[i];
    return S && (words_[kWords - 1] >> 63) != 0 ? ~0ULL : 0;
  }

  // The 64 bits from bit p up (p may be negative: the bits below 0 are zeros).
  ap_detail::u64 bits_at(long long p) const {
    if (p <= -64) return 0;
    if (p < 0) return words_[0] << -p;
    const long long i = p / 64;
    const int b = static_cast<int>(p % 64);
    return b == 0 ? word_at(i) : (word_at(i) >> b) | (word_at(i + 1) << (64 - b));
  }

  ap_detail::u64 load(int lo, int len) const { return bits_at(lo) & ap_detail::low_mask(len); }

  void store(int lo, int len, ap_detail::u64 v) {  // len <= 64
    const ap_detail::u64 mask = ap_detail::low_mask(len);
    v &= mask;
    const int i = lo / 64, b = lo % 64;
    if (i < kWords) words_[i] = (words_[i] & ~(mask << b)) | (v << b);
    if (b != 0 && b + len > 64 && i + 1 < kWords) {
      words_[i + 1] = (words_[i + 1] & ~(mask >> (64 - b))) | (v >> (64 - b));
    }
    normalize();
  }

  // The low W bits of x's two's-complement bits.
  template <class Source>
  void take(const Source& x) {
    for (int k = 0; k < kWords; k++) words_[k] = ap_detail::access::word(x, k);
    normalize();
  }

  // Restore the invariant: the bits of the last word above W copy the sign bit (ap_int) or are zeros.
  void normalize() {
    const int used = (W - 1) % 64 + 1;  // bits of the last word in use, 1..64
    if (used == 64) return;
    ap_detail::u64& top = words_[kWords - 1];
    const bool negative = S && ((top >> (used - 1)) & 1) != 0;
    top = negative ? (top | ~ap_detail::low_mask(used)) : (top & ap_detail::low_mask(used));
  }

  ap_int_base shifted(long long n) const {  // n > 0: left, n < 0: right
    ap_int_base r(0);
    if (n >= W) return r;
    const long long from = n <= -W ? W : -n;  // result bit j is bit j + from of this value
    for (int k = 0; k < kWords; k++) r.words_[k] = bits_at(64LL * k + from);
    r.normalize();
    return r;
  }
};

template <int W, bool S>
const int ap_int_base<W, S, true>::width;
template <int W, bool S>
const bool ap_int_base<W, S, true>::sign_flag;

#endif  // HLSFUSE_AP_INT_WIDE_H
