"""Deterministic, sanitized identifiers for generated C++ and Verilog.

User tensor names may hold any character; generated code only ever sees names
made here: ``[A-Za-z_][A-Za-z0-9_]*``, not a C++ or Verilog keyword, unique
within one design. The same graph always gets the same names.
"""

from __future__ import annotations

import re

__all__ = ["sanitize", "Namer"]

_KEYWORDS = frozenset(
    """
    alignas alignof and asm auto bool break case catch char class const constexpr continue default delete do
    double else enum explicit export extern false float for friend goto if inline int long mutable namespace new
    noexcept not nullptr operator or private protected public register return short signed sizeof static struct
    switch template this throw true try typedef typename union unsigned using virtual void volatile while xor
    always assign begin end endmodule function genvar initial inout input integer localparam module negedge
    output parameter posedge reg wire logic generate endgenerate main ap_clk ap_rst_n hls std
    """.split()
)


def sanitize(name: str, limit: int = 40) -> str:
    """A readable identifier from any string (not yet unique)."""
    text = re.sub(r"[^A-Za-z0-9_]", "_", str(name)).strip("_")
    text = re.sub(r"_+", "_", text)[:limit].rstrip("_") or "t"
    if text[0].isdigit():
        text = f"t{text}"
    if text in _KEYWORDS or text.lower().startswith("ap_"):
        text = f"{text}_"
    return text


class Namer:
    """Hands out unique identifiers in call order (deterministic for a deterministic caller)."""

    def __init__(self) -> None:
        self._taken: set[str] = set()

    def __call__(self, name: str) -> str:
        base = sanitize(name)
        candidate, n = base, 1
        while candidate.lower() in self._taken:
            n += 1
            candidate = f"{base}_{n}"
        self._taken.add(candidate.lower())
        return candidate
