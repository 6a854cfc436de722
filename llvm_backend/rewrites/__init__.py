"""Our graph rewrites, requested by the LLVM linker's tag in PyTensor's ``optdb``: ``hoist`` (loop-invariant
scalar work out of Elemwise loops) and ``supervisor`` (the indexed check of what in-place rewrites may destroy)."""
