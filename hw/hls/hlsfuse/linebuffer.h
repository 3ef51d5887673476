// hlsfuse kernel library: line buffer and window for NHWC streams (conv2d, max_pool2d, avg_pool2d stages).
//
// A window stage walks the *padded* image (padding [top, left, bottom, right], ONNX order) in row-major order
// and pushes every position's C channels, one per iteration: the input's value at a real pixel, a zero at
// padding. SPAN = dilation * (kernel - 1) + 1; tap (kh, kw) of the window ending at padded position (r, q) is
// the pixel (r - SPAN_H + 1 + kh*DH, q - SPAN_W + 1 + kw*DW):
//
//        padded column q:  0 .. WP-1                                window rows kept: 0, DH, ..., (KH-1)*DH
//      r  +----------------------------+                           of SPAN_H; each row: SPAN_W x C values
//      0  | pad pad pad pad pad pad pad|
//      1  | pad  x   x   x   x   x  pad|       stored rows:  SPAN_H - 1 padded rows of WP x C values
//     ..  | pad  x   x   x   x   x  pad|
//         +----------------------------+
//
// hlsf::line_buffer<T, C, WP, KH, KW, DH, DW, L = 1>:
//   push(q, c, v)      value v of channel c of the position at padded column q. Call it for every padded
//                      position in row-major order, channels 0..C-1 in order (T(0) for padding). After the
//                      push of channel C-1 of position (r, q) the window holds the window ending at (r, q).
//   push(q, c, v) L times per iteration, for channels c*L .. c*L + L - 1 of one input token (L lanes): the
//                      stored rows are partitioned L ways along the channels so that they take L writes at once
//   snapshot(taps)     copy that window's taps into taps[KH*KW*C], tap-major ((kh*KW + kw)*C + c: the order
//                      of a conv2d HWIO weight slice). The stage emits a window's outputs from its snapshot
//                      while the next positions are pushed (lower/schedule.py: the push/emit loop).
// Storage: (SPAN_H-1)*WP*C elements in the stored rows (one memory per row, read and written once per push)
// and KH*SPAN_W*C window registers (the RTL's hlsf_line_buffer keeps the same). Nothing needs clearing between
// frames: every tap of a snapshot was pushed during the same frame.
#ifndef HLSFUSE_KERNELS_LINEBUFFER_H
#define HLSFUSE_KERNELS_LINEBUFFER_H

namespace hlsf {

template <class T, int C, int WP, int KH, int KW, int DH, int DW, int L = 1>
class line_buffer {
 public:
  typedef T value_type;
  static const int SPAN_H = DH * (KH - 1) + 1;
  static const int SPAN_W = DW * (KW - 1) + 1;
  static const int TAPS = KH * KW;
  static const int LINE = WP * C / L;  // iterations between two pushes of the same stored element
  static_assert(C % L == 0, "line_buffer: L must divide the channels");

  line_buffer() {
    // AMD's idiom (hls::Window / hls::LineBuffer): partition the members in the constructor. Stored rows are
    // read together (one memory per row); the window is registers.
#pragma HLS ARRAY_PARTITION variable=rows_ type=complete dim=1
#pragma HLS ARRAY_PARTITION variable=rows_ type=cyclic factor=L dim=3
#pragma HLS ARRAY_PARTITION variable=win_ type=complete dim=0
    // Clearing the window registers costs one cycle. Snapshots never read a stale value anyway, but the
    // compiler cannot prove that for float windows (g++ -O3 warns).
    for (int kh = 0; kh < KH; ++kh) {
#pragma HLS UNROLL
      for (int kw = 0; kw < SPAN_W; ++kw) {
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
    // an element of a stored row is read and written by one push and next touched a whole row of pushes
    // later (more iterations when pushes wait): the only loop-carried dependence, LINE iterations long
#pragma HLS DEPENDENCE variable=rows_ type=inter direction=RAW dependent=true distance=LINE
    // col[k]: the value entering window row k (of SPAN_H) at column q: the stored rows, oldest first, then v;
    // each stored row moves up by one row and the newest keeps v
    T col[SPAN_H];
#pragma HLS ARRAY_PARTITION variable=col type=complete dim=0
    for (int k = 0; k + 1 < SPAN_H; ++k) {
#pragma HLS UNROLL
      col[k] = rows_[k][q][c];
      rows_[k][q][c] = k + 2 < SPAN_H ? rows_[k + 1][q][c] : v;
    }
    col[SPAN_H - 1] = v;
    for (int kh = 0; kh < KH; ++kh) {
#pragma HLS UNROLL
      for (int kw = 0; kw + 1 < SPAN_W; ++kw) {
#pragma HLS UNROLL
        win_[kh][kw][c] = win_[kh][kw + 1][c];
      }
      win_[kh][SPAN_W - 1][c] = col[kh * DH];
    }
  }

  void snapshot(T (&taps)[TAPS * C]) const {
#pragma HLS INLINE
    for (int kh = 0; kh < KH; ++kh) {
#pragma HLS UNROLL
      for (int kw = 0; kw < KW; ++kw) {
#pragma HLS UNROLL
        for (int c = 0; c < C; ++c) {
#pragma HLS UNROLL
          taps[(kh * KW + kw) * C + c] = win_[kh][kw * DW][c];
        }
      }
    }
  }

 private:
  T rows_[SPAN_H > 1 ? SPAN_H - 1 : 1][WP][C];
  T win_[KH][SPAN_W][C];
};

}  // namespace hlsf

#endif  // HLSFUSE_KERNELS_LINEBUFFER_H
