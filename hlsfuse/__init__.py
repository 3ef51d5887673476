"""hlsfuse: fuse dataflow graphs into streaming FPGA pipelines (Vitis HLS C++ and Verilog)."""

from . import reference
from .errors import HlsfuseError
from .frontend import GraphBuilder
from .ir import Constant, Graph, Input, Node, TensorType, verify
from .ops import OPS, Pattern
from .types import FLOAT32, FixedType, parse_dtype

__all__ = [
    "HlsfuseError",
    "GraphBuilder",
    "Graph",
    "Node",
    "Input",
    "Constant",
    "TensorType",
    "verify",
    "OPS",
    "Pattern",
    "FixedType",
    "FLOAT32",
    "parse_dtype",
    "reference",
]

__version__ = "0.1.0"
