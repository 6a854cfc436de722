"""Oracles for `test_fuzz`'s isolated runs: the fuzzer's own, except that on its second graph the process
aborts after a last word on stderr, as LLVM does on a symbol it cannot resolve (`check`), or hangs under stock
NUMBA, as its compile of a Join of hundreds of entries does, without (`hang_under_stock`) or with
(`grow_under_stock`) growing by gigabytes, or while it judges a disagreement of LLVM's (`hang_judging_llvm`)."""

import os
import sys
import time

import numpy as np

from llvm_backend_devtools.fuzz.oracle import JUDGING, report_stage
from llvm_backend_devtools.fuzz.runner import check_spec

_checked = 0


def _on_second_graph(planted):
    """The fuzzer's oracle, which calls ``planted()`` instead of checking the second graph of the process."""

    def oracle(spec):
        global _checked
        _checked += 1
        if _checked == 2:
            planted()
        return check_spec(spec)

    return oracle


def _abort():
    sys.stderr.write("LLVM ERROR: planted abort\n")
    sys.stderr.flush()
    os.abort()


def _hang(stage: str, grow: bool = False):
    def planted():
        report_stage(stage)
        held = np.ones(2**26) if grow else None  # 512 MiB, written
        time.sleep(3600)
        del held

    return planted


check = _on_second_graph(_abort)
hang_under_stock = _on_second_graph(_hang("NUMBA"))
grow_under_stock = _on_second_graph(_hang("NUMBA", grow=True))
hang_judging_llvm = _on_second_graph(_hang(JUDGING))
