"""An oracle for `test_fuzz`'s isolated runs: the fuzzer's own, except that the process aborts on its second
graph after a last word on stderr, as LLVM does on a symbol it cannot resolve."""

import os
import sys

from llvm_backend.tools.fuzz.runner import check_spec

_checked = 0


def check(spec):
    global _checked
    _checked += 1
    if _checked == 2:
        sys.stderr.write("LLVM ERROR: planted abort\n")
        sys.stderr.flush()
        os.abort()
    return check_spec(spec)
