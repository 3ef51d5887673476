// Test top for hlsf_assign: every configuration of CFG crossed with all 7 x 4 quantization and
// overflow modes, one instance each, all reading the same input x (its low IN_W bits).
//
// CFG packs NCFG configurations of six signed 8-bit fields, configuration 0 in the low bits:
//   {OUT_SIGNED, OUT_FRAC, OUT_W, IN_SIGNED, IN_FRAC, IN_W}
// Instance k = (cfg * 7 + quant) * 4 + overflow drives y[k*YW +: YW] (its output zero-extended).

`default_nettype none

module tb_assign #(
    parameter integer NCFG = 1,
    parameter [NCFG*48-1:0] CFG = 48'h01_00_08_01_00_08,
    parameter integer XW = 8,
    parameter integer YW = 8
) (
    input  wire [XW-1:0]            x,
    input  wire                     sticky,
    output wire [NCFG*28*YW-1:0]    y
);
    genvar c, q, o;
    generate
        for (c = 0; c < NCFG; c = c + 1) begin : g_cfg
            localparam integer IN_W = $signed(CFG[c*48 +: 8]);
            localparam integer IN_FRAC = $signed(CFG[c*48+8 +: 8]);
            localparam integer IN_SIGNED = $signed(CFG[c*48+16 +: 8]);
            localparam integer OUT_W = $signed(CFG[c*48+24 +: 8]);
            localparam integer OUT_FRAC = $signed(CFG[c*48+32 +: 8]);
            localparam integer OUT_SIGNED = $signed(CFG[c*48+40 +: 8]);
            for (q = 0; q < 7; q = q + 1) begin : g_quant
                for (o = 0; o < 4; o = o + 1) begin : g_ovf
                    wire [OUT_W-1:0] out;
                    hlsf_assign #(
                        .IN_W(IN_W), .IN_FRAC(IN_FRAC), .IN_SIGNED(IN_SIGNED),
                        .OUT_W(OUT_W), .OUT_FRAC(OUT_FRAC), .OUT_SIGNED(OUT_SIGNED),
                        .QUANT(q), .OVERFLOW(o)
                    ) dut (
                        .in_data(x[IN_W-1:0]),
                        .in_sticky(sticky),
                        .out_data(out)
                    );
                    wire [YW+OUT_W-1:0] ext = {{YW{1'b0}}, out};
                    assign y[((c*7 + q)*4 + o)*YW +: YW] = ext[YW-1:0];
                end
            end
        end
    endgenerate
endmodule

`default_nettype wire
