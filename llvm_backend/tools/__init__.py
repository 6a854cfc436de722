"""The tools around the backend, which the backend never imports: ``cli`` (the ``llvm-backend`` command),
``measure`` (allocations, IR and call times of one compiled function), ``measurements`` (those measurements
run over graphs and modes, the ``report`` command), ``inspect_ir`` (IR stage by stage), ``coldcompile``
(compile times in fresh processes), ``graphs`` (the graphs the tools measure), ``testing`` (comparison of
the LLVM mode with stock NUMBA and the py linker) and ``conformance`` (PyTensor's numba suite under LLVM)."""
