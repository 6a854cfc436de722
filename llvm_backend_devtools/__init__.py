"""The developer tools of the LLVM mode, kept out of the runtime package: the fuzzer (``fuzz``, the ``llvm-backend
fuzz`` subcommand) and the runner of PyTensor's own numba tests against the LLVM mode (``conformance``)."""
