// Runs the operations of the work-alike ap_int/ap_uint wider than 64 bits (hw/hls/include/ap_int_wide.h) that
// tests/test_wide_ports.py lists on stdin, one per line, and prints each result on one line; the test compares
// them with Python's integers.
//
// A line: W S OP X..., with W in 65, 128, 200, S 1 for ap_int (0: ap_uint), X the value's 64-bit words in hex
// (least significant first), then OP's arguments:
//     words                      X
//     read HI LO                 X.range(HI, LO) copied into an ap_uint<W>, and its to_uint64()
//     write HI LO Y...           X.range(HI, LO) = Y.range(HI - LO, 0) (Y: W-bit words like X)
//     write64 HI LO V            X.range(HI, LO) = V (an unsigned long long, in hex)
//     shl N / shr N              X << N, X >> N
//     not                        ~X
//     bit I B                    X[I] = B, then X and X[I]
//     int V                      ap_int_base<W, S>(V) of a long long (decimal), X unused
//     elem V                     X.range(12 L + 11, 12 L) = E.range(11, 0) for the ap_int<12> E = V at every
//                                lane L, then the lanes read back into ap_int<12> (to_int)
//     eq Y...                    X == Y, X != Y, X == 5
//     to                         to_int(), to_uint(), to_int64(), to_uint64()
// Results are printed as W-bit words in hex (through range(), least significant first) or as decimals.
#include <ap_int.h>

#include <cstdio>
#include <iostream>
#include <string>

namespace {

template <class T>
T read_value() {
  T x;
  for (int k = 0; k * 64 < T::width; k++) {
    unsigned long long word = 0;
    std::cin >> std::hex >> word >> std::dec;
    const int hi = k * 64 + 63 < T::width ? k * 64 + 63 : T::width - 1;
    x.range(hi, k * 64) = word;
  }
  return x;
}

template <class T>
void put_words(const T& x) {
  for (int k = 0; k * 64 < T::width; k++) {
    const int hi = k * 64 + 63 < T::width ? k * 64 + 63 : T::width - 1;
    std::printf(" %llx", x.range(hi, k * 64).to_uint64());
  }
}

template <int W, bool S>
void run(const std::string& op) {
  typedef ap_int_base<W, S> T;
  T x = read_value<T>();
  if (op == "words") {
    put_words(x);
  } else if (op == "read") {
    int hi = 0, lo = 0;
    std::cin >> hi >> lo;
    const ap_uint<W> y = x.range(hi, lo);
    put_words(y);
    std::printf(" %llx", x.range(hi, lo).to_uint64());
  } else if (op == "write") {
    int hi = 0, lo = 0;
    std::cin >> hi >> lo;
    const T y = read_value<T>();
    x.range(hi, lo) = y.range(hi - lo, 0);
    put_words(x);
  } else if (op == "write64") {
    int hi = 0, lo = 0;
    unsigned long long v = 0;
    std::cin >> hi >> lo >> std::hex >> v >> std::dec;
    x.range(hi, lo) = v;
    put_words(x);
  } else if (op == "shl" || op == "shr") {
    int n = 0;
    std::cin >> n;
    put_words(op == "shl" ? x << n : x >> n);
  } else if (op == "not") {
    put_words(~x);
  } else if (op == "bit") {
    int i = 0, b = 0;
    std::cin >> i >> b;
    x[i] = b != 0;
    put_words(x);
    std::printf(" %d", static_cast<int>(x[i]));
  } else if (op == "int") {
    long long v = 0;
    std::cin >> v;
    put_words(T(v));
  } else if (op == "elem") {
    int v = 0;
    std::cin >> v;
    const ap_int<12> e = v;
    for (int l = 0; l * 12 + 11 < W; l++) x.range(l * 12 + 11, l * 12) = e.range(11, 0);
    put_words(x);
    for (int l = 0; l * 12 + 11 < W; l++) {
      ap_int<12> back;
      back.range(11, 0) = x.range(l * 12 + 11, l * 12);
      std::printf(" %d", back.to_int());
    }
  } else if (op == "eq") {
    const T y = read_value<T>();
    std::printf(" %d %d %d", x == y ? 1 : 0, x != y ? 1 : 0, x == 5 ? 1 : 0);
  } else if (op == "to") {
    std::printf(" %d %u %lld %llx", x.to_int(), x.to_uint(), x.to_int64(), x.to_uint64());
  } else {
    std::printf(" unknown op %s", op.c_str());
  }
}

}  // namespace

int main() {
  int width = 0, sign = 0;
  std::string op;
  while (std::cin >> width >> sign >> op) {
    if (width == 65) {
      sign ? run<65, true>(op) : run<65, false>(op);
    } else if (width == 128) {
      sign ? run<128, true>(op) : run<128, false>(op);
    } else {
      sign ? run<200, true>(op) : run<200, false>(op);
    }
    std::printf("\n");
  }
  return 0;
}
