// hlsf_fork: copies one stream to N streams (a DataflowPlan fork stage).
//
// Parameters
//   WIDTH   element width in bits (>= 1)
//   N       number of outputs (>= 1)
// Ports
//   ap_clk, ap_rst_n                     clock, synchronous active-low reset
//   in_tdata/in_tvalid/in_tready         the stream to copy
//   out_tdata  [WIDTH-1:0]               the element, shared by every output
//   out_tvalid [N-1:0], out_tready [N-1:0]   one handshake per output
// Timing
//   Combinational, no latency, throughput 1 element/cycle when every output is ready.
//   An element is consumed (in_tready) only once every output has taken it. Outputs may take it
//   in different cycles: a per-output "taken" flag remembers who already has it, and that output's
//   out_tvalid stays low until the next element. in_tready depends combinationally on out_tready,
//   so each output should feed a FIFO (hlsf_fifo registers its ready), as the plan's channels do.

`default_nettype none

module hlsf_fork #(
    parameter integer WIDTH = 8,
    parameter integer N = 2
) (
    input  wire             ap_clk,
    input  wire             ap_rst_n,
    input  wire [WIDTH-1:0] in_tdata,
    input  wire             in_tvalid,
    output wire             in_tready,
    output wire [WIDTH-1:0] out_tdata,
    output wire [N-1:0]     out_tvalid,
    input  wire [N-1:0]     out_tready
);
    reg [N-1:0] taken;

    assign out_tdata = in_tdata;
    assign out_tvalid = {N{in_tvalid}} & ~taken;
    assign in_tready = &(taken | out_tready);

    always @(posedge ap_clk) begin
        if (!ap_rst_n || (in_tvalid && in_tready)) begin
            taken <= {N{1'b0}};
        end else begin
            taken <= taken | (out_tvalid & out_tready);
        end
    end
endmodule

`default_nettype wire
