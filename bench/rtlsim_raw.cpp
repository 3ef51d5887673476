// Verilator's own speed on a one-input one-output <top>_sim model: the baseline of bench/rtlsim_speed.py.
//
// The same two evals per cycle as the native rtlsim harness (inputs with the falling edge, then the rising
// edge), with the input always valid and the output always ready, but no bookkeeping: no input or output
// buffers, no handshake sampling beyond a checksum that keeps the output live. Built by the benchmark with
//     -CFLAGS "-DMODEL=V<top>_sim -DIN_TDATA=<in>_TDATA -DIN_TVALID=<in>_TVALID -DOUT_TDATA=<out>_TDATA
//              -DOUT_TREADY=<out>_TREADY"
// and run as `rtlsim_raw CYCLES` in the design's folder; prints the seconds of the cycle loop and the checksum.
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>

#define HLSF_STR(x) #x
#define HLSF_XSTR(x) HLSF_STR(x)
#include HLSF_XSTR(MODEL.h)
#include "verilated.h"

int main(int argc, char** argv) {
    if (argc != 2) {
        std::fprintf(stderr, "usage: rtlsim_raw CYCLES\n");
        return 2;
    }
    const int64_t cycles = std::strtoll(argv[1], nullptr, 10);
    const std::unique_ptr<VerilatedContext> context{new VerilatedContext};
    const std::unique_ptr<MODEL> top{new MODEL{context.get()}};
    top->ap_clk = 0;
    top->ap_rst_n = 0;
    top->OUT_TREADY = 1;
    top->eval();
    for (int k = 0; k < 2; ++k) {
        top->ap_clk = 1;
        top->eval();
        top->ap_clk = 0;
        top->eval();
    }
    top->ap_rst_n = 1;
    top->IN_TVALID = 1;
    uint64_t checksum = 0;
    const auto start = std::chrono::steady_clock::now();
    for (int64_t cycle = 0; cycle < cycles; ++cycle) {
        top->ap_clk = 0;
        top->IN_TDATA = static_cast<uint16_t>(cycle * 40503);
        top->eval();
        checksum += top->OUT_TDATA;
        top->ap_clk = 1;
        top->eval();
    }
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    top->final();
    std::printf("%.9f %llu\n", seconds, static_cast<unsigned long long>(checksum));
    return 0;
}
