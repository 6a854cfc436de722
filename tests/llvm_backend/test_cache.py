import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest
import scipy.linalg
import scipy.special

from llvm_backend.codegen import SCALAR_PACK_MIN

COMPILE_AND_REPORT = textwrap.dedent(
    """
    import json, sys
    import numpy as np, pytensor, pytensor.tensor as pt
    mode, n_zeros = sys.argv[1], int(sys.argv[2])
    if mode == "LLVM":
        import llvm_backend
    x, y = pt.dvector("x"), pt.dscalar("y")
    zeros = [pt.dscalar(f"z{k}") for k in range(n_zeros)]
    outputs = [pt.add(x.sum() * y, *zeros), pt.concatenate([x, x]) + y, x.max()]
    fn = pytensor.function([x, y, *zeros], outputs, mode=mode)
    total, joined, top = fn(np.arange(4.0), 3.0, *[0.0] * n_zeros)
    # what the thunk calls: the graph function (jit_fn is an entry around it, as y is taken as a scalar)
    stats = getattr(fn.vm, "graph_fn", fn.vm.jit_fn).stats
    print(json.dumps({
        "values": [total.tolist(), joined.tolist(), top.tolist()],
        "hits": sum(stats.cache_hits.values()),
        "misses": sum(stats.cache_misses.values()),
        "llvm_backend_imported": "llvm_backend" in sys.modules,
        "rewrites": dict(sys.modules["llvm_backend.rewrite_cache"].outcomes) if mode == "LLVM" else None,
        "packs": [str(p.numba_type) for p in fn.vm.graph_source.packs] if mode == "LLVM" else None,
    }))
    """
)
EXPECTED = [18.0, [3.0, 4.0, 5.0, 6.0] * 2, 3.0]


def _run(compiledir, mode, n_zeros=0):
    """``COMPILE_AND_REPORT`` in a fresh process; ``n_zeros`` more scalar inputs (of value 0) added to the sum."""
    env = os.environ | {"PYTENSOR_FLAGS": f"base_compiledir={compiledir}"}
    done = subprocess.run(
        [sys.executable, "-c", COMPILE_AND_REPORT, mode, str(n_zeros)],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.splitlines()[-1])


@pytest.mark.slow
@pytest.mark.parametrize("n_zeros", [0, SCALAR_PACK_MIN], ids=["scalar argument", "scalar pack"])
def test_second_process_loads_the_llvm_function_from_the_disk_cache(tmp_path, n_zeros):
    first, second = _run(tmp_path, "LLVM", n_zeros), _run(tmp_path, "LLVM", n_zeros)
    assert first["values"] == second["values"] == EXPECTED
    assert first["packs"] == ([f"ScalarPack(float64, {SCALAR_PACK_MIN + 1})"] if n_zeros else [])
    assert (first["hits"], first["misses"]) == (0, 1)
    assert (second["hits"], second["misses"]) == (1, 0)
    # the second process does not rewrite the graph either: the rewritten graph comes from the rewrite cache
    assert (first["rewrites"], second["rewrites"]) == ({"stored": 1}, {"hit": 1})


@pytest.mark.slow
def test_stock_numba_never_loads_our_entries(tmp_path):
    # The same graph under LLVM, then NUMBA in a process that never imports llvm_backend: the shared
    # cache must not hand stock code of ours (it could not even import it).
    _run(tmp_path, "LLVM")
    stock = _run(tmp_path, "NUMBA")
    assert stock["values"] == EXPECTED
    assert not stock["llvm_backend_imported"]


@pytest.mark.slow
def test_concurrent_processes_share_one_cache(tmp_path):
    env = os.environ | {"PYTENSOR_FLAGS": f"base_compiledir={tmp_path}"}
    command = [sys.executable, "-c", COMPILE_AND_REPORT, "LLVM", "0"]
    racing = [
        subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for _ in range(2)
    ]
    for process in racing:
        stdout, stderr = process.communicate(timeout=600)
        assert process.returncode == 0, stderr
        assert json.loads(stdout.splitlines()[-1])["values"] == EXPECTED
    third = _run(tmp_path, "LLVM")
    assert third["values"] == EXPECTED
    assert (third["hits"], third["misses"]) == (1, 0)


