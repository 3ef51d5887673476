// hlsfuse kernel library: line buffer and sliding window for NHWC streams (conv2d, max_pool2d, avg_pool2d).
//
// A window stage reads one NHWC frame (batch 1: H rows of W pixels of C values, one value per transfer) and
// walks the *padded* image, padding [top, left, bottom, right] as in hlsfuse's ops (ONNX order):
//
//        padded column q:  0 .. WP-1 (WP = PL + W + PR)         window of the output at (r, q):
//      r  +----------------------------+                       rows    r - SPAN_H + 1 .. r
//      0  | pad pad pad pad pad pad pad|                       columns q - SPAN_W + 1 .. q
//      1  | pad  x   x   x   x   x  pad|                       SPAN = dilation * (kernel - 1) + 1
//     ..  | pad  x   x   x   x   x  pad|                       tap (kh, kw) = window cell (kh*DH, kw*DW)
//         +----------------------------+
//
// hlsf::window_geometry<H, W, KH, KW, SH, SW, PT, PL, PB, PR, DH = 1, DW = 1> (static facts only):
//   HP, WP, SPAN_H, SPAN_W, OH, OW      padded size, window span, output size
//   real_pixel(r, q)    the padded pixel (r, q) comes from the input stream (else it is padding)
//   emits(r, q)         the window ending at padded pixel (r, q) is an output pixel (stride and dilation
//                       aware: r >= SPAN_H-1 and (r - SPAN_H + 1) % SH == 0, the same for q)
//   out_row(r), out_col(q)   the output pixel's coordinates (when emits(r, q))
//   tap_is_pad(r, q, kh, kw) tap (kh, kw) of that window lies in the padding
//   real_taps(r, q)     how many taps lie in the input: avg_pool2d's divisor with count_include_pad=False
//                       (equal to hlsfuse.ops.nn.pool_counts); KH*KW is the divisor with True
//
// hlsf::line_buffer<T, C, G> (G a window_geometry): SPAN_H-1 padded rows of WP x C values, plus the window
// of SPAN_H x SPAN_W x C values as registers:
//   push(q, c, v)       value v of channel c of the pixel at padded column q. Call it for every padded pixel
//                       in row-major order, channels 0..C-1 in order; push T(0) for padding pixels (conv2d
//                       and avg_pool2d pad with zeros; max_pool2d skips padded taps with tap_is_pad). After
//                       the C-th value of pixel (r, q) the window holds the window ending at (r, q).
//   push_pixel(q, px)   the C values px[0..C-1] of the pixel at padded column q (C cycles, as C pushes)
//   push_padding(q)     a padding pixel (C zeros) at padded column q
//   tap(kh, kw, c)      the window value of kernel tap (kh, kw), channel c
// Nothing needs clearing between frames: every tap of an emitted window was pushed during the same frame.
//
// The loop structure of a window stage (one image per pass; a batch of N images repeats it N times with a
// fresh line buffer; `epilogue` is the group's fused elementwise chain, ending in the output's assignment):
//
//   hlsf::line_buffer<T_IN, C, G> lb;
//   for (int r = 0; r < G::HP; ++r)
//     for (int q = 0; q < G::WP; ++q) {
//       const bool real = G::real_pixel(r, q);
//       for (int c = 0; c < C; ++c) {            // C cycles per padded pixel
//   #pragma HLS PIPELINE II=1
//         T_IN v = 0;
//         if (real) v = in.read();
//         lb.push(q, c, v);
//       }
//       if (G::emits(r, q))
//         for (int co = 0; co < COUT; ++co) {    // COUT cycles per output pixel (COUT = C for pools)
//   #pragma HLS PIPELINE II=1
//           out.write(epilogue(hlsf::conv_mac<ACC, COUT, GROUPS>(lb, w, co)));   // or window_max / _sum
//         }
//     }
//
// Cycles per image: HP * WP * C + OH * OW * COUT (plus loop entry overheads); the first output follows the
// push of padded pixel (SPAN_H - 1, SPAN_W - 1), after ((SPAN_H - 1) * WP + SPAN_W) * C push cycles. The MAC
// helpers (mac.h) read a whole window slice at once, hence the complete partitioning of the window below.
#ifndef HLSFUSE_KERNELS_LINEBUFFER_H
#define HLSFUSE_KERNELS_LINEBUFFER_H

namespace hlsf {

template <int H, int W, int KH, int KW, int SH, int SW, int PT, int PL, int PB, int PR, int DH = 1, int DW = 1>
struct window_geometry {
  static const int IN_H = H, IN_W = W;
  static const int K_H = KH, K_W = KW, TAPS = KH * KW, DIL_H = DH, DIL_W = DW;
  static const int HP = H + PT + PB, WP = W + PL + PR;
  static const int SPAN_H = DH * (KH - 1) + 1, SPAN_W = DW * (KW - 1) + 1;
  static const int OH = (HP - SPAN_H) / SH + 1, OW = (WP - SPAN_W) / SW + 1;
  static_assert(H >= 1 && W >= 1 && KH >= 1 && KW >= 1 && SH >= 1 && SW >= 1 && DH >= 1 && DW >= 1,
                "window_geometry: sizes, kernel, strides and dilation must be positive");
  static_assert(PT >= 0 && PL >= 0 && PB >= 0 && PR >= 0, "window_geometry: padding must not be negative");
  static_assert(SPAN_H <= HP && SPAN_W <= WP, "window_geometry: the window spans more than the padded input");

