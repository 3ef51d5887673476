// Prints the results of the ap_int/ap_fixed/hls_stream/ap_axi_sdata API that hlsfuse's generated code
// uses, for exhaustive small cases. tests/test_hls_headers.py generates values.inc (value tables) and
// cases.inc (the numbered case list), builds this program against hlsfuse's work-alike headers and
// against AMD's (hls4ml's copy), checks every value against hlsfuse.types, and requires both builds to
// print the same values (but for "Z", the poison of default construction, printed with hlsfuse's headers only,
// and AMD's known defects).
//
// Output: one line per case, "<tag> <id> <values in hex>"; raw values are the W-bit patterns read
// through range(), doubles and floats their IEEE bit patterns. Only AMD's documented API is used here.
// `check read-empty` and `check leftover` exercise the stream model's error and warning instead.
#include <ap_axi_sdata.h>
#include <ap_fixed.h>
#include <ap_int.h>
#include <hls_stream.h>
#include <hlsfuse/numeric.h>  // hlsf::lanes, the token a channel of several lanes carries

#include <cstdio>
#include <cstring>
#include <string>

namespace {

template <class T>
unsigned long long bits(const T& x) {
  return x.range(T::width - 1, 0).to_uint64();
}

template <class T>
T from_bits(unsigned long long raw) {
  T x;
  x.range(T::width - 1, 0) = raw;
  return x;
}

void begin(const char* tag, int id) { std::printf("%s %d", tag, id); }
void put(unsigned long long v) { std::printf(" %llx", v); }
void put_signed(int v) { std::printf(v < 0 ? " -%x" : " %x", v < 0 ? -v : v); }
void end() { std::printf("\n"); }

unsigned long long double_bits(double d) {
  unsigned long long u;
  std::memcpy(&u, &d, sizeof u);
  return u;
}
unsigned long long float_bits(float f) {
  unsigned u;
  std::memcpy(&u, &f, sizeof u);
  return u;
}

// The format of a result type: width, integer bits, signedness.
template <int W, int I, bool S, ap_q_mode Q, ap_o_mode O, int N>
void put_type(const ap_fixed_base<W, I, S, Q, O, N>&) {
  put_signed(W);
  put_signed(I);
  put(S);
}
template <int W, bool S>
void put_type(const ap_int_base<W, S>&) {
  put_signed(W);
  put_signed(W);
  put(S);
}

// The sign: is_neg() of an ap_fixed (generated code calls it), a < 0 of an ap_int (which has no is_neg()).
template <int W, int I, bool S, ap_q_mode Q, ap_o_mode O, int N>
bool is_negative(const ap_fixed_base<W, I, S, Q, O, N>& x) {
  return x.is_neg();
}
template <int W, bool S>
bool is_negative(const ap_int_base<W, S>& x) {
  return x < 0;
}

unsigned cmp_mask(bool lt, bool le, bool gt, bool ge, bool eq, bool ne) {
  return lt | (le << 1) | (gt << 2) | (ge << 3) | (eq << 4) | (ne << 5);
}

#include "values.inc"  // kDoubles, kFloats, kInts, kLongs, kUnsigneds, kSmallInts, kPatterns

// Every raw value of Src assigned to Dst.
template <class Src, class Dst>
void check_assign(int id) {
  begin("A", id);
  for (unsigned long long r = 0; r < (1ULL << Src::width); ++r) {
    Dst d;
    d = from_bits<Src>(r);
    put(bits(d));
  }
  end();
}

// Dst constructed from each double, float and C integer of the tables.
template <class Dst>
void check_reals(int id) {
  begin("D", id);
  for (double v : kDoubles) put(bits(Dst(v)));
  end();
  begin("F", id);
  for (float v : kFloats) put(bits(Dst(v)));
  end();
  begin("I", id);
  for (int v : kInts) put(bits(Dst(v)));
  for (long long v : kLongs) put(bits(Dst(v)));
  for (unsigned v : kUnsigneds) put(bits(Dst(v)));
  end();
}

// The values one pair of operands prints, shared by the exhaustive and the random checks.

// +, -, * and every comparison at full precision.
// a's conversions to the C integer and floating types, as bits
template <class A>
void put_conversions(const A& a) {
    put(static_cast<unsigned>(a.to_int()));
    put(a.to_uint());
    put(static_cast<unsigned long long>(a.to_int64()));
    put(a.to_uint64());
    put(double_bits(a.to_double()));
    put(float_bits(a.to_float()));
}

template <class A, class B>
void put_arith(const A& a, const B& b) {
  put(bits(a + b));
  put(bits(a - b));
  put(bits(a * b));
  put(cmp_mask(a < b, a <= b, a > b, a >= b, a == b, a != b));
}

// The same with each C int of ``ints`` on either side (the int acts as a 32-bit type).
template <class A, int N>
void put_arith_int(const A& a, const int (&ints)[N]) {
  for (int v : ints) {
    put(bits(a + v));
    put(bits(v - a));
    put(bits(a * v));
    put(cmp_mask(a < v, a <= v, v < a, v <= a, a == v, v != a));
  }
}

// ap_int only: &, |, ^, ~, shifts by an ap_int count, increments, conversion to a C integer, an ap_uint index.
template <class A, class B>
void put_int_ops(const A& a, const B& b) {
  put(bits(a & b));
  put(bits(a | b));
  put(bits(a ^ b));
  put(bits(~a));
  put(bits(a << b));
  put(bits(a >> b));
  A c = a;
  c++;
  ++c;
  put(bits(c));
  c--;
  --c;
  --c;
  put(bits(c));
  put(static_cast<unsigned long long>(static_cast<long long>(a)));
  const ap_uint<2> index = b;
  put(static_cast<unsigned>(kSmallInts[index]));
}

// acc = a; acc += a * b; acc -= b; acc *= b: full precision, assigned with the accumulator's modes.
template <class Acc, class A, class B>
void put_compound(const A& a, const B& b) {
  Acc acc = a;
  acc += a * b;
  put(bits(acc));
  acc -= b;
  put(bits(acc));
  acc *= b;
  put(bits(acc));
}

// +, -, * and comparisons at full precision, for every pair of raw values.
template <class A, class B>
void check_arith(int id) {
  const A a0;
  const B b0;
  begin("T", id);
  put_type(a0 + b0);
  put_type(a0 - b0);
  put_type(a0 * b0);
  end();
  begin("R", id);
  for (unsigned long long ra = 0; ra < (1ULL << A::width); ++ra) {
    for (unsigned long long rb = 0; rb < (1ULL << B::width); ++rb) put_arith(from_bits<A>(ra), from_bits<B>(rb));
  }
  end();
}

// The same with a C int operand on either side (the int acts as a 32-bit type).
template <class A>
void check_arith_int(int id) {
  const A a0;
  begin("TC", id);
  put_type(a0 + 1);
  put_type(1 - a0);
  put_type(a0 * 1);
  end();
  begin("RC", id);
  for (unsigned long long ra = 0; ra < (1ULL << A::width); ++ra) put_arith_int(from_bits<A>(ra), kSmallInts);
  end();
}

// ap_int only: bitwise operators, shifts by an ap_int count, increments, conversion to a C integer.
template <class A, class B>
void check_int_ops(int id) {
  const A a0;
  const B b0;
  begin("TL", id);
  put_type(a0 & b0);
  end();
  begin("L", id);
  for (unsigned long long ra = 0; ra < (1ULL << A::width); ++ra) {
    for (unsigned long long rb = 0; rb < (1ULL << B::width); ++rb) put_int_ops(from_bits<A>(ra), from_bits<B>(rb));
  }
  end();
}

// Compound assignment: full-precision result assigned with the accumulator's modes.
template <class Acc, class A, class B>
void check_compound(int id) {
  begin("M", id);
  for (unsigned long long ra = 0; ra < (1ULL << A::width); ++ra) {
    for (unsigned long long rb = 0; rb < (1ULL << B::width); ++rb) {
      put_compound<Acc>(from_bits<A>(ra), from_bits<B>(rb));
    }
  }
  end();
}

// Unary minus, shifts by -2..W+1, conversions to C types, comparisons with doubles and ints.
template <class A>
void check_unary(int id) {
  begin("TU", id);
  put_type(-A());
  end();
  begin("U", id);
  for (unsigned long long ra = 0; ra < (1ULL << A::width); ++ra) {
    const A a = from_bits<A>(ra);
    put(bits(-a));
    for (int n = -2; n <= A::width + 1; ++n) {
      put(bits(a << n));
      put(bits(a >> n));
    }
    A s = a;
    s <<= 1;
    put(bits(s));
    s >>= 2;
    put(bits(s));
    put_conversions(a);
    put(a.range(A::width - 1, A::width / 2).to_uint64());
    put(a[0]);
    put(a[A::width - 1]);
    put(cmp_mask(a < 0.75, a <= -0.5, a > -1.25, a >= 1.0, a == 0.5, a != 0.0));
    put(cmp_mask(0.75 < a, -0.5 <= a, a > 1, 0 >= a, a == 0, -1 != a));
  }
  end();
}

// Bit writes through range() and [] on a pattern of all ones.
template <class A>
void check_bit_writes(int id) {
  begin("B", id);
  A x = from_bits<A>(~0ULL);
  x.range(A::width / 2, 0) = 0;
  put(bits(x));
  x[A::width - 1] = 0;
  put(bits(x));
  x[0] = 1;
  put(bits(x));
  ap_uint<A::width> u = x.range(A::width - 1, 0);
  put(bits(u));
  end();
}

#ifdef HLSFUSE_AP_FIXED_H
// Only with hlsfuse's headers: default construction poisons a value (AMD leaves it undefined): never 0, and
// another value at each construction. Eight of each type (an ap_uint of 100 bits: its words or'ed), and a
// packet's fields.
void check_defaults() {
  begin("Z", 0);
  for (int k = 0; k < 8; ++k) {
    const ap_fixed<8, 3> f;
    const ap_ufixed<1, 1> b;
    const ap_int<1> i;
    const ap_uint<5> u;
    const ap_int<64> l;
    const ap_uint<100> wide;
    put(bits(f));
    put(bits(b));
    put(bits(i));
    put(bits(u));
    put(bits(l));
    put(wide.range(63, 0).to_uint64() | wide.range(99, 64).to_uint64());
  }
  end();
  const hls::axis<ap_fixed<12, 4>, 0, 0, 0> p;
  begin("Z", 1);
  put(bits(p.data));
  put(bits(p.keep));
  put(bits(p.strb));
  put(bits(p.last));
  end();
}
#else
void check_defaults() {}
#endif

void check_stream() {
  hls::stream<ap_fixed<8, 3> > s("s");
  hls::stream<ap_fixed<8, 3> > unnamed;
  begin("S", 0);
  put(s.empty());
  put(s.full());
  s.write(ap_fixed<8, 3>(1.5));
  s << ap_fixed<8, 3>(-2.25);
  s.write(ap_fixed<8, 3>(0.125));
  put(s.size());
  ap_fixed<8, 3> x = s.read();
  put(bits(x));
  s >> x;
  put(bits(x));
  s.read(x);
  put(bits(x));
  put(s.empty());
  put(s.read_nb(x));
  unnamed.write(ap_fixed<8, 3>(3.75));
  put(unnamed.size());
  put(unnamed.read_nb(x));
  put(bits(x));
  put(unnamed.empty());
  end();
}

void check_axis() {
  hls::axis<ap_fixed<12, 4, AP_RND, AP_SAT>, 0, 0, 0> p;
  ap_axis<32, 0, 0, 0> q;
  ap_axiu<8, 0, 0, 0> r;
  hls::axis<ap_ufixed<3, 1>, 0, 0, 0> small;
  begin("X", 0);
  put(decltype(p.keep)::width);
  put(decltype(q.keep)::width);
  put(decltype(r.strb)::width);
  put(decltype(small.keep)::width);
  p.data = 2.7;
  p.keep = -1;
  p.strb = -1;
  p.last = 1;
  hls::stream<hls::axis<ap_fixed<12, 4, AP_RND, AP_SAT>, 0, 0, 0> > s("axis");
  s.write(p);
  const hls::axis<ap_fixed<12, 4, AP_RND, AP_SAT>, 0, 0, 0> got = s.read();
  put(bits(got.data));
  put(bits(got.keep));
  put(bits(got.strb));
  put(bits(got.last));
  q.data = -5;
  put(bits(q.data));
  end();
}

// --------------------------------------------------------------------------------------------------------
// Random operands at any width (widths 1 to 64, every mode): random.inc lists the cases and their values.
// Operand k of a case is pattern k of kPatterns read as the operand's type (its low W bits); the second operand
// of a pair is pattern (5 k + 1) mod N. Nothing here is checked against a model: the two header sets must agree.
// --------------------------------------------------------------------------------------------------------

const int kPairStep = 5;

// Src assigned to Dst: copy-initialization (a converting constructor) and assignment over another value.
template <class Src, class Dst>
void random_assign(int id) {
  begin("QA", id);
  for (unsigned long long p : kPatterns) {
    const Src s = from_bits<Src>(p);
    const Dst d = s;
    Dst e = from_bits<Dst>(~p);
    e = s;
    put(bits(d));
    put(bits(e));
  }
  end();
}

// Dst constructed from the case's doubles and floats, and from C integers of every kind.
template <class Dst, int ND, int NF>
void random_reals(int id, const double (&doubles)[ND], const float (&floats)[NF]) {
  begin("QD", id);
  for (double v : doubles) put(bits(Dst(v)));
  end();
  begin("QF", id);
  for (float v : floats) put(bits(Dst(v)));
  end();
  begin("QI", id);
  for (unsigned long long p : kPatterns) {
    put(bits(Dst(static_cast<long long>(p))));
    put(bits(Dst(static_cast<long>(p))));  // weights.h spells a 64-bit raw integer as a hexadecimal: a long
    put(bits(Dst(static_cast<unsigned long long>(p))));
    put(bits(Dst(static_cast<int>(p))));
    put(bits(Dst(static_cast<unsigned>(p))));
    put(bits(Dst(static_cast<short>(p))));
    put(bits(Dst(static_cast<signed char>(p))));
    put(bits(Dst((p & 1) != 0)));
  }
  end();
}

// put_arith, and the result types.
template <class A, class B>
void random_arith(int id) {
  const int n = sizeof(kPatterns) / sizeof(kPatterns[0]);
  const A a0 = from_bits<A>(0);
  const B b0 = from_bits<B>(0);
  begin("QT", id);
  put_type(a0 + b0);
  put_type(a0 - b0);
  put_type(a0 * b0);
  end();
  begin("QR", id);
  for (int k = 0; k < n; ++k) put_arith(from_bits<A>(kPatterns[k]), from_bits<B>(kPatterns[(kPairStep * k + 1) % n]));
  end();
}

// put_arith_int with the ints of kInts.
template <class A>
void random_arith_int(int id) {
  begin("QC", id);
  for (unsigned long long p : kPatterns) put_arith_int(from_bits<A>(p), kInts);
  end();
}

// Compound assignment (put_compound).
template <class Acc, class A, class B>
void random_compound(int id) {
  const int n = sizeof(kPatterns) / sizeof(kPatterns[0]);
  begin("QM", id);
  for (int k = 0; k < n; ++k) {
    put_compound<Acc>(from_bits<A>(kPatterns[k]), from_bits<B>(kPatterns[(kPairStep * k + 1) % n]));
  }
  end();
}

// Unary minus, shifts by the case's counts (negative, past the width), conversions, sign, bit and range reads
// and writes at the case's positions (on signed and negative values too), comparisons with doubles and ints.
template <class A, int NS, int NR>
void random_unary(int id, const int (&shifts)[NS], const int (&ranges)[NR][2]) {
  begin("QU", id);
  for (unsigned long long p : kPatterns) {
    const A a = from_bits<A>(p);
    put(bits(-a));
    for (int n : shifts) {
      put(bits(a << n));
      put(bits(a >> n));
      A s = a;
      s <<= n;
      put(bits(s));
      s = a;
      s >>= n;
      put(bits(s));
    }
    put_conversions(a);
    put(is_negative(a));
    put(a.length());
    for (const int (&r)[2] : ranges) {
      put(a.range(r[0], r[1]).to_uint64());
      put(a.range(r[0], r[1]).length());
      put(a[r[1]]);
      A w = a;
      w.range(r[0], r[1]) = ~p;
      put(bits(w));
      w.range(r[0], r[1]) = a.range(r[0] - r[1], 0);
      put(bits(w));
      w[r[0]] = ((p >> 7) & 1) != 0;
      put(bits(w));
    }
    put(cmp_mask(a < 0.75, a <= -0.5, a > -1.25, a >= 1.0, a == 0.5, a != 0.0));
    put(cmp_mask(0.75 < a, -0.5 <= a, a > 1, 0 >= a, a == 0, -1 != a));
  }
  end();
}

// ap_int/ap_uint only (put_int_ops), shift counts past the width too.
template <class A, class B>
void random_int_ops(int id) {
  const int n = sizeof(kPatterns) / sizeof(kPatterns[0]);
  begin("QL", id);
  for (int k = 0; k < n; ++k) {
    put_int_ops(from_bits<A>(kPatterns[k]), from_bits<B>(kPatterns[(kPairStep * k + 1) % n] % 80));
  }
  end();
}

// hls::stream of the types generated code streams: elements, tokens of lanes (a struct of an array) and
// AXI4-Stream packets, written, counted and read back in order.
template <class T, int L>
void random_streams(int id) {
  hls::stream<T> scalars("scalars");
  hls::stream<hlsf::lanes<T, L> > tokens("tokens");
  hls::stream<hls::axis<T, 0, 0, 0> > packets("packets");
  for (unsigned long long p : kPatterns) {
    scalars.write(from_bits<T>(p));
    hlsf::lanes<T, L> t;
    for (int l = 0; l < L; ++l) t.v[l] = from_bits<T>(p >> l);
    tokens.write(t);
    hls::axis<T, 0, 0, 0> packet;
    packet.data = from_bits<T>(~p);
    packet.keep = -1;
    packet.strb = -1;
    packet.last = p & 1;
    packets.write(packet);
  }
  begin("QS", id);
  put(scalars.size());
  put(tokens.size());
  put(packets.size());
  while (!scalars.empty()) {
    put(bits(scalars.read()));
    const hlsf::lanes<T, L> t = tokens.read();
    for (int l = 0; l < L; ++l) put(bits(t.v[l]));
    const hls::axis<T, 0, 0, 0> packet = packets.read();
    put(bits(packet.data));
    put(bits(packet.keep));
    put(bits(packet.strb));
    put(bits(packet.last));
  }
  put(packets.empty());
  end();
}

#include "cases.inc"  // run_cases(): calls the checks above, one numbered case each

}  // namespace

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "";
  if (mode == "read-empty") {
    hls::stream<int> lonely("lonely_channel");
    lonely.write(1);
    lonely.read();
    lonely.read();  // empty: reported, then the program stops
    std::printf("unreachable\n");
    return 0;
  }
  if (mode == "leftover") {
    hls::stream<int> full("full_channel");
    full.write(1);
    full.write(2);
    return 0;  // the destructor reports the two elements nobody read
  }
  run_cases();
  check_defaults();
  check_stream();
  check_axis();
  return 0;
}
