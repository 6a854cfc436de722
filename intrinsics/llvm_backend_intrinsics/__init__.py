"""Numba intrinsics built with llvmlite's IR builder.

Imports numba, llvmlite, numpy and scipy (its BLAS, as numba does) only, never PyTensor: `llvm_backend` maps
PyTensor ops onto these.
"""
