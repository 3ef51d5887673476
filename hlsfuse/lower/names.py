"""Deterministic, sanitized identifiers for generated C++ and Verilog, and the one table of both languages' keywords.

User tensor names may hold any character; generated code only ever sees names
made here: ``[A-Za-z_][A-Za-z0-9_]*``, not a C++ or Verilog keyword, unique
within one design. The same graph always gets the same names.

A design's names serve both backends (the top is a C++ function and a Verilog module, a port a
function parameter and the stem of a module's signals), so a name that is a keyword of either
language gets a trailing ``_`` (a graph input ``and_eq`` becomes port ``and_eq_``, a graph called
``module`` the top ``module_``). The backends keep no keyword list of their own: the C++ backend
checks the plan's names against ``CXX_KEYWORDS``, the Verilog backend names its signals with ``sanitize``.
"""

from __future__ import annotations

import re

__all__ = ["CXX_KEYWORDS", "VERILOG_KEYWORDS", "KEYWORDS", "GLOBAL_NAMES", "sanitize", "Namer"]

# C++17's keywords with the alternative tokens (and_eq, bitand, ...), and C++20's, which a later -std would reserve
CXX_KEYWORDS = frozenset(
    """
    alignas alignof and and_eq asm auto bitand bitor bool break case catch char char16_t char32_t class compl
    const constexpr const_cast continue decltype default delete do double dynamic_cast else enum explicit export
    extern false float for friend goto if inline int long mutable namespace new noexcept not not_eq nullptr
    operator or or_eq private protected public register reinterpret_cast return short signed sizeof static
    static_assert static_cast struct switch template this thread_local throw true try typedef typeid typename
    union unsigned using virtual void volatile wchar_t while xor xor_eq
    char8_t concept consteval constinit co_await co_return co_yield requires
    """.split()
)
# SystemVerilog's keywords (IEEE 1800-2017, annex B), which Verilator reserves in .v files too
VERILOG_KEYWORDS = frozenset(
    """
    accept_on alias always always_comb always_ff always_latch and assert assign assume automatic before begin bind
    bins binsof bit break buf bufif0 bufif1 byte case casex casez cell chandle checker class clocking cmos config
    const constraint context continue cover covergroup coverpoint cross deassign default defparam design disable
    dist do edge else end endcase endchecker endclass endclocking endconfig endfunction endgenerate endgroup
    endinterface endmodule endpackage endprimitive endprogram endproperty endspecify endsequence endtable endtask
    enum event eventually expect export extends extern final first_match for force foreach forever fork forkjoin
    function generate genvar global highz0 highz1 if iff ifnone ignore_bins illegal_bins implements implies import
    incdir include initial inout input inside instance int integer interconnect interface intersect join join_any
    join_none large let liblist library local localparam logic longint macromodule matches medium modport module
    nand negedge nettype new nexttime nmos nor noshowcancelled not notif0 notif1 null or output package packed
    parameter pmos posedge primitive priority program property protected pull0 pull1 pulldown pullup
    pulsestyle_ondetect pulsestyle_onevent pure rand randc randcase randsequence rcmos real realtime ref reg
    reject_on release repeat restrict return rnmos rpmos rtran rtranif0 rtranif1 s_always s_eventually s_nexttime
    s_until s_until_with scalared sequence shortint shortreal showcancelled signed small soft solve specify
    specparam static string strong strong0 strong1 struct super supply0 supply1 sync_accept_on sync_reject_on table
    tagged task this throughout time timeprecision timeunit tran tranif0 tranif1 tri tri0 tri1 triand trior trireg
    type typedef union unique unique0 unsigned until until_with untyped use uwire var vectored virtual void wait
    wait_order wand weak weak0 weak1 while wildcard wire with within wor xnor xor
    """.split()
)
KEYWORDS = CXX_KEYWORDS | VERILOG_KEYWORDS
GLOBAL_NAMES = frozenset(
    """main std hls hlsf ap_fixed ap_ufixed ap_int ap_uint ap_axis ap_axiu ap_fixed_base ap_int_base ap_detail
    ap_q_mode ap_o_mode size_t int8_t int16_t int32_t int64_t uint8_t uint16_t uint32_t uint64_t INLINE
    hlsfuse_tb""".split()
)
"""Names the generated C++ or the headers it includes define at global scope (besides AMD's other ap_ ones): the
testbench's main, the namespaces std, hls and hlsf, the C integer types, the kernel library's INLINE."""


def sanitize(name: str, limit: int = 40) -> str:
    """A readable identifier from any string (not yet unique)."""
    text = re.sub(r"[^A-Za-z0-9_]", "_", str(name)).strip("_")
    text = re.sub(r"_+", "_", text)[:limit].rstrip("_") or "t"
    if text[0].isdigit():
        text = f"t{text}"
    if text in KEYWORDS or text in GLOBAL_NAMES or text.lower().startswith("ap_"):
        text = f"{text}_"
    return text


class Namer:
    """Hands out unique identifiers in call order (deterministic for a deterministic caller)."""

    def __init__(self) -> None:
        self._taken: set[str] = set()

    def __call__(self, name: str) -> str:
        base = sanitize(name)
        stem = base.rstrip("_")  # 'int_' again is 'int_2': a double underscore is reserved in C++ and Verilator
        candidate, n = base, 1
        while candidate.lower() in self._taken:
            n += 1
            candidate = f"{stem}_{n}"
        self._taken.add(candidate.lower())
        return candidate
