"""Differences between the PyTensor lines we support (2.38.x and 3.0.x), in one place."""

try:
    from pytensor.graph.fg import AbstractFunctionGraph as FunctionGraphBase
except ImportError:  # PyTensor 2.38.x has no abstract base of FunctionGraph
    from pytensor.graph.fg import FunctionGraph as FunctionGraphBase

__all__ = ["FunctionGraphBase"]
