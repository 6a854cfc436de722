"""Differential fuzzing of the LLVM mode: random PyTensor graphs checked against the py linker and stock NUMBA.

``generator`` draws graphs (hypothesis strategies; a graph is the source that builds it), ``oracle`` compiles
and compares one graph, ``reproducer`` writes a graph as a runnable module and ``runner`` is the loop behind
``llvm-backend fuzz``.
"""
