// hlsf_divide_const: exact floor division by a constant (or one of a few constants), for means.
//
// The quotient assign_quotient (hlsfuse/types.py, docs/numerics.md section 6) rounds:
//
//   D     = num * 2^SHIFT                  SHIFT < 0: floor(num / 2^-SHIFT), dropped bits remembered
//   quot  = floor(D / n)                   n = DIVISORS[sel]
//   inexact = the division, or the shift, left a remainder
//
// Feed quot into hlsf_assign with IN_FRAC = OUT_FRAC + 1 and in_sticky = inexact (SHIFT = k =
// F_out - F_num + 1): its T, qb and r are then those of assign_quotient, so every quantization and
// overflow mode rounds the exact quotient once.
//
// The division multiplies by a magic constant (Granlund and Montgomery): the dividend is made
// non-negative as m = D >= 0 ? D : ~D (~D = -D-1, so no extra bit), m < 2^MB; with
// L = ceil(log2(max n)), S = MB + L and M = ceil(2^S / n), floor(m * M / 2^S) = floor(m / n)
// for every such m, because 0 <= M*n - 2^S < n <= 2^L. For D < 0, floor(D / n) = ~floor(m / n)
// and the remainder is nonzero unless m mod n = n - 1. The constants are computed at elaboration.
//
// Parameters
//   NUM_W, NUM_SIGNED   the dividend's raw width and signedness (an exact sum S)
//   SHIFT               k: the power of two the dividend is scaled by first (any integer)
//   NDIV, DIV_W         number of divisors and their width (a divisor is 1 .. 2^DIV_W - 1)
//   DIVISORS            NDIV*DIV_W bits, divisor i at bits [i*DIV_W +: DIV_W]
// Ports
//   num   [NUM_W-1:0]
//   sel   [SW-1:0]      which divisor (SW = $clog2(NDIV), 1 when NDIV = 1; ignored then)
//   quot  [QUOT_W-1:0]  signed floor quotient, QUOT_W = NUM_W + 1 + max(SHIFT, 0)
//   inexact
// Timing
//   Purely combinational (one multiplier by the selected constant, one by the divisor: shifts and adds for
//   divisors of at most 3 bits).

`default_nettype none

module hlsf_divide_const #(
    parameter integer NUM_W = 8,
    parameter integer NUM_SIGNED = 1,
    parameter integer SHIFT = 0,
    parameter integer NDIV = 1,
    parameter integer DIV_W = 4,
    parameter [NDIV*DIV_W-1:0] DIVISORS = 3
) (
    input  wire [NUM_W-1:0]                                 num,
    input  wire [(NDIV > 1 ? $clog2(NDIV) : 1)-1:0]         sel,
    output wire [NUM_W+(SHIFT > 0 ? SHIFT : 0):0]           quot,
    output wire                                             inexact
);
    localparam integer SW = NDIV > 1 ? $clog2(NDIV) : 1;
    localparam integer LEFT = SHIFT > 0 ? SHIFT : 0;
    localparam integer QW = NUM_W + 1 + LEFT;  // the scaled dividend D as a signed number
    localparam integer MB = QW - 1;  // bits of m
    localparam integer EW = MB + DIV_W;  // remainder arithmetic: q*n <= m < 2^MB, n < 2^DIV_W

    function integer ceil_log2_max(input [NDIV*DIV_W-1:0] divisors);
        integer i;
        begin
            ceil_log2_max = 0;
            for (i = 0; i < NDIV; i = i + 1) begin
                while ((1 << ceil_log2_max) < divisors[i*DIV_W +: DIV_W]) begin
                    ceil_log2_max = ceil_log2_max + 1;
                end
            end
        end
    endfunction

    localparam integer S = MB + ceil_log2_max(DIVISORS);
    localparam integer MW = S + 2;  // M <= 2^S, and 2^S + n - 1 must fit too

    function [MW-1:0] magic(input [DIV_W-1:0] n);
        reg [MW-1:0] one;
        begin
            one = {{(MW - 1){1'b0}}, 1'b1};
            magic = ((one << S) + {{(MW - DIV_W){1'b0}}, n} - one) / {{(MW - DIV_W){1'b0}}, n};
        end
    endfunction

    // D, and whether a negative SHIFT dropped nonzero bits
    wire neg = NUM_SIGNED != 0 && num[NUM_W-1];
    wire [QW-1:0] d;
    wire dropped;
    generate
        if (SHIFT >= 0) begin : g_scale
            wire [QW-1:0] wide = {{(LEFT + 1){neg}}, num};
            assign d = wide << LEFT;
            assign dropped = 1'b0;
        end else if (-SHIFT < NUM_W) begin : g_floor
            assign d = {{(1 - SHIFT){neg}}, num[NUM_W-1:-SHIFT]};
            assign dropped = num[-SHIFT-1:0] != {(-SHIFT){1'b0}};
        end else begin : g_all
            assign d = {QW{neg}};
            assign dropped = num != {NUM_W{1'b0}};
        end
    endgenerate

    // the selected divisor and its magic constant
    reg [DIV_W-1:0] n;
    reg [MW-1:0] m_const;
    integer i;
    always @* begin
        n = DIVISORS[DIV_W-1:0];
        m_const = magic(DIVISORS[DIV_W-1:0]);
        for (i = 1; i < NDIV; i = i + 1) begin
            if (sel == i[SW-1:0]) begin
                n = DIVISORS[i*DIV_W +: DIV_W];
                m_const = magic(DIVISORS[i*DIV_W +: DIV_W]);
            end
        end
    end
    generate
        if (NDIV == 1) begin : g_one
            wire unused_sel = &{1'b0, sel};
        end
    endgenerate

    wire d_neg = d[QW-1];
    wire [MB-1:0] m = d_neg ? ~d[MB-1:0] : d[MB-1:0];
    wire [MB+MW-1:0] product = {{MW{1'b0}}, m} * {{MB{1'b0}}, m_const};
    wire [MB-1:0] q_m = product[S +: MB];  // floor(m / n) < 2^MB
    wire [EW-1:0] m_e = {{DIV_W{1'b0}}, m};
    wire [EW-1:0] n_e = {{MB{1'b0}}, n};
    // q*n, exact: a multiplier, or for divisors of at most 3 bits shifts and adds, as the resource model
    // prices a product with an operand of at most 4 signed bits (hlsfuse/lower/area.py, LUT_PRODUCT_BITS)
    wire [EW-1:0] q_e = {{DIV_W{1'b0}}, q_m};
    wire [EW-1:0] back;
    generate
        if (DIV_W <= 3) begin : g_shift_add
            reg [EW-1:0] sum;
            integer j;
            always @* begin
                sum = {EW{1'b0}};
                for (j = 0; j < DIV_W; j = j + 1) begin
                    if (n[j]) begin
                        sum = sum + (q_e << j);
                    end
                end
            end
            assign back = sum;
        end else begin : g_multiply
            assign back = q_e * n_e;
        end
    endgenerate
    wire [EW-1:0] r_m = m_e - back;  // m mod n

    assign quot = d_neg ? ~{1'b0, q_m} : {1'b0, q_m};
    assign inexact = dropped || (d_neg ? r_m != n_e - 1'b1 : r_m != {EW{1'b0}});

    wire unused_product = &{1'b0, product[MB+MW-1:S+MB], product[S-1:0]};
endmodule

`default_nettype wire
