// hlsf_line_buffer: sliding window over an NHWC stream (conv2d and pooling stages).
//
// The stage pushes the padded image one element per push, in row-major order (rows of WP pixels of
// C channels; padding positions pushed as zeros, as the analytic window schedule does). After the
// push of channel C-1 of padded pixel (r, c), with r >= SPAN_H-1 and c >= SPAN_W-1, `window` holds
// the window whose bottom-right pixel is (r, c):
//
//     window element (kh, kw, ch) = image[r - SPAN_H + 1 + kh*DH][c - SPAN_W + 1 + kw*DW][ch]
//     at bits [((kh*KW + kw)*C + ch)*WIDTH +: WIDTH]     (the order of a conv2d HWIO weight slice)
//
// with SPAN_H = DH*(KH-1) + 1 and SPAN_W = DW*(KW-1) + 1. At other times the window is a mix of
// pixels and must not be used; the stage's position counters (and the stride) decide when to read.
//
//                 in_data ──► line SPAN_H-2 ──► ... ──► line 0        (each line: WP*C elements)
//                    │             │                      │
//   window rows:  row SPAN_H-1   row SPAN_H-2   ...     row 0         (each row: SPAN_W*C elements)
//
// Each line is a delay line of WP*C pushes (a circular memory and one shared pointer), so the
// value it returns is the element one image row above the one being pushed; window rows are
// shift registers of the last SPAN_W*C values entering them. Only rows used by a tap (every DH-th)
// are kept.
//
// Parameters
//   WIDTH   element width in bits
//   C       channels per pixel
//   WP      padded image width in pixels (W + left + right padding)
//   KH, KW  kernel size;   DH, DW  dilation (1 = dense)
// Ports
//   ap_clk, ap_rst_n     clock, synchronous active-low reset (rewinds the line pointer only)
//   push, in_data        push one element
//   window  [KH*KW*C*WIDTH-1:0]
// Timing
//   One push per cycle; `window` is registered: it shows the pushes up to the previous clock edge
//   and holds while push is low. Storage: (SPAN_H-1)*WP*C + KH*SPAN_W*C elements.

`default_nettype none

module hlsf_line_buffer #(
    parameter integer WIDTH = 8,
    parameter integer C = 1,
    parameter integer WP = 4,
    parameter integer KH = 3,
    parameter integer KW = 3,
    parameter integer DH = 1,
    parameter integer DW = 1
) (
    input  wire                     ap_clk,
    input  wire                     ap_rst_n,
    input  wire                     push,
    input  wire [WIDTH-1:0]         in_data,
    output wire [KH*KW*C*WIDTH-1:0] window
);
    localparam integer SPAN_H = DH * (KH - 1) + 1;
    localparam integer SPAN_W = DW * (KW - 1) + 1;
    localparam integer LINE = WP * C;  // elements per image row
    localparam integer ROW = SPAN_W * C;  // elements per window row

    // col[k]: the value entering window row k on a push (row SPAN_H-1 is the newest image row)
    wire [SPAN_H*WIDTH-1:0] col;
    assign col[(SPAN_H-1)*WIDTH +: WIDTH] = in_data;

    genvar k, kw, ch;
    generate
        if (SPAN_H > 1) begin : g_lines
            localparam integer PW = LINE > 1 ? $clog2(LINE) : 1;
            localparam [PW-1:0] LAST = LINE[PW-1:0] - 1'b1;
            reg [PW-1:0] ptr;
            always @(posedge ap_clk) begin
                if (!ap_rst_n) begin
                    ptr <= {PW{1'b0}};
                end else if (push) begin
                    ptr <= ptr == LAST ? {PW{1'b0}} : ptr + 1'b1;
                end
            end
            for (k = 0; k < SPAN_H - 1; k = k + 1) begin : g_line
                reg [WIDTH-1:0] mem [0:LINE-1];
                assign col[k*WIDTH +: WIDTH] = mem[ptr];
                always @(posedge ap_clk) begin
                    if (push) begin
                        mem[ptr] <= col[(k+1)*WIDTH +: WIDTH];
                    end
                end
            end
        end else begin : g_no_lines
            wire unused_reset = ap_rst_n;
        end

        for (k = 0; k < KH; k = k + 1) begin : g_row
            // element j of `row` entered j pushes ago
            reg [ROW*WIDTH-1:0] row;
            if (ROW > 1) begin : g_shift
                always @(posedge ap_clk) begin
                    if (push) begin
                        row <= {row[(ROW-1)*WIDTH-1:0], col[k*DH*WIDTH +: WIDTH]};
                    end
                end
            end else begin : g_single
                always @(posedge ap_clk) begin
                    if (push) begin
                        row <= col[k*DH*WIDTH +: WIDTH];
                    end
                end
            end
            for (kw = 0; kw < KW; kw = kw + 1) begin : g_tap
                for (ch = 0; ch < C; ch = ch + 1) begin : g_ch
                    assign window[((k*KW + kw)*C + ch)*WIDTH +: WIDTH] =
                        row[((SPAN_W - 1 - kw*DW)*C + C - 1 - ch)*WIDTH +: WIDTH];
                end
            end
        end

        if (DH > 1) begin : g_skipped
            // rows between dilated taps only pass through the lines
            for (k = 0; k < SPAN_H; k = k + 1) begin : g_row
                if (k % DH != 0) begin : g_unused
                    wire unused_row = &{1'b0, col[k*WIDTH +: WIDTH]};
                end
            end
        end
    endgenerate
endmodule

`default_nettype wire
