// hlsf_rom: read-only memory with a registered read port, loaded from a $readmemh file.
//
// Parameters
//   WIDTH       word width in bits (a word may pack several elements, element 0 in the low bits)
//   DEPTH       number of words (>= 1)
//   INIT_FILE   $readmemh file: one hexadecimal word per line in address order
//               (hlsfuse.backends.verilog.mem_lines writes it); "" leaves the ROM uninitialised
// Ports
//   ap_clk
//   rd_en                          read enable: rd_data keeps its value while rd_en is low
//   rd_addr [$clog2(DEPTH)-1:0]    word address (1 bit when DEPTH = 1); must be < DEPTH
//   rd_data [WIDTH-1:0]            the word at the address presented with rd_en, one cycle later
// Timing
//   Latency 1 cycle, one read per cycle (block RAM style); no reset, as a ROM needs none.

`default_nettype none

module hlsf_rom #(
    parameter integer WIDTH = 8,
    parameter integer DEPTH = 16,
    parameter INIT_FILE = ""
) (
    input  wire                                     ap_clk,
    input  wire                                     rd_en,
    input  wire [(DEPTH > 1 ? $clog2(DEPTH) : 1)-1:0] rd_addr,
    output reg  [WIDTH-1:0]                         rd_data
);
    reg [WIDTH-1:0] mem [0:DEPTH-1];

    initial begin
        if (INIT_FILE != "") begin
            $readmemh(INIT_FILE, mem);
        end
    end

    always @(posedge ap_clk) begin
        if (rd_en) begin
            rd_data <= mem[rd_addr];
        end
    end
endmodule

`default_nettype wire
