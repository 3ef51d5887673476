// hlsf_rsqrt: the reciprocal square root of layer_norm and rms_norm, bit-exact with hlsfuse.ops.norm.rsqrt
// (docs/numerics.md section 9).
//
// For an integer V >= 1 it gives R and e with R * 2^-(24 + e) ~ 1/sqrt(V):
//   e = floor(msb(V) / 2)                 V = m * 4^e, m in [1, 4) (msb: the leading one, a priority encoder)
//   M = V >> (2e - 20), or V << (20 - 2e) m on 20 fractional bits, truncated: M in [2^20, 2^22)
//   index = M >> 12                       the table's index, its top 10 bits
//   y0 = entry                            table[index], ufixed<16,0>: 1/sqrt of the bucket's middle
//   t = (3 * 2^52 - M * y0 * y0) >> 20    3 - m y0^2 on 32 fractional bits, truncated
//   R = (y0 * t) >> 25                    y0 (3 - m y0^2) / 2, one Newton step, on 24 fractional bits, truncated
// The table is the stage's ROM (its entries come from hlsfuse.ops.norm.rsqrt_table): `index` goes out to it and
// its word comes back as `entry`, so the module holds arithmetic only.
//
// Parameters
//   V_W     bits of V, 1..63
// Ports
//   v       [V_W-1:0]  V >= 1 (V = 0 gives e = 0 and M = 0, a table index of 0)
//   index   [9:0]      the table's index
//   entry   [15:0]     the table's word at index
//   r       [24:0]     R <= 2^24
//   e       [4:0]      e <= 31
// Timing
//   Purely combinational; the enclosing stage places the pipeline registers.

`default_nettype none

module hlsf_rsqrt #(
    parameter integer V_W = 63
) (
    input  wire [V_W-1:0] v,
    output wire [9:0]     index,
    input  wire [15:0]    entry,
    output wire [24:0]    r,
    output wire [4:0]     e
);
    localparam integer XW = V_W + 20 > 23 ? V_W + 20 : 23;  // V shifted left by up to 20 bits (and a spare)

    function [5:0] msb_of(input [V_W-1:0] x);
        integer b;
        begin
            msb_of = 6'd0;
            for (b = 0; b < V_W; b = b + 1) begin
                if (x[b]) msb_of = b[5:0];
            end
        end
    endfunction

    wire [5:0] msb = msb_of(v);
    assign e = msb[5:1];
    wire [5:0] two_e = {e, 1'b0};
    wire [XW-1:0] vx = {{(XW - V_W){1'b0}}, v};
    wire [XW-1:0] shifted = two_e >= 6'd20 ? vx >> (two_e - 6'd20) : vx << (6'd20 - two_e);
    wire [21:0] m = shifted[21:0];
    assign index = m[21:12];

    wire [53:0] m54 = {32'd0, m};
    wire [53:0] y54 = {38'd0, entry};
    wire [53:0] q = m54 * y54 * y54;        // m y0^2 on 52 fractional bits, < 4
    wire [53:0] d = {2'b11, 52'd0} - q;     // 3 - m y0^2 > 0
    wire [33:0] t = d[53:20];
    wire [49:0] p = {34'd0, entry} * {16'd0, t};
    assign r = p[49:25];

    wire unused = &{1'b0, msb[0], shifted[XW-1:22], d[19:0], p[24:0], 1'b0};
endmodule

`default_nettype wire
