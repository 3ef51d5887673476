"""hlsfuse: fuse dataflow graphs into streaming FPGA pipelines (Vitis HLS C++ and Verilog)."""

from . import reference
from .errors import HlsfuseError
from .frontend import GraphBuilder
from .frontend.onnx import from_onnx
from .fusion import FusionPlan, fuse
from .graph_json import graph_from_dict, graph_to_dict, load_graph, save_graph
from .ir import Constant, Graph, Input, Node, TensorType, verify
from .ops import OPS, Pattern
from .types import FLOAT32, FixedType, parse_dtype

__all__ = [
    "HlsfuseError",
    "GraphBuilder",
    "from_onnx",
    "Graph",
    "Node",
    "Input",
    "Constant",
    "TensorType",
    "verify",
    "fuse",
    "FusionPlan",
    "load_graph",
    "save_graph",
    "graph_from_dict",
    "graph_to_dict",
    "OPS",
    "Pattern",
    "FixedType",
    "FLOAT32",
    "parse_dtype",
    "reference",
]

__version__ = "0.1.0"
