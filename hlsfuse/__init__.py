"""hlsfuse: fuse dataflow graphs into streaming FPGA pipelines (Vitis HLS C++ and Verilog)."""

import importlib

# what each public name is imported from, on first use (PEP 562): importing hlsfuse (or hlsfuse.cli, whose
# main() answers Ctrl-C in one line) costs nothing until a name is used
_FROM = {
    "HlsfuseError": ".errors",
    "GraphBuilder": ".frontend",
    "from_onnx": ".frontend.onnx",
    "FusionPlan": ".fusion",
    "fuse": ".fusion",
    "graph_from_dict": ".graph_json",
    "graph_to_dict": ".graph_json",
    "load_graph": ".graph_json",
    "save_graph": ".graph_json",
    "Constant": ".ir",
    "Graph": ".ir",
    "Input": ".ir",
    "Node": ".ir",
    "TensorType": ".ir",
    "verify": ".ir",
    "OPS": ".ops",
    "Pattern": ".ops",
    "FLOAT32": ".types",
    "FixedType": ".types",
    "parse_dtype": ".types",
}

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


def __getattr__(name: str):
    if name == "reference":
        return importlib.import_module(".reference", __name__)
    if name in _FROM:
        value = getattr(importlib.import_module(_FROM[name], __name__), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'hlsfuse' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