  static bool real_row(int r) { return r >= PT && r < PT + H; }
  static bool real_col(int q) { return q >= PL && q < PL + W; }
  static bool real_pixel(int r, int q) { return real_row(r) && real_col(q); }

  static bool emits(int r, int q) {
    return r >= SPAN_H - 1 && (r - (SPAN_H - 1)) % SH == 0 && q >= SPAN_W - 1 && (q - (SPAN_W - 1)) % SW == 0;
  }
  static int out_row(int r) { return (r - (SPAN_H - 1)) / SH; }
  static int out_col(int q) { return (q - (SPAN_W - 1)) / SW; }

  // Padded coordinates of tap (kh, kw) of the window ending at (r, q).
  static int tap_row(int r, int kh) { return r - (SPAN_H - 1) + kh * DH; }
  static int tap_col(int q, int kw) { return q - (SPAN_W - 1) + kw * DW; }
  static bool tap_is_pad(int r, int q, int kh, int kw) { return !real_pixel(tap_row(r, kh), tap_col(q, kw)); }

  static int real_taps(int r, int q) {
    int rows = 0, cols = 0;
    for (int kh = 0; kh < KH; ++kh) {
#pragma HLS UNROLL
      rows += real_row(tap_row(r, kh)) ? 1 : 0;
    }
    for (int kw = 0; kw < KW; ++kw) {
#pragma HLS UNROLL
      cols += real_col(tap_col(q, kw)) ? 1 : 0;
    }
    return rows * cols;
  }
};

template <class T, int C, class G>
class line_buffer {
 public:
  typedef T value_type;
  typedef G geometry;
  static const int channels = C;

  line_buffer() {
    // AMD's idiom (hls::Window / hls::LineBuffer): partition the members in the constructor. Rows of the
    // line buffer are read together (one memory per row); the window is read whole by the MAC helpers.
#pragma HLS ARRAY_PARTITION variable=rows_ complete dim=1
#pragma HLS ARRAY_PARTITION variable=win_ complete dim=0
    // Clearing the window registers costs one cycle. Emitted windows never read a stale value anyway, but
    // the compiler cannot prove that for float windows (g++ -O3 warns).
    for (int kh = 0; kh < G::SPAN_H; ++kh) {
#pragma HLS UNROLL
      for (int kw = 0; kw < G::SPAN_W; ++kw) {
#pragma HLS UNROLL
        for (int c = 0; c < C; ++c) {
#pragma HLS UNROLL
          win_[kh][kw][c] = T(0);
        }
      }
    }
  }

  void push(int q, int c, const T& v) {
#pragma HLS INLINE
    for (int kh = 0; kh < G::SPAN_H; ++kh) {
#pragma HLS UNROLL
      for (int kw = 0; kw + 1 < G::SPAN_W; ++kw) {
#pragma HLS UNROLL
        win_[kh][kw][c] = win_[kh][kw + 1][c];
      }
    }
    // The new window column: the stored rows at column q (oldest first), then the new value; the stored
    // column moves up by one row and keeps the new value as its newest row.
    for (int kh = 0; kh + 1 < G::SPAN_H; ++kh) {
#pragma HLS UNROLL
      win_[kh][G::SPAN_W - 1][c] = rows_[kh][q][c];
      rows_[kh][q][c] = kh + 2 < G::SPAN_H ? rows_[kh + 1][q][c] : v;
    }
    win_[G::SPAN_H - 1][G::SPAN_W - 1][c] = v;
  }

  // A whole pixel, or a padding pixel (zeros), at padded column q: C pushes, one per cycle.
  void push_pixel(int q, const T (&px)[C]) {
    for (int c = 0; c < C; ++c) {
#pragma HLS PIPELINE II=1
      push(q, c, px[c]);
    }
  }
  void push_padding(int q) {
    for (int c = 0; c < C; ++c) {
#pragma HLS PIPELINE II=1
      push(q, c, T(0));
    }
  }

  const T& tap(int kh, int kw, int c) const {
#pragma HLS INLINE
    return win_[kh * G::DIL_H][kw * G::DIL_W][c];
  }

 private:
  T rows_[G::SPAN_H > 1 ? G::SPAN_H - 1 : 1][G::WP][C];
  T win_[G::SPAN_H][G::SPAN_W][C];
};

}  // namespace hlsf

#endif  // HLSFUSE_KERNELS_LINEBUFFER_H
