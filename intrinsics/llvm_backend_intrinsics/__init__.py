"""Numba intrinsics built with llvmlite's IR builder.

Imports numba, llvmlite and numpy only, never PyTensor: `llvm_backend` maps PyTensor ops onto these.
"""
