// hlsf_mac: exact multiply-accumulate of N products per cycle (dot products of dense and conv2d).
//
//   on en:   acc <= (clear ? 0 : acc) + sum_{i<N} a[i] * b[i]
//
// N = KH*KW*Cin (a whole conv window, from hlsf_line_buffer) or K (a dense row) computes one output
// per cycle, as the analytic window and rows schedules assume; N = 1 with clear on the first
// term is a classic sequential MAC. Nothing is rounded: ACC_W is the width of the exact
// accumulation format the op's check rule proved (Fmt(a).mul(Fmt(b)).accumulate(terms)), and
// products and sums are computed modulo 2^MW with MW >= ACC_W, which gives the exact value
// whenever it fits ACC_W bits (it does, by that proof). The result is signed if a or b is.
//
// Parameters
//   A_W, A_SIGNED   raw width and signedness of the a elements (inputs)
//   B_W, B_SIGNED   the same for the b elements (weights)
//   N               products per cycle
//   ACC_W           accumulator width
// Ports
//   ap_clk
//   en              accumulate this cycle's products
//   clear           start a new sum with this cycle's products (only with en)
//   a  [N*A_W-1:0]  element i at bits [i*A_W +: A_W];   b likewise
//   acc [ACC_W-1:0] the accumulator register
// Timing
//   Latency 1 cycle (products and adder tree are combinational, the accumulator is the register);
//   one update per cycle. No reset: the first use must assert clear.

`default_nettype none

module hlsf_mac #(
    parameter integer A_W = 8,
    parameter integer A_SIGNED = 1,
    parameter integer B_W = 8,
    parameter integer B_SIGNED = 1,
    parameter integer N = 1,
    parameter integer ACC_W = 16
) (
    input  wire                 ap_clk,
    input  wire                 en,
    input  wire                 clear,
    input  wire [N*A_W-1:0]     a,
    input  wire [N*B_W-1:0]     b,
    output reg  [ACC_W-1:0]     acc
);
    localparam integer MW = (ACC_W > A_W + B_W + 2 ? ACC_W : A_W + B_W + 2);

    wire [N*MW-1:0] products;  // a[i] * b[i] (mod 2^MW) at bits [i*MW +: MW]

    genvar i;
    generate
        for (i = 0; i < N; i = i + 1) begin : g_term
            wire [A_W-1:0] ai = a[i*A_W +: A_W];
            wire [B_W-1:0] bi = b[i*B_W +: B_W];
            wire a_neg = A_SIGNED != 0 && ai[A_W-1];
            wire b_neg = B_SIGNED != 0 && bi[B_W-1];
            wire signed [MW-1:0] ax = {{(MW - A_W){a_neg}}, ai};
            wire signed [MW-1:0] bx = {{(MW - B_W){b_neg}}, bi};
            assign products[i*MW +: MW] = ax * bx;
        end
    endgenerate

    reg [MW-1:0] total;
    integer j;
    always @* begin
        total = {MW{1'b0}};
        for (j = 0; j < N; j = j + 1) begin
            total = total + products[j*MW +: MW];
        end
    end
    wire [ACC_W-1:0] base = clear ? {ACC_W{1'b0}} : acc;

    generate
        if (MW > ACC_W) begin : g_high
            wire unused_high = &{1'b0, total[MW-1:ACC_W]};
        end
    endgenerate

    always @(posedge ap_clk) begin
        if (en) begin
            acc <= base + total[ACC_W-1:0];
        end
    end
endmodule

`default_nettype wire
