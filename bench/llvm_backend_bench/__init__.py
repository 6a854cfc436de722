"""Benchmarks of the LLVM mode against stock NUMBA, the C backend (CVM) and hand-written ``@njit`` code.

``cases`` lists what is measured, ``references`` holds the hand-written ``@njit`` functions, ``run``
measures and tabulates (``llvm-backend bench``), ``plots`` draws the PNG figures. ``time_to_posterior`` times
nutpie from a built PyMC model to its posterior, phase by phase, with the phase timer of ``phases``.
"""
