// hlsf_skid: skid buffer, a two-entry register slice that registers both valid and ready.
//
// Parameters
//   WIDTH   element width in bits (>= 1)
// Ports
//   ap_clk, ap_rst_n                     clock, synchronous active-low reset (empties the buffer)
//   in_tdata/in_tvalid/in_tready         upstream side
//   out_tdata/out_tvalid/out_tready      downstream side
// Timing
//   Latency 1 cycle, throughput 1 element/cycle. out_tdata/out_tvalid and in_tready are all
//   register outputs, so the slice breaks the combinational ready path of a pipeline (for timing).
//   When the downstream stalls while an element arrives, that element waits in the skid register
//   and in_tready drops on the next cycle; the skid register drains first when the output moves.

`default_nettype none

module hlsf_skid #(
    parameter integer WIDTH = 8
) (
    input  wire             ap_clk,
    input  wire             ap_rst_n,
    input  wire [WIDTH-1:0] in_tdata,
    input  wire             in_tvalid,
    output wire             in_tready,
    output reg  [WIDTH-1:0] out_tdata,
    output reg              out_tvalid,
    input  wire             out_tready
);
    reg [WIDTH-1:0] skid_data;
    reg skid_valid;

    wire push = in_tvalid && !skid_valid;
    wire load = out_tready || !out_tvalid;  // the output register may take a new element

    assign in_tready = !skid_valid;

    always @(posedge ap_clk) begin
        if (!ap_rst_n) begin
            out_tvalid <= 1'b0;
            skid_valid <= 1'b0;
        end else if (load) begin
            out_tvalid <= skid_valid || push;
            skid_valid <= 1'b0;
        end else if (push) begin
            skid_valid <= 1'b1;
        end
    end

    always @(posedge ap_clk) begin
        if (load) begin
            out_tdata <= skid_valid ? skid_data : in_tdata;
        end
        if (push && !load) begin
            skid_data <= in_tdata;
        end
    end
endmodule

`default_nettype wire
