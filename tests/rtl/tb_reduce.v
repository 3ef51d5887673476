// Test top for hlsf_reduce: NCFG instances sharing the control inputs and the low input bits.
//
// CFG packs NCFG configurations of six 8-bit fields, configuration 0 in the low bits:
//   {OP, DEPTH, ACC_W, N, SIGNED, WIDTH}
// Instance c uses accumulator addr % DEPTH (and rd_addr % DEPTH), lanes lane_en[N-1:0] and
// in_data[N*WIDTH-1:0], and drives rd_data[c*64 +: 64] (zero-extended).

`default_nettype none

module tb_reduce #(
    parameter integer NCFG = 1,
    parameter [NCFG*48-1:0] CFG = 48'h00_01_10_01_01_08,
    parameter integer LMAX = 1,
    parameter integer XMAX = 8
) (
    input  wire                 ap_clk,
    input  wire                 en,
    input  wire                 first,
    input  wire [7:0]           addr,
    input  wire [LMAX-1:0]      lane_en,
    input  wire [XMAX-1:0]      in_data,
    input  wire [7:0]           rd_addr,
    output wire [NCFG*64-1:0]   rd_data
);
    genvar c;
    generate
        for (c = 0; c < NCFG; c = c + 1) begin : g_cfg
            localparam integer WIDTH = CFG[c*48 +: 8];
            localparam integer SIGNED = CFG[c*48+8 +: 8];
            localparam integer N = CFG[c*48+16 +: 8];
            localparam integer ACC_W = CFG[c*48+24 +: 8];
            localparam integer DEPTH = CFG[c*48+32 +: 8];
            localparam integer OP = CFG[c*48+40 +: 8];
            localparam integer AW = DEPTH > 1 ? $clog2(DEPTH) : 1;
            wire [7:0] wr = addr % DEPTH;
            wire [7:0] rd = rd_addr % DEPTH;
            wire [ACC_W-1:0] value;
            hlsf_reduce #(
                .WIDTH(WIDTH), .SIGNED(SIGNED), .N(N), .ACC_W(ACC_W), .DEPTH(DEPTH), .OP(OP)
            ) dut (
                .ap_clk(ap_clk), .en(en), .first(first), .addr(wr[AW-1:0]), .lane_en(lane_en[N-1:0]),
                .in_data(in_data[N*WIDTH-1:0]), .rd_addr(rd[AW-1:0]), .rd_data(value)
            );
            wire [64+ACC_W-1:0] ext = {64'd0, value};
            assign rd_data[c*64 +: 64] = ext[63:0];
        end
    endgenerate
endmodule

`default_nettype wire
