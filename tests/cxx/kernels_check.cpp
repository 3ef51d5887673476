// Drives hlsfuse's HLS kernel library (hw/hls/hlsfuse) through hls::stream for tests/test_hls_kernels.py.
//
// The test generates cases.inc: one function per case (case_<n>) that reads its inputs from stdin, runs a
// stage and prints "<n> <values...>", and run_cases() calling them in order. Fixed-point values travel as
// raw integers, float32 values as C99 hex floats, so nothing is rounded on the way in or out.
//
// This file also holds the window and rows stages composed from the library's building blocks (conv2d,
// max_pool2d, avg_pool2d, dense, matmul; identity epilogue): the line buffer's push/snapshot contract
// (linebuffer.h) with the padding, emit, stride and real-tap logic a stage supplies itself (`geometry`
// below), and the MAC helpers of mac.h. They are the proof that the blocks compose into bit-exact stages.
#include <hlsfuse/kernels.h>

#include <cstdio>
#include <cstdlib>
#include <type_traits>

namespace {

// ---------------------------------------------------------------------------------------------- values

void input_ended() {
  std::fprintf(stderr, "kernels_check: input data ended early\n");
  std::exit(2);
}

template <class T>
T read_value(std::true_type /* float */) {
  char token[64];
  if (std::scanf("%63s", token) != 1) input_ended();
  return static_cast<T>(std::strtod(token, nullptr));  // hex floats are exact
}

template <class T>
T read_value(std::false_type /* float */) {
  long long raw = 0;
  if (std::scanf("%lld", &raw) != 1) input_ended();
  return hlsf::from_raw<T>(raw);
}

template <class T>
T read_value() {
  return read_value<T>(std::is_floating_point<T>());
}

void put(float x) { std::printf(" %a", static_cast<double>(x)); }
template <class T>
void put(const T& x) {
  std::printf(" %lld", hlsf::raw_of(x));
}

template <class T>
void feed(hls::stream<T>& s, int n) {
  for (int i = 0; i < n; ++i) s.write(read_value<T>());
}

template <class T, int N>
void load(T (&a)[N]) {
  for (int i = 0; i < N; ++i) a[i] = read_value<T>();
}

// Prints every element left in the stream, so a stage writing too many or too few shows in the count.
template <class T>
void drain(int id, hls::stream<T>& s) {
  std::printf("%d", id);
  while (!s.empty()) put(s.read());
  std::printf("\n");
}

// ---------------------------------------------------------------------------------------------- stages

// The geometry of a window stage, which the line buffer leaves to its caller: an H x W image padded by
// [PT, PL, PB, PR] (ONNX order), a KH x KW kernel with strides SH, SW and dilation DH, DW.
template <int H, int W, int KH, int KW, int SH, int SW, int PT, int PL, int PB, int PR, int DH = 1, int DW = 1>
struct geometry {
  static const int IN_H = H, IN_W = W, K_H = KH, K_W = KW, TAPS = KH * KW, DIL_H = DH, DIL_W = DW;
  static const int HP = H + PT + PB, WP = W + PL + PR;
  static const int SPAN_H = DH * (KH - 1) + 1, SPAN_W = DW * (KW - 1) + 1;
  static_assert(H >= 1 && W >= 1 && KH >= 1 && KW >= 1 && SH >= 1 && SW >= 1 && DH >= 1 && DW >= 1,
                "geometry: sizes, kernel, strides and dilation must be positive");
  static_assert(PT >= 0 && PL >= 0 && PB >= 0 && PR >= 0, "geometry: padding must not be negative");
  static_assert(SPAN_H <= HP && SPAN_W <= WP, "geometry: the window spans more than the padded input");

