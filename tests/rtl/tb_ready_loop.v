// Structural check for a combinational path from out_tready to in_tready: the module's in_tready is
// wired straight back into its out_tready. If in_tready depended combinationally on out_tready this
// would be a combinational loop, which `verilator --lint-only -Wall` reports as UNOPTFLAT.
// KIND: 0 hlsf_fifo, 1 hlsf_skid, 2 a plain wire (which is such a path: the check's positive control).

`default_nettype none

module tb_ready_loop #(
    parameter integer KIND = 0
) (
    input  wire         ap_clk,
    input  wire         ap_rst_n,
    input  wire [7:0]   in_tdata,
    input  wire         in_tvalid,
    output wire [7:0]   out_tdata,
    output wire         out_tvalid,
    output wire [1:0]   count
);
    wire ready;

    generate
        if (KIND == 0) begin : g_fifo
            hlsf_fifo #(.WIDTH(8), .DEPTH(2)) dut (
                .ap_clk(ap_clk), .ap_rst_n(ap_rst_n),
                .in_tdata(in_tdata), .in_tvalid(in_tvalid), .in_tready(ready),
                .out_tdata(out_tdata), .out_tvalid(out_tvalid), .out_tready(ready),
                .count(count)
            );
        end else if (KIND == 1) begin : g_skid
            hlsf_skid #(.WIDTH(8)) dut (
                .ap_clk(ap_clk), .ap_rst_n(ap_rst_n),
                .in_tdata(in_tdata), .in_tvalid(in_tvalid), .in_tready(ready),
                .out_tdata(out_tdata), .out_tvalid(out_tvalid), .out_tready(ready)
            );
            assign count = 2'd0;
        end else begin : g_wire
            // a stage whose in_tready follows its out_tready combinationally (a fork's ready is such)
            reg taken;
            always @(posedge ap_clk) taken <= ap_rst_n && in_tvalid && !ready;
            wire out_tready = ready;
            assign ready = taken || out_tready;
            assign out_tdata = in_tdata;
            assign out_tvalid = in_tvalid && !taken;
            assign count = 2'd0;
        end
    endgenerate
endmodule

`default_nettype wire
