"""Ways into a Graph: the Python builder (and the ONNX importer)."""

from .builder import GraphBuilder

__all__ = ["GraphBuilder"]
