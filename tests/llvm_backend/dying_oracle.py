"""Oracles for `test_fuzz`'s isolated runs: the fuzzer's own, except that on its second graph the process
aborts after a last word on stderr, as LLVM does on a symbol it cannot resolve (`check`), or hangs under stock
NUMBA, as its compile of a Join of hundreds of entries does, without (`hang_under_stock`) or with
(`grow_under_stock`) growing by gigabytes, or while it judges a disagreement of LLVM's (`hang_judging_llvm`)."""

import os
import sys
import time

import numpy as np

from llvm_backend.tools.fuzz.oracle import report_stage
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


def hang_under_stock(spec):
    global _checked
    _checked += 1
    if _checked == 2:
        report_stage("NUMBA")
        time.sleep(3600)
    return check_spec(spec)


def grow_under_stock(spec):
    global _checked
    _checked += 1
    if _checked == 2:
        report_stage("NUMBA")
        held = np.ones(2**26)  # 512 MiB, written
        time.sleep(3600)
        held.sum()
    return check_spec(spec)


def hang_judging_llvm(spec):
    global _checked
    _checked += 1
    if _checked == 2:
        report_stage("NUMBA, to judge LLVM's disagreement with py")
        time.sleep(3600)
    return check_spec(spec)
