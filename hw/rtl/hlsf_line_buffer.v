// hlsf_line_buffer: sliding window over an NHWC stream, and a snapshot of it (conv2d and pooling stages).
//
// The stage pushes the padded image one element per push, in row-major order (rows of WP positions of
// C channels; padding positions pushed as zeros). The window after the push of channel C-1 of padded
// position (r, c), with r >= SPAN_H-1 and c >= SPAN_W-1, is the window whose bottom-right pixel is (r, c):
//
//     window element (kh, kw, ch) = image[r - SPAN_H + 1 + kh*DH][c - SPAN_W + 1 + kw*DW][ch]
//     at bits [((kh*KW + kw)*C + ch)*WIDTH +: WIDTH]     (the order of a conv2d HWIO weight slice)
//
// with SPAN_H = DH*(KH-1) + 1 and SPAN_W = DW*(KW-1) + 1. A push with `capture` high copies the window as it
// is after that push into a snapshot, which holds until that slot's next capture: the stage emits a window's
// outputs from its snapshot while the next positions are pushed (hlsfuse/lower/schedule.py). With SLOTS > 1
// snapshots form a ring: a capture fills slot `capture_slot`, and `snapshot` shows slot `emit_slot`.
//
//                 in_data ──► line SPAN_H-2 ──► ... ──► line 0        (each line: WP*C elements)
//                    │             │                      │
//   window rows:  row SPAN_H-1   row SPAN_H-2   ...     row 0         (each row: SPAN_W*C elements)
//
// Each line is a delay line of WP*C pushes (a circular memory and one shared pointer), so the value it
// returns is the element one image row above the one being pushed; window rows are shift registers of the
// last SPAN_W*C values entering them. Only rows used by a tap (every DH-th) are kept. A line of tokens of
// LANES elements is LANES memories, one per lane (WIDTH/LANES bits each), as the C++ partitions its rows and
// the resource model counts them: each a block RAM with BLOCK = 1 (`ram_style`; a synthesis tool moves the
// pointer register into the block RAM's synchronous read), LUT RAM otherwise, as the model decides
// (hlsfuse/lower/area.py, buffer_area of the stage's "line buffer").
//
// Parameters
//   WIDTH   element width in bits
//   C       channels per pixel
//   WP      padded image width in pixels (W + left + right padding)
//   KH, KW  kernel size;   DH, DW  dilation (1 = dense)
//   SLOTS   snapshots (1: one, shown as it was last captured)
//   LANES   memories per line, one per lane of a token (divides WIDTH)
//   BLOCK   1: each line memory is a block RAM (ram_style "block"), 0: LUT RAM ("distributed")
// Ports
//   ap_clk, ap_rst_n     clock, synchronous active-low reset (rewinds the line pointer only)
//   push, in_data        push one element
//   capture              with push: copy the window after this push into slot `capture_slot`
//   capture_slot, emit_slot   SLOTS > 1: the slot a capture fills, the slot `snapshot` shows ($clog2(SLOTS)
//                        bits; one unused bit when SLOTS is 1)
//   snapshot [KH*KW*C*WIDTH-1:0]
// Timing
//   One push per cycle; the snapshots are registers (a slot shows a capture from the next clock edge on).
//   Storage: (SPAN_H-1)*WP*C line elements, KH*SPAN_W*C window registers, SLOTS*KH*KW*C snapshot registers.

