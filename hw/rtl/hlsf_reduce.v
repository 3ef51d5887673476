// hlsf_reduce: exact sum or max accumulators, for reductions (sum, mean, max) and pools.
//
//   on en:   acc[addr] <= (first ? identity : acc[addr])  OP  (lanes i < N with lane_en[i])
//            OP = + (identity 0) or max (identity: the accumulator's minimum)
//
// One instance serves both shapes of the work:
//   - pooling: N = KH*KW lanes (one channel of a hlsf_line_buffer window), DEPTH = 1, first = 1,
//     lane_en = 0 for padding positions (padding never wins a max pool; it adds 0 to a sum);
//   - reductions over a stream: N = 1, one accumulator per output element (DEPTH = output size,
//     addr = the output index of the element), first on an accumulator's first input.
// The sum is exact: ACC_W is the width of the exact format the op's check rule proved
// (Fmt(x).accumulate(count)) and the arithmetic is modulo 2^ACC_W, exact for any result that
// fits. For max, ACC_W >= WIDTH holds the selected input value (ACC_W = WIDTH normally).
//
// Parameters
//   WIDTH, SIGNED   raw width and signedness of the elements
//   N               lanes combined per update
//   ACC_W           accumulator width (elements are sign- or zero-extended to it)
//   DEPTH           number of accumulators
//   OP              0 sum, 1 max
// Ports
//   ap_clk
//   en, first, addr [AW-1:0]       update accumulator addr (AW = $clog2(DEPTH), 1 when DEPTH = 1)
//   lane_en [N-1:0]                lanes taking part in this update
//   in_data [N*WIDTH-1:0]          lane i at bits [i*WIDTH +: WIDTH]
//   rd_addr [AW-1:0], rd_data      read port (combinational view of the accumulator registers)
// Timing
//   One update per cycle, visible on rd_data from the next cycle (latency 1). Back-to-back updates
//   of the same accumulator are fine. No reset: the first update of an accumulator asserts first.

`default_nettype none

module hlsf_reduce #(
    parameter integer WIDTH = 8,
    parameter integer SIGNED = 1,
    parameter integer N = 1,
    parameter integer ACC_W = 16,
    parameter integer DEPTH = 1,
    parameter integer OP = 0
) (
    input  wire                                         ap_clk,
    input  wire                                         en,
    input  wire                                         first,
    input  wire [(DEPTH > 1 ? $clog2(DEPTH) : 1)-1:0]   addr,
    input  wire [N-1:0]                                 lane_en,
    input  wire [N*WIDTH-1:0]                           in_data,
    input  wire [(DEPTH > 1 ? $clog2(DEPTH) : 1)-1:0]   rd_addr,
    output wire [ACC_W-1:0]                             rd_data
);
    // the accumulator's minimum, the identity of max
    localparam [ACC_W-1:0] MIN = SIGNED != 0 ? ~({ACC_W{1'b1}} >> 1) : {ACC_W{1'b0}};
    localparam [ACC_W-1:0] FLIP = SIGNED != 0 ? MIN : {ACC_W{1'b0}};  // signed order = unsigned order of x ^ FLIP

    reg [ACC_W-1:0] acc [0:DEPTH-1];

    // lanes extended to ACC_W bits
    wire [N*ACC_W-1:0] lanes;
    genvar i;
    generate
        for (i = 0; i < N; i = i + 1) begin : g_lane
            wire [WIDTH-1:0] x = in_data[i*WIDTH +: WIDTH];
            wire neg = SIGNED != 0 && x[WIDTH-1];
            if (ACC_W > WIDTH) begin : g_extend
                assign lanes[i*ACC_W +: ACC_W] = {{(ACC_W - WIDTH){neg}}, x};
            end else begin : g_same
                wire unused_sign = neg;
                assign lanes[i*ACC_W +: ACC_W] = x;
            end
        end
    endgenerate

    wire [ACC_W-1:0] current = acc[addr];
    reg [ACC_W-1:0] next;
    reg [ACC_W-1:0] lane;
    integer j;
    always @* begin
        if (OP == 1) begin
            next = first ? MIN : current;
            for (j = 0; j < N; j = j + 1) begin
                lane = lanes[j*ACC_W +: ACC_W];
                if (lane_en[j] && (lane ^ FLIP) > (next ^ FLIP)) begin
                    next = lane;
                end
            end
        end else begin
            next = first ? {ACC_W{1'b0}} : current;
            for (j = 0; j < N; j = j + 1) begin
                lane = lanes[j*ACC_W +: ACC_W];
                if (lane_en[j]) begin
                    next = next + lane;
                end
            end
        end
    end

    always @(posedge ap_clk) begin
        if (en) begin
            acc[addr] <= next;
        end
    end

    assign rd_data = acc[rd_addr];
endmodule

`default_nettype wire
