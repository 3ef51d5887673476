// hlsf_lut: lookup-table stage (sigmoid, tanh, exp, reciprocal), the table of hlsfuse/lut.py in a ROM.
//
//   index = (X - X_min) >> SHIFT     for a signed X, X - X_min is X with its sign bit flipped
//   out   = table[index]             the entry is the result: nothing is rounded afterwards
//
// Parameters
//   IN_W, IN_SIGNED   input raw format (Table.in_fmt: width, signedness)
//   OUT_W             output width (Table.out_type.width)
//   SHIFT             Table.shift = max(0, IN_W - table_bits); the table has 2^(IN_W-SHIFT) entries
//   INIT_FILE         the entries as $readmemh text: mem_lines(table.entries, OUT_W)
// Ports
//   ap_clk, ap_rst_n                     clock, synchronous active-low reset
//   in_tdata/in_tvalid/in_tready         raw inputs
//   out_tdata/out_tvalid/out_tready      raw table entries
// Timing
//   One pipeline register (the ROM's registered read): latency 1 cycle, throughput 1 element/cycle.
//   in_tready = !out_tvalid || out_tready is combinational from out_tready, as in any stall-on-full
//   pipeline register; put an hlsf_skid or hlsf_fifo behind it to cut that path.

`default_nettype none

module hlsf_lut #(
    parameter integer IN_W = 8,
    parameter integer IN_SIGNED = 1,
    parameter integer OUT_W = 8,
    parameter integer SHIFT = 0,
    parameter INIT_FILE = ""
) (
    input  wire             ap_clk,
    input  wire             ap_rst_n,
    input  wire [IN_W-1:0]  in_tdata,
    input  wire             in_tvalid,
    output wire             in_tready,
    output wire [OUT_W-1:0] out_tdata,
    output reg              out_tvalid,
    input  wire             out_tready
);
    localparam integer AW = IN_W - SHIFT;
    localparam [IN_W-1:0] SIGN = IN_SIGNED != 0 ? ~({IN_W{1'b1}} >> 1) : {IN_W{1'b0}};

    wire advance = !out_tvalid || out_tready;
    wire [IN_W-1:0] offset = in_tdata ^ SIGN;  // X - X_min

    generate
        if (SHIFT > 0) begin : g_drop
            wire unused_low = &{1'b0, offset[SHIFT-1:0]};
        end
    endgenerate

    assign in_tready = advance;

    hlsf_rom #(
        .WIDTH(OUT_W),
        .DEPTH(1 << AW),
        .INIT_FILE(INIT_FILE)
    ) table_rom (
        .ap_clk(ap_clk),
        .rd_en(advance),
        .rd_addr(offset[IN_W-1:SHIFT]),
        .rd_data(out_tdata)
    );

    always @(posedge ap_clk) begin
        if (!ap_rst_n) begin
            out_tvalid <= 1'b0;
        end else if (advance) begin
            out_tvalid <= in_tvalid;
        end
    end
endmodule

`default_nettype wire
