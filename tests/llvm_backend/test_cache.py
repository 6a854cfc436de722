import json
import os
import subprocess
import sys
import textwrap

COMPILE_AND_REPORT = textwrap.dedent(
    """
    import json
    import numpy as np, pytensor, pytensor.tensor as pt
    import llvm_backend
    x, y = pt.dvector("x"), pt.dscalar("y")
    fn = pytensor.function([x, y], [x.sum() * y, pt.concatenate([x, x]) + y], mode="LLVM")
    total, joined = fn(np.arange(4.0), 3.0)
    stats = fn.vm.jit_fn.stats
    print(json.dumps({
        "values": [total.tolist(), joined.tolist()],
        "hits": sum(stats.cache_hits.values()),
        "misses": sum(stats.cache_misses.values()),
    }))
    """
)


def _run(compiledir):
    env = os.environ | {"PYTENSOR_FLAGS": f"base_compiledir={compiledir}"}
    done = subprocess.run(
        [sys.executable, "-c", COMPILE_AND_REPORT], env=env, capture_output=True, text=True, timeout=600
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.splitlines()[-1])


def test_second_process_loads_the_llvm_function_from_the_disk_cache(tmp_path):
    first, second = _run(tmp_path), _run(tmp_path)
    assert first["values"] == second["values"] == [18.0, [3.0, 4.0, 5.0, 6.0] * 2]
    assert (first["hits"], first["misses"]) == (0, 1)
    assert (second["hits"], second["misses"]) == (1, 0)
