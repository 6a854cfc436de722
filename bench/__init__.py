"""Benchmarks of the LLVM mode against stock NUMBA, the C backend (CVM) and hand-written ``@njit`` code.

``cases`` lists what is measured, ``references`` holds the hand-written ``@njit`` functions, ``run``
measures and tabulates (``llvm-backend bench``), ``plots`` draws the PNG figures.
"""
