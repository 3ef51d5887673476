// own_sim: own with the counters hlsfuse rtlsim reads (busy/stall cycles per stage, channel
// levels, cycles since the design last made progress). Simulation only; the design is own.v.
//
// sim_sel selects a stage (for sim_busy, sim_stall, sim_stalled) and a channel (for sim_level,
// sim_full), numbered in the order of manifest.json.

`default_nettype none

module own_sim (
    input  wire ap_clk,
    input  wire ap_rst_n,
    input  wire [15:0] x_TDATA,
    input  wire x_TVALID,
    output wire x_TREADY,
    input  wire x_TLAST,
    output wire [15:0] slice0_TDATA,
    output wire slice0_TVALID,
    input  wire slice0_TREADY,
    output wire slice0_TLAST,
    output wire [15:0] slice1_TDATA,
    output wire slice1_TVALID,
    input  wire slice1_TREADY,
    output wire slice1_TLAST,
    output wire [15:0] pad0_TDATA,
    output wire pad0_TVALID,
    input  wire pad0_TREADY,
    output wire pad0_TLAST,
    output wire [15:0] concat0_TDATA,
    output wire concat0_TVALID,
    input  wire concat0_TREADY,
    output wire concat0_TLAST,
    output wire [15:0] transpose0_TDATA,
    output wire transpose0_TVALID,
    input  wire transpose0_TREADY,
    output wire transpose0_TLAST,
    output wire [15:0] softmax0_TDATA,
    output wire softmax0_TVALID,
    input  wire softmax0_TREADY,
    output wire softmax0_TLAST,
    output wire [15:0] argmax0_TDATA,
    output wire argmax0_TVALID,
    input  wire argmax0_TREADY,
    output wire argmax0_TLAST,
    output wire [15:0] topk0_TDATA,
    output wire topk0_TVALID,
    input  wire topk0_TREADY,
    output wire topk0_TLAST,
    input  wire [15:0] sim_sel,
    output wire [31:0] sim_busy,
    output wire [31:0] sim_stall,
    output wire sim_stalled,
    output wire [31:0] sim_level,
    output wire sim_full,
    output wire [31:0] sim_quiet
);
    own dut (
        .ap_clk(ap_clk), .ap_rst_n(ap_rst_n),
        .x_TDATA(x_TDATA), .x_TVALID(x_TVALID), .x_TREADY(x_TREADY), .x_TLAST(x_TLAST),
        .slice0_TDATA(slice0_TDATA), .slice0_TVALID(slice0_TVALID), .slice0_TREADY(slice0_TREADY), .slice0_TLAST(slice0_TLAST),
        .slice1_TDATA(slice1_TDATA), .slice1_TVALID(slice1_TVALID), .slice1_TREADY(slice1_TREADY), .slice1_TLAST(slice1_TLAST),
        .pad0_TDATA(pad0_TDATA), .pad0_TVALID(pad0_TVALID), .pad0_TREADY(pad0_TREADY), .pad0_TLAST(pad0_TLAST),
        .concat0_TDATA(concat0_TDATA), .concat0_TVALID(concat0_TVALID), .concat0_TREADY(concat0_TREADY), .concat0_TLAST(concat0_TLAST),
        .transpose0_TDATA(transpose0_TDATA), .transpose0_TVALID(transpose0_TVALID), .transpose0_TREADY(transpose0_TREADY), .transpose0_TLAST(transpose0_TLAST),
        .softmax0_TDATA(softmax0_TDATA), .softmax0_TVALID(softmax0_TVALID), .softmax0_TREADY(softmax0_TREADY), .softmax0_TLAST(softmax0_TLAST),
        .argmax0_TDATA(argmax0_TDATA), .argmax0_TVALID(argmax0_TVALID), .argmax0_TREADY(argmax0_TREADY), .argmax0_TLAST(argmax0_TLAST),
        .topk0_TDATA(topk0_TDATA), .topk0_TVALID(topk0_TVALID), .topk0_TREADY(topk0_TREADY), .topk0_TLAST(topk0_TLAST)
    );

    localparam integer NS = 9;
    localparam integer NC = 17;
    wire [NS-1:0] busy = {dut.s7_topk_busy, dut.s6_argmax_busy, dut.s5_softmax_busy, dut.s4_transpose_busy, dut.s3_concat_busy, dut.s2_pad_busy, dut.s1_slice_busy, dut.s0_slice_busy, dut.fork_x_busy};
    wire [NS-1:0] stall = {dut.s7_topk_stall, dut.s6_argmax_stall, dut.s5_softmax_stall, dut.s4_transpose_stall, dut.s3_concat_stall, dut.s2_pad_stall, dut.s1_slice_stall, dut.s0_slice_stall, dut.fork_x_stall};
    wire [NC-1:0] full = {!dut.ch_topk0_w_tready, !dut.ch_argmax0_w_tready, !dut.ch_softmax0_w_tready, !dut.ch_transpose0_w_tready, !dut.ch_concat0_w_tready, !dut.ch_pad0_w_tready, !dut.ch_slice1_w_tready, !dut.ch_slice0_w_tready, !dut.ch_x_9_w_tready, !dut.ch_x_8_w_tready, !dut.ch_x_7_w_tready, !dut.ch_x_6_w_tready, !dut.ch_x_5_w_tready, !dut.ch_x_4_w_tready, !dut.ch_x_3_w_tready, !dut.ch_x_2_w_tready, !dut.ch_x_w_tready};
    wire [31:0] levels [0:NC-1];
    assign levels[0] = {30'd0, dut.ch_x_count};
    assign levels[1] = {30'd0, dut.ch_x_2_count};
    assign levels[2] = {30'd0, dut.ch_x_3_count};
    assign levels[3] = {28'd0, dut.ch_x_4_count};
    assign levels[4] = {29'd0, dut.ch_x_5_count};
    assign levels[5] = {28'd0, dut.ch_x_6_count};
    assign levels[6] = {27'd0, dut.ch_x_7_count};
    assign levels[7] = {29'd0, dut.ch_x_8_count};
    assign levels[8] = {28'd0, dut.ch_x_9_count};
    assign levels[9] = {30'd0, dut.ch_slice0_count};
    assign levels[10] = {30'd0, dut.ch_slice1_count};
    assign levels[11] = {30'd0, dut.ch_pad0_count};
    assign levels[12] = {30'd0, dut.ch_concat0_count};
    assign levels[13] = {30'd0, dut.ch_transpose0_count};
    assign levels[14] = {30'd0, dut.ch_softmax0_count};
    assign levels[15] = {30'd0, dut.ch_argmax0_count};
    assign levels[16] = {30'd0, dut.ch_topk0_count};
    wire progress = (|busy) || (x_TVALID && x_TREADY) || (slice0_TVALID && slice0_TREADY) || (slice1_TVALID && slice1_TREADY) || (pad0_TVALID && pad0_TREADY) || (concat0_TVALID && concat0_TREADY) || (transpose0_TVALID && transpose0_TREADY) || (softmax0_TVALID && softmax0_TREADY) || (argmax0_TVALID && argmax0_TREADY) || (topk0_TVALID && topk0_TREADY);

    // one pair of counters per stage (a generate loop: Verilator does not unroll delayed array assignments
    // in procedural for loops of large designs)
    wire [31:0] busy_count [0:NS-1];
    wire [31:0] stall_count [0:NS-1];
    genvar g;
    generate
        for (g = 0; g < NS; g = g + 1) begin : g_stage
            reg [31:0] busy_cycles;
            reg [31:0] stall_cycles;
            always @(posedge ap_clk) begin
                if (!ap_rst_n) begin
                    busy_cycles <= 32'd0;
                    stall_cycles <= 32'd0;
                end else begin
                    busy_cycles <= busy_cycles + {31'd0, busy[g]};
                    stall_cycles <= stall_cycles + {31'd0, stall[g]};
                end
            end
            assign busy_count[g] = busy_cycles;
            assign stall_count[g] = stall_cycles;
        end
    endgenerate

    reg [31:0] quiet;
    always @(posedge ap_clk) begin
        if (!ap_rst_n) begin
            quiet <= 32'd0;
        end else begin
            quiet <= progress ? 32'd0 : quiet + 32'd1;
        end
    end

    wire stage_ok = 16'd9 > sim_sel;
    wire channel_ok = 16'd17 > sim_sel;
    wire [3:0] stage_at = sim_sel[3:0];
    wire [4:0] channel_at = sim_sel[4:0];
    assign sim_busy = stage_ok ? busy_count[stage_at] : 32'd0;
    assign sim_stall = stage_ok ? stall_count[stage_at] : 32'd0;
    assign sim_stalled = stage_ok && stall[stage_at];
    assign sim_level = channel_ok ? levels[channel_at] : 32'd0;
    assign sim_full = channel_ok && full[channel_at];
    assign sim_quiet = quiet;
endmodule

`default_nettype wire
