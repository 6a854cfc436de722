"""One module per library whose internals the backend touches, holding the changes it makes to that library and
their `llvm_backend.changes.Seam`: the release series written against and the shape checked before each change is
made (``pytensor``). PyMC's and nutpie's live with the code that uses them, in ``llvm_backend.nutpie``. Nothing here
is applied on import: ``llvm_backend.process`` lists what the package's import applies."""