TWO_LOOPS_CALLING_LOG1P = textwrap.dedent(
    """
    import json
    import numpy as np, pytensor, pytensor.tensor as pt
    import llvm_backend
    x, s = pt.dvector("x"), pt.dscalar("s")
    first = pytensor.function([x, s], pt.log1p(x) / s + pt.sqrt(x) / (s + x), mode="LLVM")
    second = pytensor.function([x, s], (pt.log1p(x) * s - x / (s + x)).sum(), mode="LLVM")
    values = np.linspace(0.0, 2.0, 101)
    results = [first(values, 1.5).tolist(), float(second(values, 1.5))]
    hits = sum(sum(f.vm.graph_fn.stats.cache_hits.values()) for f in (first, second))
    print(json.dumps({"values": results, "hits": hits}))
    """
)


@pytest.mark.slow
def test_two_cached_functions_defining_one_vector_variant_load_into_one_process(tmp_path):
    """Each function's library defines the ``weak_odr`` vector variant of ``log1p``
    (``llvm_backend_intrinsics.vector_math``); a second process loads both from the cache and runs both."""
    env = os.environ | {"PYTENSOR_FLAGS": f"base_compiledir={tmp_path}"}
    runs = [
        subprocess.run(
            [sys.executable, "-c", TWO_LOOPS_CALLING_LOG1P], env=env, capture_output=True, text=True, timeout=600
        )
        for _ in range(2)
    ]
    assert all(run.returncode == 0 for run in runs), [run.stderr for run in runs]
    first, second = (json.loads(run.stdout.splitlines()[-1]) for run in runs)
    values = np.linspace(0.0, 2.0, 101)
    np.testing.assert_allclose(second["values"][0], np.log1p(values) / 1.5 + np.sqrt(values) / (1.5 + values))
    np.testing.assert_allclose(second["values"][1], (np.log1p(values) * 1.5 - values / (1.5 + values)).sum())
    assert second["values"] == first["values"]
    assert (first["hits"], second["hits"]) == (0, 2)


EVERY_NEW_NODE = textwrap.dedent(
    """
    import json
    import numpy as np, pytensor, pytensor.tensor as pt
    import llvm_backend
    m, n, sizes = pt.dmatrix("m"), pt.lscalar("n"), pt.lvector("sizes")
    checked = pt.specify_shape(m, (n, None))
    first, second = pt.split(checked, sizes, n_splits=2, axis=1)
    outputs = [
        checked.sum(axis=1),
        first.max(axis=0),
        pt.alloc(second.sum(axis=0), m.shape[0], 2) * 2,
        (first @ second.T).reshape((-1,)),
        pt.join(0, checked[sizes, sizes], checked[0]),
        pt.psi(checked + 1.0).sum(axis=0),
        pt.linalg.solve_triangular(pt.eye(3) + pt.tril(checked[:, :3]), checked[:, 3], lower=True),
        pt.diagonal(checked, offset=1),
    ]
    fn = pytensor.function([m, n, sizes], outputs, mode="LLVM")
    values = fn(np.arange(12.0).reshape(3, 4), 3, np.array([2, 2]))
    stats = fn.vm.graph_fn.stats
    print(json.dumps({"values": [v.tolist() for v in values], "hits": sum(stats.cache_hits.values())}))
    """
)


@pytest.mark.slow
def test_a_graph_of_every_intrinsic_node_loads_from_the_disk_cache(tmp_path):
    """Each of these nodes' keys (shapes, splits, fills, products, reshapes, indexed reads, joins, axis reductions,
    solves and diagonals) is the same in every process (a key of a pickled scalar op's props was not), and the
    product's and the triangular solve's BLAS symbols and ``psi``'s ``cython_special`` routine resolve in the
    process that loads the graph function."""
    env = os.environ | {"PYTENSOR_FLAGS": f"base_compiledir={tmp_path}"}
    runs = []
    for _ in range(2):
        done = subprocess.run([sys.executable, "-c", EVERY_NEW_NODE], env=env, capture_output=True, text=True)
        assert done.returncode == 0, done.stderr
        runs.append(json.loads(done.stdout.splitlines()[-1]))
    matrix = np.arange(12.0).reshape(3, 4)
    expected = [
        matrix.sum(1),
        matrix[:, :2].max(0),
        np.broadcast_to(matrix[:, 2:].sum(0), (3, 2)) * 2,
        (matrix[:, :2] @ matrix[:, 2:].T).ravel(),
        np.concatenate([matrix[[2, 2], [2, 2]], matrix[0]]),
        scipy.special.psi(matrix + 1.0).sum(axis=0),
        scipy.linalg.solve_triangular(np.eye(3) + np.tril(matrix[:, :3]), matrix[:, 3], lower=True),
        np.diagonal(matrix, offset=1),
    ]
    for run in runs:
        for got, want in zip(run["values"], expected, strict=True):
            np.testing.assert_allclose(got, want, rtol=1e-12)
    assert (runs[0]["hits"], runs[1]["hits"]) == (0, 1)
