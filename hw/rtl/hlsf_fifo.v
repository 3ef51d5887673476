// hlsf_fifo: valid/ready stream FIFO (first-word fall-through), one channel of a DataflowPlan.
//
// Parameters
//   WIDTH   element width in bits (>= 1)
//   DEPTH   capacity in elements (>= 2): the channel depth the lowering computed
//   BLOCK   1: the storage is a block RAM (ram_style "block"), 0: LUT RAM ("distributed")
// Ports
//   ap_clk, ap_rst_n                     clock, synchronous active-low reset (empties the FIFO)
//   in_tdata/in_tvalid/in_tready         write side
//   out_tdata/out_tvalid/out_tready      read side
//   count   [$clog2(DEPTH+1)-1:0]        occupancy, for stall and deadlock diagnostics
// Timing
//   An element written at a clock edge is visible on out_* from that edge on (latency 1 cycle).
//   in_tready = (count < DEPTH) and out_tvalid = (count > 0) come from registers only: there is no
//   combinational path from out_tready to in_tready nor from in_tvalid to out_tvalid, so FIFOs cut
//   every ready/valid chain between stages. Throughput 1 element/cycle: with both sides always
//   ready the occupancy never reaches DEPTH >= 2, so the writer is never stalled.
//   Storage is a register array read at the read pointer, a register: LUT RAM, or with BLOCK = 1 a block RAM
//   (`ram_style`; a synthesis tool moves the pointer register into the block RAM's synchronous read), where the
//   resource model and the C++ make the FIFO memory (hlsfuse/lower/area.py, fifo_storage).

`default_nettype none

module hlsf_fifo #(
    parameter integer WIDTH = 8,
    parameter integer DEPTH = 2,
    parameter integer BLOCK = 0
) (
    input  wire                         ap_clk,
    input  wire                         ap_rst_n,
    input  wire [WIDTH-1:0]             in_tdata,
    input  wire                         in_tvalid,
    output wire                         in_tready,
    output wire [WIDTH-1:0]             out_tdata,
    output wire                         out_tvalid,
    input  wire                         out_tready,
    output wire [$clog2(DEPTH+1)-1:0]   count
);
    localparam integer CW = $clog2(DEPTH + 1);
    localparam integer AW = $clog2(DEPTH);
    localparam [CW-1:0] FULL = DEPTH[CW-1:0];
    localparam [AW-1:0] LAST = DEPTH[AW-1:0] - 1'b1;

    reg [AW-1:0] rd_ptr;
    reg [AW-1:0] wr_ptr;
    reg [CW-1:0] used;

    wire push = in_tvalid && in_tready;
    wire pop = out_tvalid && out_tready;

    assign in_tready = used != FULL;
    assign out_tvalid = used != {CW{1'b0}};
    assign count = used;

    always @(posedge ap_clk) begin
        if (!ap_rst_n) begin
            rd_ptr <= {AW{1'b0}};
            wr_ptr <= {AW{1'b0}};
            used <= {CW{1'b0}};
        end else begin
            if (push) begin
                wr_ptr <= (wr_ptr == LAST) ? {AW{1'b0}} : wr_ptr + 1'b1;
            end
            if (pop) begin
                rd_ptr <= (rd_ptr == LAST) ? {AW{1'b0}} : rd_ptr + 1'b1;
            end
            if (push && !pop) begin
                used <= used + 1'b1;
            end else if (pop && !push) begin
                used <= used - 1'b1;
            end
        end
    end

    generate
        if (BLOCK != 0) begin : g_block
            (* ram_style = "block" *) reg [WIDTH-1:0] mem [0:DEPTH-1];
            assign out_tdata = mem[rd_ptr];
            always @(posedge ap_clk) begin
                if (push) begin
                    mem[wr_ptr] <= in_tdata;
                end
            end
        end else begin : g_lutram
            (* ram_style = "distributed" *) reg [WIDTH-1:0] mem [0:DEPTH-1];
            assign out_tdata = mem[rd_ptr];
            always @(posedge ap_clk) begin
                if (push) begin
                    mem[wr_ptr] <= in_tdata;
                end
            end
        end
    endgenerate
endmodule

`default_nettype wire
