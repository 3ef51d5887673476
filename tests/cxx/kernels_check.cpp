// Drives hlsfuse's HLS kernel library (hw/hls/hlsfuse) through hls::stream for tests/test_hls_kernels.py.
//
// The test generates cases.inc: one function per case (case_<n>) that reads its inputs from stdin, runs a
// stage and prints "<n> <values...>", and run_cases() calling them in order. Fixed-point values travel as
// raw integers, float32 values as C99 hex floats, so nothing is rounded on the way in or out.
//
// This file also holds the window and rows stages as a generated design would write them from the library's
// building blocks (conv2d, max_pool2d, avg_pool2d, dense; identity epilogue), following the loop structure
// documented in linebuffer.h: they are the proof that the blocks compose into bit-exact stages.
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

// conv2d over BATCH frames of H x W x C (G's geometry), Cout outputs per pixel, identity epilogue.
template <class T_IN, class T_OUT, class ACC, int BATCH, int C, int COUT, int GROUPS, class G, class T_W, int NW>
void conv2d_stage(hls::stream<T_IN>& in, hls::stream<T_OUT>& out, const T_W (&w)[NW]) {
  for (int b = 0; b < BATCH; ++b) {
    hlsf::line_buffer<T_IN, C, G> lb;
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
          for (int co = 0; co < COUT; ++co) {
#pragma HLS PIPELINE II=1
            out.write(T_OUT(hlsf::conv_mac<ACC, COUT, GROUPS>(lb, w, co)));
          }
        }
      }
    }
  }
}

template <class T_IN, class T_OUT, int BATCH, int C, class G>
void max_pool2d_stage(hls::stream<T_IN>& in, hls::stream<T_OUT>& out) {
  for (int b = 0; b < BATCH; ++b) {
    hlsf::line_buffer<T_IN, C, G> lb;
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
          for (int c = 0; c < C; ++c) {
#pragma HLS PIPELINE II=1
            out.write(T_OUT(hlsf::window_max(lb, r, q, c)));
          }
        }
      }
    }
  }
}

// This one gathers each real pixel first and pushes it whole (push_pixel / push_padding).
template <class T_IN, class T_OUT, class ACC, int BATCH, int C, class G, bool INCLUDE_PAD>
void avg_pool2d_stage(hls::stream<T_IN>& in, hls::stream<T_OUT>& out) {
  for (int b = 0; b < BATCH; ++b) {
    hlsf::line_buffer<T_IN, C, G> lb;
    T_IN px[C];
    for (int r = 0; r < G::HP; ++r) {
      for (int q = 0; q < G::WP; ++q) {
        if (G::real_pixel(r, q)) {
          for (int c = 0; c < C; ++c) {
#pragma HLS PIPELINE II=1
            px[c] = in.read();
          }
          lb.push_pixel(q, px);
        } else {
          lb.push_padding(q);
        }
        if (G::emits(r, q)) {
          const int count = INCLUDE_PAD ? G::TAPS : G::real_taps(r, q);
          for (int c = 0; c < C; ++c) {
#pragma HLS PIPELINE II=1
            out.write(hlsf::assign_quotient<T_OUT>(hlsf::window_sum<ACC>(lb, c), count));
          }
        }
      }
    }
  }
}

// The divisors real_taps gives, one per output pixel (checked against hlsfuse.ops.nn.pool_counts).
template <class G>
void pool_counts(int id) {
  std::printf("%d", id);
  for (int r = 0; r < G::HP; ++r) {
    for (int q = 0; q < G::WP; ++q) {
      if (G::emits(r, q)) std::printf(" %d", G::real_taps(r, q));
    }
  }
  std::printf("\n");
}

// dense over ROWS rows of K inputs, N outputs per row.
template <class T_IN, class T_OUT, class ACC, int ROWS, int K, int N, class T_W, int NK>
void dense_stage(hls::stream<T_IN>& in, hls::stream<T_OUT>& out, const T_W (&w)[NK]) {
  T_IN x[K];
  for (int row = 0; row < ROWS; ++row) {
    for (int k = 0; k < K; ++k) {
#pragma HLS PIPELINE II=1
      x[k] = in.read();
    }
    for (int n = 0; n < N; ++n) {
#pragma HLS PIPELINE II=1
      out.write(T_OUT(hlsf::dense_mac<ACC>(x, w, n)));
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
