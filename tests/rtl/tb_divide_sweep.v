// Icarus driver for tb_divide: prints "sel num quot inexact y" (hex) for every divisor selector
// and every num below 2^SWEEP_W, so the same design can be compared between simulators.

`default_nettype none

module tb_divide_sweep #(
    parameter integer NCFG = 1,
    parameter [NCFG*96-1:0] CFG = 96'h00_00_00_03_00_01_01_00_08_00_01_08,
    parameter integer XW = 8,
    parameter integer QMAX = 16,
    parameter integer YW = 8,
    parameter integer SWEEP_W = 8
);
    reg [XW-1:0] num;
    reg [1:0] sel;
    wire [NCFG*QMAX-1:0] quot;
    wire [NCFG-1:0] inexact;
    wire [NCFG*28*YW-1:0] y;

    tb_divide #(.NCFG(NCFG), .CFG(CFG), .XW(XW), .QMAX(QMAX), .YW(YW)) dut (
        .num(num), .sel(sel), .quot(quot), .inexact(inexact), .y(y)
    );

    integer s, i;
    initial begin
        for (s = 0; s < 4; s = s + 1) begin
            for (i = 0; i < (1 << SWEEP_W); i = i + 1) begin
                sel = s[1:0];
                num = i;
                #1 $display("%h %h %h %h %h", sel, num, quot, inexact, y);
            end
        end
    end
endmodule

`default_nettype wire
