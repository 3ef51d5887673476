// Test top for hlsf_line_buffer: NCFG instances of different geometries fed the same stream.
//
// CFG packs NCFG configurations of six 8-bit fields, configuration 0 in the low bits:
//   {DW, DH, KW, KH, WP, C}
// Instance i's snapshot appears at snapshot[i*WMAX +: WMAX], zero-extended.

`default_nettype none

module tb_line_buffer #(
    parameter integer NCFG = 1,
    parameter [NCFG*48-1:0] CFG = 48'h01_01_03_03_04_01,
    parameter integer WIDTH = 8,
    parameter integer WMAX = 72
) (
    input  wire                     ap_clk,
    input  wire                     ap_rst_n,
    input  wire                     push,
    input  wire                     capture,
    input  wire [WIDTH-1:0]         in_data,
    output wire [NCFG*WMAX-1:0]     snapshot
);
    genvar i;
    generate
        for (i = 0; i < NCFG; i = i + 1) begin : g_cfg
            localparam integer C = CFG[i*48 +: 8];
            localparam integer WP = CFG[i*48+8 +: 8];
            localparam integer KH = CFG[i*48+16 +: 8];
            localparam integer KW = CFG[i*48+24 +: 8];
            localparam integer DH = CFG[i*48+32 +: 8];
            localparam integer DW = CFG[i*48+40 +: 8];
            localparam integer BITS = KH * KW * C * WIDTH;
            wire [BITS-1:0] taps;
            hlsf_line_buffer #(
                .WIDTH(WIDTH), .C(C), .WP(WP), .KH(KH), .KW(KW), .DH(DH), .DW(DW)
            ) dut (
                .ap_clk(ap_clk), .ap_rst_n(ap_rst_n), .push(push), .capture(capture), .capture_slot(1'b0),
                .emit_slot(1'b0), .in_data(in_data),
                .snapshot(taps)
            );
            wire [WMAX+BITS-1:0] ext = {{WMAX{1'b0}}, taps};
            assign snapshot[i*WMAX +: WMAX] = ext[WMAX-1:0];
        end
    endgenerate
endmodule

`default_nettype wire