  static bool real_pixel(int r, int q) { return r >= PT && r < PT + H && q >= PL && q < PL + W; }
  // The window ending at padded position (r, q) is an output pixel.
  static bool emits(int r, int q) {
    return r >= SPAN_H - 1 && (r - (SPAN_H - 1)) % SH == 0 && q >= SPAN_W - 1 && (q - (SPAN_W - 1)) % SW == 0;
  }
  // real[kh*KW + kw]: tap (kh, kw) of the window ending at (r, q) lies inside the image; returns their count
  // (avg_pool2d's divisor with count_include_pad=False).
  static int real_taps(int r, int q, bool (&real)[TAPS]) {
    int count = 0;
    for (int kh = 0; kh < KH; ++kh) {
      for (int kw = 0; kw < KW; ++kw) {
        const bool inside = real_pixel(r - SPAN_H + 1 + kh * DH, q - SPAN_W + 1 + kw * DW);
        real[kh * KW + kw] = inside;
        count += inside ? 1 : 0;
      }
    }
    return count;
  }
};

template <class T, int C, class G>
struct line_buffer_of {
  typedef hlsf::line_buffer<T, C, G::WP, G::K_H, G::K_W, G::DIL_H, G::DIL_W> type;
};

// conv2d over BATCH frames of H x W x C (G's geometry), Cout outputs per pixel, identity epilogue: push every
// padded position's channels; after the last channel of a position that ends an output window, snapshot the
// window and emit its COUT outputs from the snapshot.
template <class T_IN, class T_OUT, class ACC, int BATCH, int C, int COUT, int GROUPS, int SIMD, class G, class T_W,
          int NW>
void conv2d_stage(hls::stream<T_IN>& in, hls::stream<T_OUT>& out, const T_W (&w)[NW]) {
  T_IN taps[G::TAPS * C];
  for (int b = 0; b < BATCH; ++b) {
    typename line_buffer_of<T_IN, C, G>::type lb;
    for (int r = 0; r < G::HP; ++r) {
      for (int q = 0; q < G::WP; ++q) {
        const bool real = G::real_pixel(r, q);
        for (int c = 0; c < C; ++c) {
#pragma HLS PIPELINE II=1
          T_IN v = T_IN(0);
          if (real) v = in.read();
          lb.push(q, c, v);
        }
        if (G::emits(r, q)) {
          lb.snapshot(taps);
          for (int co = 0; co < COUT; ++co) {
#pragma HLS PIPELINE II=1
            ACC acc = 0;
            for (int f = 0; f < G::TAPS * (C / GROUPS) / SIMD; ++f) {
              acc = hlsf::conv_mac<ACC, G::TAPS, COUT, GROUPS, SIMD, T_W>(acc, taps, w, co, f);
            }
            out.write(T_OUT(acc));
          }
        }
      }
    }
  }
}

// max_pool2d: padding is pushed as zeros and excluded from the maximum by the real-tap mask.
template <class T_IN, class T_OUT, int BATCH, int C, class G>
void max_pool2d_stage(hls::stream<T_IN>& in, hls::stream<T_OUT>& out) {
  T_IN taps[G::TAPS * C];
  bool real_tap[G::TAPS];
  for (int b = 0; b < BATCH; ++b) {
    typename line_buffer_of<T_IN, C, G>::type lb;
    for (int r = 0; r < G::HP; ++r) {
      for (int q = 0; q < G::WP; ++q) {
        const bool real = G::real_pixel(r, q);
        for (int c = 0; c < C; ++c) {
#pragma HLS PIPELINE II=1
          T_IN v = T_IN(0);
          if (real) v = in.read();
          lb.push(q, c, v);
          if (c == C - 1 && G::emits(r, q)) lb.snapshot(taps);
        }
        if (G::emits(r, q)) {
          G::real_taps(r, q, real_tap);
          for (int c = 0; c < C; ++c) {
#pragma HLS PIPELINE II=1
            out.write(T_OUT(hlsf::window_max<G::TAPS>(taps, c, real_tap)));
          }
        }
      }
    }
  }
}

// avg_pool2d: the window sum of the snapshot divided by KH*KW (INCLUDE_PAD) or by the real taps.
template <class T_IN, class T_OUT, class ACC, int BATCH, int C, class G, bool INCLUDE_PAD>
void avg_pool2d_stage(hls::stream<T_IN>& in, hls::stream<T_OUT>& out) {
  T_IN taps[G::TAPS * C];
  bool real_tap[G::TAPS];
  for (int b = 0; b < BATCH; ++b) {
    typename line_buffer_of<T_IN, C, G>::type lb;
    for (int r = 0; r < G::HP; ++r) {
      for (int q = 0; q < G::WP; ++q) {
        const bool real = G::real_pixel(r, q);
        for (int c = 0; c < C; ++c) {
#pragma HLS PIPELINE II=1
          lb.push(q, c, real ? in.read() : T_IN(0));
        }
        if (G::emits(r, q)) {
          lb.snapshot(taps);
          const int count = INCLUDE_PAD ? G::TAPS : G::real_taps(r, q, real_tap);
          for (int c = 0; c < C; ++c) {
#pragma HLS PIPELINE II=1
            out.write(hlsf::assign_quotient<T_OUT>(hlsf::window_sum<ACC, G::TAPS>(taps, c), count));
          }
        }
      }
    }
  }
}

// The divisors (real-tap counts) the pool stages use, one per output pixel (checked against
// hlsfuse.ops.nn.pool_counts); each count is also checked against the mask it came from.
template <class G>
void pool_counts(int id) {
  bool real_tap[G::TAPS];
  std::printf("%d", id);
  for (int r = 0; r < G::HP; ++r) {
    for (int q = 0; q < G::WP; ++q) {
      if (G::emits(r, q)) {
        const int count = G::real_taps(r, q, real_tap);
        int set = 0;
        for (int t = 0; t < G::TAPS; ++t) set += real_tap[t] ? 1 : 0;
        std::printf(" %d", set == count ? count : -1);
      }
    }
  }
  std::printf("\n");
}

// dense over ROWS rows of K inputs, N outputs per row.
template <class T_IN, class T_OUT, class ACC, int ROWS, int K, int N, int SIMD, class T_W, int NK>
void dense_stage(hls::stream<T_IN>& in, hls::stream<T_OUT>& out, const T_W (&w)[NK]) {
  T_IN x[K];
  for (int row = 0; row < ROWS; ++row) {
    for (int k = 0; k < K; ++k) {
#pragma HLS PIPELINE II=1
      x[k] = in.read();
    }
    for (int n = 0; n < N; ++n) {
#pragma HLS PIPELINE II=1
      ACC acc = 0;
      for (int f = 0; f < K / SIMD; ++f) acc = hlsf::dense_mac<ACC, SIMD, T_W>(acc, x, w, n, f);
      out.write(T_OUT(acc));
    }
  }
}

// matmul of BATCH x M rows of K inputs by a constant b holding B_BATCH matrices K x N (B_BATCH = 1: one
// matrix for every row, else one per batch index), N outputs per row.
template <class T_IN, class T_OUT, class ACC, int BATCH, int M, int K, int N, int B_BATCH, int SIMD, class T_B,
          int NB>
void matmul_stage(hls::stream<T_IN>& in, hls::stream<T_OUT>& out, const T_B (&b)[NB]) {
  static_assert(NB == B_BATCH * K * N && (B_BATCH == 1 || B_BATCH == BATCH), "matmul_stage: b's shape");
  T_IN x[K];
  for (int batch = 0; batch < BATCH; ++batch) {
    const int base = B_BATCH == 1 ? 0 : batch * K;  // the first row of b's matrix (b as rows of N)
    for (int m = 0; m < M; ++m) {
      for (int k = 0; k < K; ++k) {
#pragma HLS PIPELINE II=1
        x[k] = in.read();
      }
      for (int n = 0; n < N; ++n) {
#pragma HLS PIPELINE II=1
        ACC acc = 0;
        for (int f = 0; f < K / SIMD; ++f) acc = hlsf::matmul_mac<ACC, N, SIMD, T_B>(acc, x, b, base, n, f);
        out.write(T_OUT(acc));
      }
    }
  }
}

// -------------------------------------------------------------------------------------- numeric checks

// assign_quotient<T_OUT>(acc, n) for COUNT pairs (raw acc, n) read from the input.
template <class ACC, class T_OUT>
void quotients(int id, int count) {
  std::printf("%d", id);
  for (int i = 0; i < count; ++i) {
    const ACC acc = read_value<ACC>();
    const int n = static_cast<int>(read_value<ap_fixed<32, 32> >().to_int());
    put(hlsf::assign_quotient<T_OUT>(acc, n));
  }
  std::printf("\n");
}

template <class T, int SHIFT>
void lut_indices(int id, int count) {
  std::printf("%d", id);
  for (int i = 0; i < count; ++i) {
    const T x = read_value<T>();
    std::printf(" %u", hlsf::lut_index<hlsf::format<T>::width, hlsf::format<T>::is_signed, SHIFT>(x));
  }
  std::printf("\n");
}

#include "cases.inc"

}  // namespace

int main() {
  run_cases();
  return 0;
}