`default_nettype none

module hlsf_line_buffer #(
    parameter integer WIDTH = 8,
    parameter integer C = 1,
    parameter integer WP = 4,
    parameter integer KH = 3,
    parameter integer KW = 3,
    parameter integer DH = 1,
    parameter integer DW = 1,
    parameter integer SLOTS = 1,
    parameter integer LANES = 1,
    parameter integer BLOCK = 0
) (
    input  wire                     ap_clk,
    input  wire                     ap_rst_n,
    input  wire                     push,
    input  wire                     capture,
    input  wire [(SLOTS > 1 ? $clog2(SLOTS) : 1)-1:0] capture_slot,
    input  wire [(SLOTS > 1 ? $clog2(SLOTS) : 1)-1:0] emit_slot,
    input  wire [WIDTH-1:0]         in_data,
    output wire [KH*KW*C*WIDTH-1:0] snapshot
);
    localparam integer SPAN_H = DH * (KH - 1) + 1;
    localparam integer SPAN_W = DW * (KW - 1) + 1;
    localparam integer LINE = WP * C;  // elements per image row
    localparam integer ROW = SPAN_W * C;  // elements per window row
    localparam integer LW = WIDTH / LANES;  // bits per lane memory

    // col[k]: the value entering window row k on a push (row SPAN_H-1 is the newest image row)
    wire [SPAN_H*WIDTH-1:0] col;
    assign col[(SPAN_H-1)*WIDTH +: WIDTH] = in_data;
    // the window after the push, as the stage will see it
    wire [KH*KW*C*WIDTH-1:0] window;

    genvar k, kw, ch, j;
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
                for (j = 0; j < LANES; j = j + 1) begin : g_lane
                    if (BLOCK != 0) begin : g_block
                        (* ram_style = "block" *) reg [LW-1:0] mem [0:LINE-1];
                        assign col[k*WIDTH + j*LW +: LW] = mem[ptr];
                        always @(posedge ap_clk) begin
                            if (push) begin
                                mem[ptr] <= col[(k+1)*WIDTH + j*LW +: LW];
                            end
                        end
                    end else begin : g_lutram
                        (* ram_style = "distributed" *) reg [LW-1:0] mem [0:LINE-1];
                        assign col[k*WIDTH + j*LW +: LW] = mem[ptr];
                        always @(posedge ap_clk) begin
                            if (push) begin
                                mem[ptr] <= col[(k+1)*WIDTH + j*LW +: LW];
                            end
                        end
                    end
                end
            end
        end else begin : g_no_lines
            wire unused_reset = ap_rst_n;
        end

        for (k = 0; k < KH; k = k + 1) begin : g_row
            // `next`: the row after this push; element j entered j pushes before it
            wire [ROW*WIDTH-1:0] next;
            if (ROW > 1) begin : g_shift
                reg [ROW*WIDTH-1:0] row;
                assign next = {row[(ROW-1)*WIDTH-1:0], col[k*DH*WIDTH +: WIDTH]};
                always @(posedge ap_clk) begin
                    if (push) begin
                        row <= next;
                    end
                end
                // the oldest element leaves the row; dilated windows skip some columns of it
                wire unused_shift = &{1'b0, row[ROW*WIDTH-1 -: WIDTH], next, 1'b0};
            end else begin : g_single
                assign next = col[k*DH*WIDTH +: WIDTH];
            end
            for (kw = 0; kw < KW; kw = kw + 1) begin : g_tap
                for (ch = 0; ch < C; ch = ch + 1) begin : g_ch
                    assign window[((k*KW + kw)*C + ch)*WIDTH +: WIDTH] =
                        next[((SPAN_W - 1 - kw*DW)*C + C - 1 - ch)*WIDTH +: WIDTH];
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

    generate
        if (SLOTS > 1) begin : g_ring
            reg [KH*KW*C*WIDTH-1:0] ring [0:SLOTS-1];
            always @(posedge ap_clk) begin
                if (push && capture) begin
                    ring[capture_slot] <= window;
                end
            end
            assign snapshot = ring[emit_slot];
        end else begin : g_one
            reg [KH*KW*C*WIDTH-1:0] held;
            always @(posedge ap_clk) begin
                if (push && capture) begin
                    held <= window;
                end
            end
            assign snapshot = held;
            wire unused_slots = &{1'b0, capture_slot, emit_slot, 1'b0};
        end
    endgenerate
endmodule

`default_nettype wire
