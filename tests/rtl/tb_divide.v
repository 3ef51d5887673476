// Test top for hlsf_divide_const and its use in a mean: the quotient floor(num * 2^SHIFT / n) and
// its inexact flag, assigned by hlsf_assign (IN_FRAC = OUT_FRAC + 1, in_sticky = inexact) to the
// output type under all 7 x 4 quantization and overflow modes, for NCFG configurations.
//
// CFG packs NCFG configurations of twelve 8-bit fields (signed where it matters), config 0 low:
//   {DIV3, DIV2, DIV1, DIV0, 0, NDIV, OUT_SIGNED, OUT_FRAC, OUT_W, NUM_FRAC, NUM_SIGNED, NUM_W}
// with SHIFT = OUT_FRAC - NUM_FRAC + 1. Configuration c drives quot[c*QMAX +: QMAX] (the quotient,
// zero-extended), inexact[c], and y[(c*28 + quant*4 + overflow)*YW +: YW] (zero-extended).
// Every instance reads the low NUM_W bits of num.

`default_nettype none

module tb_divide #(
    parameter integer NCFG = 1,
    parameter [NCFG*96-1:0] CFG = 96'h00_00_00_03_00_01_01_00_08_00_01_08,
    parameter integer XW = 8,
    parameter integer QMAX = 16,
    parameter integer YW = 8
) (
    input  wire [XW-1:0]            num,
    input  wire [1:0]               sel,
    output wire [NCFG*QMAX-1:0]     quot,
    output wire [NCFG-1:0]          inexact,
    output wire [NCFG*28*YW-1:0]    y
);
    genvar c, q, o;
    generate
        for (c = 0; c < NCFG; c = c + 1) begin : g_cfg
            localparam integer NUM_W = $signed(CFG[c*96 +: 8]);
            localparam integer NUM_SIGNED = $signed(CFG[c*96+8 +: 8]);
            localparam integer NUM_FRAC = $signed(CFG[c*96+16 +: 8]);
            localparam integer OUT_W = $signed(CFG[c*96+24 +: 8]);
            localparam integer OUT_FRAC = $signed(CFG[c*96+32 +: 8]);
            localparam integer OUT_SIGNED = $signed(CFG[c*96+40 +: 8]);
            localparam integer NDIV = $signed(CFG[c*96+48 +: 8]);
            localparam integer SHIFT = OUT_FRAC - NUM_FRAC + 1;
            localparam integer QW = NUM_W + 1 + (SHIFT > 0 ? SHIFT : 0);
            localparam integer SW = NDIV > 1 ? $clog2(NDIV) : 1;
            wire [QW-1:0] q_raw;
            wire sticky;
            hlsf_divide_const #(
                .NUM_W(NUM_W), .NUM_SIGNED(NUM_SIGNED), .SHIFT(SHIFT),
                .NDIV(NDIV), .DIV_W(8), .DIVISORS(CFG[c*96+64 +: NDIV*8])
            ) div (
                .num(num[NUM_W-1:0]), .sel(sel[SW-1:0]), .quot(q_raw), .inexact(sticky)
            );
            wire [QMAX+QW-1:0] q_ext = {{QMAX{1'b0}}, q_raw};
            assign quot[c*QMAX +: QMAX] = q_ext[QMAX-1:0];
            assign inexact[c] = sticky;
            for (q = 0; q < 7; q = q + 1) begin : g_quant
                for (o = 0; o < 4; o = o + 1) begin : g_ovf
                    wire [OUT_W-1:0] out;
                    hlsf_assign #(
                        .IN_W(QW), .IN_FRAC(OUT_FRAC + 1), .IN_SIGNED(1),
                        .OUT_W(OUT_W), .OUT_FRAC(OUT_FRAC), .OUT_SIGNED(OUT_SIGNED),
                        .QUANT(q), .OVERFLOW(o)
                    ) mean (
                        .in_data(q_raw), .in_sticky(sticky), .out_data(out)
                    );
                    wire [YW+OUT_W-1:0] ext = {{YW{1'b0}}, out};
                    assign y[(c*28 + q*4 + o)*YW +: YW] = ext[YW-1:0];
                end
            end
        end
    endgenerate
endmodule

`default_nettype wire
