"""How the generated project is built for C simulation: one set of g++ flags for the Makefile and csim.

With hlsfuse's work-alike headers the generated code compiles under ``-Wall -Wextra -Werror``.
``-Wno-unknown-pragmas``: g++ warns about every ``#pragma HLS`` under ``-Wall`` (the pragmas are
for Vitis HLS), and ``#pragma GCC diagnostic`` cannot silence that warning before GCC 13.

AMD's headers (``HLS_INCLUDE``/``XILINX_HLS``) are not warning-free: g++ reports uninitialized
reads inside their ap_private at the generated lines they are inlined into, so they build with
``-w``, as hls4ml builds them. They come in as system headers, followed by the work-alike folder
(``-idirafter``) to supply ``ap_axi_sdata.h`` where a copy of AMD's headers lacks it. ``NDEBUG``:
an assertion inside AMD's ap_fixed assignment reads a bit beyond the source's MSB when every
source bit lies below the target's LSB (tests/test_hls_headers.py).

AMD's default constructors leave a value undefined (its storage holds whatever the stack held), so a
value read before it is written would give numbers that change from build to build, or pass by
chance where the stack held zeros. ``POISON_FLAG`` (g++ 12 and newer, clang) fills such storage with
a fixed non-zero pattern instead, so that a design relying on it fails every C simulation with AMD's
headers, as it fails with the work-alikes, which poison a default-constructed value themselves
(``ap_detail::poison``). csim and the Makefile add it where the compiler accepts it.
"""

from __future__ import annotations

__all__ = ["CXX_STANDARD", "WORKALIKE_FLAGS", "AMD_FLAGS", "POISON_FLAG", "INCLUDE_DIR", "cxxflags"]

INCLUDE_DIR = "include"
"""Folder of the project holding copies of hlsfuse's work-alike headers."""

CXX_STANDARD = "-std=c++14"
"""The C++ the generated code and the kernel library are written in (also in hls_config.cfg and run_hls.tcl)."""

WORKALIKE_FLAGS = (CXX_STANDARD, "-O2", "-Wall", "-Wextra", "-Werror", "-Wno-unknown-pragmas", "-I" + INCLUDE_DIR)
AMD_FLAGS = (CXX_STANDARD, "-O2", "-w", "-DNDEBUG")
POISON_FLAG = "-ftrivial-auto-var-init=pattern"


def cxxflags(hls_include: str | None = None, poison: bool = False) -> tuple[str, ...]:
    """g++ options (paths relative to the project folder): the work-alikes, or AMD's headers in ``hls_include``
    (with ``POISON_FLAG`` when ``poison``: the compiler accepts it)."""
    if not hls_include:
        return WORKALIKE_FLAGS
    return (*AMD_FLAGS, *((POISON_FLAG,) if poison else ()), "-isystem", hls_include, "-idirafter", INCLUDE_DIR)
