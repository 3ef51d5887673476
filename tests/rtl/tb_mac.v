// Test top for hlsf_mac: NCFG instances sharing en/clear and the low bits of the a and b buses.
//
// CFG packs NCFG configurations of six 8-bit fields, configuration 0 in the low bits:
//   {ACC_W, N, B_SIGNED, B_W, A_SIGNED, A_W}
// Instance c reads a[N*A_W-1:0] and b[N*B_W-1:0] and drives acc[c*64 +: 64] (zero-extended).

`default_nettype none

module tb_mac #(
    parameter integer NCFG = 1,
    parameter [NCFG*48-1:0] CFG = 48'h10_01_01_08_01_08,
    parameter integer AMAX = 8,
    parameter integer BMAX = 8
) (
    input  wire                 ap_clk,
    input  wire                 en,
    input  wire                 clear,
    input  wire [AMAX-1:0]      a,
    input  wire [BMAX-1:0]      b,
    output wire [NCFG*64-1:0]   acc
);
    genvar c;
    generate
        for (c = 0; c < NCFG; c = c + 1) begin : g_cfg
            localparam integer A_W = CFG[c*48 +: 8];
            localparam integer A_SIGNED = CFG[c*48+8 +: 8];
            localparam integer B_W = CFG[c*48+16 +: 8];
            localparam integer B_SIGNED = CFG[c*48+24 +: 8];
            localparam integer N = CFG[c*48+32 +: 8];
            localparam integer ACC_W = CFG[c*48+40 +: 8];
            wire [ACC_W-1:0] sum;
            hlsf_mac #(
                .A_W(A_W), .A_SIGNED(A_SIGNED), .B_W(B_W), .B_SIGNED(B_SIGNED), .N(N), .ACC_W(ACC_W)
            ) dut (
                .ap_clk(ap_clk), .en(en), .clear(clear), .a(a[N*A_W-1:0]), .b(b[N*B_W-1:0]), .acc(sum)
            );
            wire [64+ACC_W-1:0] ext = {64'd0, sum};
            assign acc[c*64 +: 64] = ext[63:0];
        end
    endgenerate
endmodule

`default_nettype wire
