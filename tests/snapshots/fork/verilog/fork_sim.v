// fork_sim: fork_ with the counters hlsfuse rtlsim reads (busy/stall cycles per stage, channel
// levels, cycles since the design last made progress). Simulation only; the design is fork_.v.
//
// sim_sel selects a stage (for sim_busy, sim_stall, sim_stalled) and a channel (for sim_level,
// sim_full), numbered in the order of manifest.json.

`default_nettype none

module fork_sim (
    input  wire ap_clk,
    input  wire ap_rst_n,
    input  wire [15:0] x_TDATA,
    input  wire x_TVALID,
    output wire x_TREADY,
    input  wire x_TLAST,
    output wire [15:0] relu0_TDATA,
    output wire relu0_TVALID,
    input  wire relu0_TREADY,
    output wire relu0_TLAST,
    output wire [15:0] neg0_TDATA,
    output wire neg0_TVALID,
    input  wire neg0_TREADY,
    output wire neg0_TLAST,
    input  wire [15:0] sim_sel,
    output wire [31:0] sim_busy,
    output wire [31:0] sim_stall,
    output wire sim_stalled,
    output wire [31:0] sim_level,
    output wire sim_full,
    output wire [31:0] sim_quiet
);
    fork_ dut (
        .ap_clk(ap_clk), .ap_rst_n(ap_rst_n),
        .x_TDATA(x_TDATA), .x_TVALID(x_TVALID), .x_TREADY(x_TREADY), .x_TLAST(x_TLAST),
        .relu0_TDATA(relu0_TDATA), .relu0_TVALID(relu0_TVALID), .relu0_TREADY(relu0_TREADY), .relu0_TLAST(relu0_TLAST),
        .neg0_TDATA(neg0_TDATA), .neg0_TVALID(neg0_TVALID), .neg0_TREADY(neg0_TREADY), .neg0_TLAST(neg0_TLAST)
    );

    localparam integer NS = 3;
    localparam integer NC = 5;
    wire [NS-1:0] busy = {dut.s1_neg_busy, dut.s0_relu_busy, dut.fork_x_busy};
    wire [NS-1:0] stall = {dut.s1_neg_stall, dut.s0_relu_stall, dut.fork_x_stall};
    wire [NC-1:0] full = {!dut.ch_neg0_w_tready, !dut.ch_relu0_w_tready, !dut.ch_x_3_w_tready, !dut.ch_x_2_w_tready, !dut.ch_x_w_tready};
    wire [31:0] levels [0:NC-1];
    assign levels[0] = {30'd0, dut.ch_x_count};
    assign levels[1] = {30'd0, dut.ch_x_2_count};
    assign levels[2] = {30'd0, dut.ch_x_3_count};
    assign levels[3] = {30'd0, dut.ch_relu0_count};
    assign levels[4] = {30'd0, dut.ch_neg0_count};
    wire progress = (|busy) || (x_TVALID && x_TREADY) || (relu0_TVALID && relu0_TREADY) || (neg0_TVALID && neg0_TREADY);

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

    wire stage_ok = 16'd3 > sim_sel;
    wire channel_ok = 16'd5 > sim_sel;
    wire [1:0] stage_at = sim_sel[1:0];
    wire [2:0] channel_at = sim_sel[2:0];
    assign sim_busy = stage_ok ? busy_count[stage_at] : 32'd0;
    assign sim_stall = stage_ok ? stall_count[stage_at] : 32'd0;
    assign sim_stalled = stage_ok && stall[stage_at];
    assign sim_level = channel_ok ? levels[channel_at] : 32'd0;
    assign sim_full = channel_ok && full[channel_at];
    assign sim_quiet = quiet;
endmodule

`default_nettype wire
