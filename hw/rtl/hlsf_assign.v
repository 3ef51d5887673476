// hlsf_assign: fixed-point assignment, bit-exact with hlsfuse.types.assign (docs/numerics.md section 2).
//
// The exact value in_data * 2^-IN_FRAC is stored in the output type with OUT_FRAC fractional bits,
// d = IN_FRAC - OUT_FRAC:
//   d <= 0   Q = X << -d                     (exact)
//   d  > 0   Q = (X >> d) + inc(QUANT)       T = X >> d (floor), qb = bit d-1 of X,
//                                            r = any of bits 0..d-2 of X set, or in_sticky
// then Q is brought into the output range by OVERFLOW. Every intermediate is wide enough to be
// exact, so no shift length or width combination loses information before the overflow step.
//
// Parameters
//   IN_W, IN_FRAC, IN_SIGNED      input raw width, fractional bits (any integer), signedness (0/1)
//   OUT_W, OUT_FRAC, OUT_SIGNED   output type: width, fractional bits W - I, signedness
//   QUANT      0 TRN, 1 TRN_ZERO, 2 RND, 3 RND_ZERO, 4 RND_MIN_INF, 5 RND_INF, 6 RND_CONV
//   OVERFLOW   0 WRAP, 1 SAT, 2 SAT_ZERO, 3 SAT_SYM
//              (the indices of QUANT_MODES and OVERFLOW_MODES in hlsfuse/types.py)
// Ports
//   in_data    [IN_W-1:0]    raw input value
//   in_sticky                1 when the exact value lies strictly between in_data and in_data + 1
//                            (an inexact quotient from hlsf_divide_const); 0 for a plain assignment.
//                            It only matters when IN_FRAC > OUT_FRAC.
//   out_data   [OUT_W-1:0]   raw output value
// Timing
//   Purely combinational; the enclosing stage places the pipeline registers.

`default_nettype none

module hlsf_assign #(
    parameter integer IN_W = 8,
    parameter integer IN_FRAC = 0,
    parameter integer IN_SIGNED = 1,
    parameter integer OUT_W = 8,
    parameter integer OUT_FRAC = 0,
    parameter integer OUT_SIGNED = 1,
    parameter integer QUANT = 0,
    parameter integer OVERFLOW = 0
) (
    input  wire [IN_W-1:0]  in_data,
    input  wire             in_sticky,
    output wire [OUT_W-1:0] out_data
);
    localparam integer D = IN_FRAC - OUT_FRAC;
    localparam integer LEFT = D < 0 ? -D : 0;
    localparam integer XW = IN_W + 1;  // the input as a signed number
    localparam integer QW = (XW + LEFT > OUT_W ? XW + LEFT : OUT_W) + 1;  // Q before the overflow step

    wire neg = IN_SIGNED != 0 && in_data[IN_W-1];
    wire [XW-1:0] x = {neg, in_data};
    wire [QW-1:0] q;

    generate
        if (D <= 0) begin : g_left
            wire [QW-1:0] wide = {{(QW - XW){neg}}, x};
            wire unused_sticky = in_sticky;
            assign q = wide << LEFT;
        end else begin : g_right
            wire [XW+D-1:0] wide = {{D{neg}}, x};
            wire [XW-1:0] t = wide[XW+D-1:D];  // floor(X / 2^d)
            wire qb = wide[D-1];
            wire r;
            wire inc;
            if (D >= 2) begin : g_r
                assign r = in_sticky || wide[D-2:0] != {(D - 1){1'b0}};
            end else begin : g_nor
                assign r = in_sticky;
            end
            assign inc = QUANT == 1 ? neg && (qb || r)
                       : QUANT == 2 ? qb
                       : QUANT == 3 ? qb && (neg || r)
                       : QUANT == 4 ? qb && r
                       : QUANT == 5 ? qb && (!neg || r)
                       : QUANT == 6 ? qb && (t[0] || r)
                       : 1'b0;
            assign q = {{(QW - XW){t[XW-1]}}, t} + {{(QW - 1){1'b0}}, inc};
        end
    endgenerate

    // range of the output type, and where Q lies against it
    localparam [OUT_W-1:0] ONES = {OUT_W{1'b1}};
    localparam [OUT_W-1:0] HI = OUT_SIGNED != 0 ? ONES >> 1 : ONES;
    localparam [OUT_W-1:0] LO = OUT_SIGNED != 0 ? ~(ONES >> 1) : {OUT_W{1'b0}};
    localparam [OUT_W-1:0] LO_SYM = OUT_SIGNED != 0 ? LO + 1'b1 : LO;  // -HI for signed types

    wire q_neg = q[QW-1];
    wire [QW-OUT_W:0] top_signed = q[QW-1:OUT_W-1];  // all equal when Q fits a signed OUT_W word
    wire fits = OUT_SIGNED != 0 ? top_signed == {(QW - OUT_W + 1){1'b0}} || top_signed == {(QW - OUT_W + 1){1'b1}}
                                : top_signed[QW-OUT_W:1] == {(QW - OUT_W){1'b0}};
    wire over = !fits && !q_neg;
    wire under = !fits && q_neg;
    wire [OUT_W-1:0] low = q[OUT_W-1:0];
    wire at_lo = fits && low == LO;

    assign out_data = OVERFLOW == 1 ? (over ? HI : under ? LO : low)
                    : OVERFLOW == 2 ? (over || under ? {OUT_W{1'b0}} : low)
                    : OVERFLOW == 3 ? (over ? HI : under || at_lo ? LO_SYM : low)
                    : low;
endmodule

`default_nettype wire
