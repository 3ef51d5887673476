// hlsf_frame_buffer: stores a whole tensor, then streams it out in another order (transpose).
//
// The input arrives in row-major order of the input shape and is written to consecutive
// addresses. The output walks the output shape in row-major order (axis NDIM-1 fastest) and reads
//
//     address = sum_d idx[d] * STRIDE[d]
//
// For transpose(x, perm): SHAPE[d] = x.shape[perm[d]] and STRIDE[d] = the row-major stride of x's
// axis perm[d] (in elements). Any other reordering that is a strided walk works the same way.
//
// Parameters
//   WIDTH    element width in bits
//   NDIM     number of axes (>= 1)
//   SHAPE    NDIM*32 bits: output extent of axis d at bits [d*32 +: 32], axis 0 outermost
//   STRIDE   NDIM*32 bits: input stride of output axis d at bits [d*32 +: 32]
//            (so the Verilog literal {.., SHAPE[1], SHAPE[0]} lists the innermost axis first)
// Ports
//   ap_clk, ap_rst_n                     clock, synchronous active-low reset (back to writing)
//   in_tdata/in_tvalid/in_tready         the tensor, row-major
//   out_tdata/out_tvalid/out_tready      the tensor in the output order
// Timing
//   Write phase: one element per cycle until the frame is stored (in_tready high, out_tvalid low);
//   then read phase: one element per cycle (out_tvalid high, in_tready low); then the next frame.
//   Cycles per frame = 2 * size, the analytic model's "read all, then write all". The read is
//   combinational from the storage array; in_tready and out_tvalid come from a register.

`default_nettype none

module hlsf_frame_buffer #(
    parameter integer WIDTH = 8,
    parameter integer NDIM = 2,
    parameter [NDIM*32-1:0] SHAPE = {32'd2, 32'd3},
    parameter [NDIM*32-1:0] STRIDE = {32'd3, 32'd1}
) (
    input  wire             ap_clk,
    input  wire             ap_rst_n,
    input  wire [WIDTH-1:0] in_tdata,
    input  wire             in_tvalid,
    output wire             in_tready,
    output wire [WIDTH-1:0] out_tdata,
    output wire             out_tvalid,
    input  wire             out_tready
);
    function integer volume(input [NDIM*32-1:0] shape);
        integer d;
        begin
            volume = 1;
            for (d = 0; d < NDIM; d = d + 1) begin
                volume = volume * shape[d*32 +: 32];
            end
        end
    endfunction

    localparam integer SIZE = volume(SHAPE);
    localparam integer AW = SIZE > 1 ? $clog2(SIZE) : 1;
    localparam [AW-1:0] LAST = SIZE[AW-1:0] - 1'b1;

    reg [WIDTH-1:0] mem [0:SIZE-1];
    reg reading;
    reg [AW-1:0] wr_addr;
    reg [NDIM*32-1:0] idx;  // output index, axis d at [d*32 +: 32]

    // the next output index (row-major increment) and the read address
    reg [NDIM*32-1:0] idx_next;
    reg wrapped;
    reg [31:0] rd_addr;
    integer d;
    always @* begin
        idx_next = idx;
        wrapped = 1'b1;  // carry into the next axis
        rd_addr = 32'd0;
        for (d = NDIM - 1; d >= 0; d = d - 1) begin
            if (wrapped) begin
                if (idx[d*32 +: 32] == SHAPE[d*32 +: 32] - 32'd1) begin
                    idx_next[d*32 +: 32] = 32'd0;
                end else begin
                    idx_next[d*32 +: 32] = idx[d*32 +: 32] + 32'd1;
                    wrapped = 1'b0;
                end
            end
            rd_addr = rd_addr + idx[d*32 +: 32] * STRIDE[d*32 +: 32];
        end
    end

    assign in_tready = !reading;
    assign out_tvalid = reading;
    assign out_tdata = mem[rd_addr[AW-1:0]];

    generate
        if (AW < 32) begin : g_high
            wire unused_addr = &{1'b0, rd_addr[31:AW]};
        end
    endgenerate

    always @(posedge ap_clk) begin
        if (!ap_rst_n) begin
            reading <= 1'b0;
            wr_addr <= {AW{1'b0}};
            idx <= {(NDIM * 32){1'b0}};
        end else if (!reading) begin
            if (in_tvalid) begin
                wr_addr <= wr_addr == LAST ? {AW{1'b0}} : wr_addr + 1'b1;
                reading <= wr_addr == LAST;
            end
        end else if (out_tready) begin
            idx <= idx_next;
            reading <= !wrapped;
        end
    end

    always @(posedge ap_clk) begin
        if (!reading && in_tvalid) begin
            mem[wr_addr] <= in_tdata;
        end
    end
endmodule

`default_nettype wire
