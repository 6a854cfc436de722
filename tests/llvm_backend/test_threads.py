"""One compiled `Function` called from several Python threads: each call computes on its own arguments.

PyTensor's ``Function`` passes a call's arguments to the linker's thunk through storage cells shared by all of
its calls; without the LLVM mode's per-function lock (`llvm_backend.function.LLVMFunction`) a call could read
another thread's arguments, or cells another call had emptied."""

import sys
import threading

import numpy as np
import pytensor
import pytensor.tensor as pt
import pytest
from pytensor.compile.executor import Function
from pytensor.compile.mode import Mode

import llvm_backend
from llvm_backend.function import LLVMFunction
from llvm_backend.tools.testing import PY_MODE

THREADS = 4
CALLS = 1000


def _scalars():
    xs = [pt.dscalar(f"x{k}") for k in range(60)]
    return xs, sum((x - k) ** 2 for k, x in enumerate(xs)), lambda rng: [np.array(v) for v in rng.normal(size=60)]


def _vectors():
    vs = [pt.dvector(f"v{k}") for k in range(40)]
    return vs, (pt.concatenate(vs) ** 2).sum() + vs[1][0] * vs[2][1], lambda rng: list(rng.normal(size=(40, 2)))


def _plain():
    x, y = pt.dvector("x"), pt.dscalar("y")
    return [x, y], pt.exp(x / 10).sum() * y, lambda rng: [rng.normal(size=5), np.array(rng.normal())]


GRAPHS = {"scalar pack": _scalars, "array pack": _vectors, "plain": _plain}


@pytest.fixture
def frequent_thread_switches():
    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    yield
    sys.setswitchinterval(interval)


@pytest.mark.slow
@pytest.mark.parametrize("name", list(GRAPHS))
def test_threads_calling_one_function_get_their_own_results(name, frequent_thread_switches):
    inputs, output, draw = GRAPHS[name]()
    fn = pytensor.function(inputs, output, mode="LLVM")
    assert isinstance(fn, LLVMFunction)
    if name != "plain":
        assert fn.vm.graph_source.packs
    reference = pytensor.function(inputs, output, mode=PY_MODE)
    arguments = [[draw(np.random.default_rng([t, k])) for k in range(CALLS)] for t in range(THREADS)]
    want = [[float(reference(*args)) for args in thread] for thread in arguments]
    got = [[] for _ in range(THREADS)]
    errors = []
    start = threading.Barrier(THREADS)

    def work(t):
        start.wait()
        for args in arguments[t]:
            try:
                got[t].append(float(fn(*args)))
            except Exception as error:  # every error is a failure of the test, reported below
                errors.append(repr(error))

    threads = [threading.Thread(target=work, args=(t,)) for t in range(THREADS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    wrong = sum(not np.isclose(g, w, rtol=1e-12) for t in range(THREADS) for g, w in zip(got[t], want[t], strict=True))
    assert wrong == 0


def test_every_mode_on_our_linker_makes_llvm_functions():
    x = pt.dvector("x")
    modes = [
        "LLVM",
        llvm_backend.LLVM.including("random_make_inplace"),
        llvm_backend.LLVM.excluding("fusion"),
        Mode(linker="llvm"),
        Mode(linker=llvm_backend.LLVM.linker, optimizer=llvm_backend.LLVM.provided_optimizer),  # as PyMC rebuilds it
    ]
    for mode in modes:
        fn = pytensor.function([x], x * 2, mode=mode)
        assert isinstance(fn, LLVMFunction)
        assert isinstance(fn.copy(), LLVMFunction)
        assert fn(np.ones(2)).tolist() == [2.0, 2.0]
    for mode in ("NUMBA", "FAST_COMPILE", PY_MODE):
        assert type(pytensor.function([x], x * 2, mode=mode)) is Function
