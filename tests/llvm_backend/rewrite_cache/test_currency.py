"""The rewrite cache never serves a stale graph: user code is keyed by what it runs, every flag but known
inert ones is keyed, entries carry their key, and a cache that cannot be written is read and never fails."""

import logging
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytensor
import pytensor.tensor as pt
import pytest
from pytensor.compile.ops import wrap_py
from pytensor.configparser import StrParam
from pytensor.graph.basic import Apply, equal_computations
from pytensor.graph.op import Op

from llvm_backend import rewrite_cache
from llvm_backend.rewrite_cache import Uncacheable, store
from tests.llvm_backend.rewrite_cache.test_rewrite_cache import _key, _outcomes_of

SCRIPT_WITH_AN_AS_OP = """
import numpy as np, pytensor, pytensor.tensor as pt
from pytensor.compile.ops import as_op
import llvm_backend

@as_op(itypes=[pt.dvector], otypes=[pt.dvector])
def scaled(x):
    return FACTOR * x

FACTOR = {factor}
fn = pytensor.function([], scaled(pt.constant(np.arange(3.0))), mode="LLVM")
print(fn().tolist(), dict(llvm_backend.rewrite_cache.outcomes))
"""

SCRIPT_WITH_AN_OP = """
import numpy as np, pytensor, pytensor.tensor as pt
from pytensor.graph.basic import Apply, equal_computations
from pytensor.graph.op import Op
import llvm_backend

OFFSET = {offset}

class Shift(Op):
    __props__ = ()

    def make_node(self, x):
        return Apply(self, [x], [x.type()])

    def perform(self, node, inputs, outputs):
        outputs[0][0] = inputs[0] + OFFSET

fn = pytensor.function([], Shift()(pt.constant(np.arange(3.0))), mode="LLVM")
print(fn().tolist(), dict(llvm_backend.rewrite_cache.outcomes))
"""


def _run_script(tmp_path, text: str) -> str:
    """Run ``text`` as a script file in a fresh process whose PyTensor compiledir is ``tmp_path``'s."""
    script = tmp_path / "model.py"
    script.write_text(textwrap.dedent(text))
    env = os.environ | {"PYTENSOR_FLAGS": f"base_compiledir={tmp_path / 'compiledir'}"}
    env.pop("LLVM_BACKEND_REWRITE_CACHE", None)
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=env, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    return done.stdout.splitlines()[-1]


@pytest.mark.slow
@pytest.mark.parametrize(
    ("script", "before", "after", "values"),
    [
        (SCRIPT_WITH_AN_AS_OP, {"factor": 2}, {"factor": 3}, ([0.0, 2.0, 4.0], [0.0, 3.0, 6.0])),
        (SCRIPT_WITH_AN_OP, {"offset": 1}, {"offset": 5}, ([1.0, 2.0, 3.0], [5.0, 6.0, 7.0])),
    ],
    ids=["as_op reading an edited global", "Op class reading an edited global"],
)
def test_a_user_op_edited_between_two_processes_is_not_served_its_old_graph(tmp_path, script, before, after, values):
    first = _run_script(tmp_path, script.format(**before))
    again = _run_script(tmp_path, script.format(**before))
    edited = _run_script(tmp_path, script.format(**after))
    assert first.startswith(f"{values[0]} {{'stored'")
    assert again.startswith(f"{values[0]} {{'hit'")
    assert edited.startswith(f"{values[1]} {{'stored'")


_FACTOR = 2.0


@wrap_py(itypes=[pt.dvector], otypes=[pt.dvector])
def _scaled(x):
    return _FACTOR * x


def test_a_wrapped_python_function_whose_global_changes_in_one_process_keys_anew(cache, monkeypatch):
    x = pt.dvector("x")
    before = _key([x], [_scaled(x)])
    assert _key([x], [_scaled(x)]) == before
    fn = pytensor.function([], _scaled(pt.constant(np.arange(3.0))), mode="LLVM")
    monkeypatch.setattr(sys.modules[__name__], "_FACTOR", 3.0)
    assert _key([x], [_scaled(x)]) != before
    edited, outcome = _outcomes_of(lambda: pytensor.function([], _scaled(pt.constant(np.arange(3.0))), mode="LLVM"))
    assert outcome == {"stored": 1}
    np.testing.assert_array_equal(fn(), [0.0, 2.0, 4.0])
    np.testing.assert_array_equal(edited(), [0.0, 3.0, 6.0])


class _ReadsALock(Op):
    """An op whose perform reads a global that cannot be pickled: nothing identifies it."""

    __props__ = ()

    def make_node(self, x):
        return Apply(self, [x], [x.type()])

    def perform(self, node, inputs, outputs):
        with _LOCK:
            outputs[0][0] = inputs[0] + 1


_LOCK = __import__("threading").Lock()


def test_user_code_reading_what_cannot_be_identified_is_not_cached(cache):
    x = pt.dvector("x")
    with pytest.raises(Uncacheable):
        _key([x], [_ReadsALock()(x)])
    fn, outcome = _outcomes_of(lambda: pytensor.function([x], _ReadsALock()(x) * 2, mode="LLVM"))
    assert outcome == {"uncacheable": 1}
    np.testing.assert_array_equal(fn(np.zeros(2)), [2.0, 2.0])


def test_a_flag_pytensor_does_not_know_of_today_is_keyed(cache):
    name = "llvm_backend_test__rewrite_setting"
    if name not in pytensor.config._config_var_dict:
        pytensor.config.add(name, "a flag a rewrite may read", StrParam("one"), in_c_key=False)
    x = pt.dvector("x")
    before = _key([x], [pt.exp(x)])
    with pytensor.config.change_flags(**{name: "two"}):
        assert _key([x], [pt.exp(x)]) != before
    assert _key([x], [pt.exp(x)]) == before


def test_flags_known_not_to_change_a_rewritten_graph_are_not_keyed(cache):
    x = pt.dvector("x")
    before = _key([x], [pt.exp(x)])
    with pytensor.config.change_flags(traceback__limit=3, exception_verbosity="high", profile=True):
        assert _key([x], [pt.exp(x)]) == before


def test_an_entry_copied_over_another_key_s_is_not_served(cache, caplog):
    x = pt.dvector("x")
    pytensor.function([x], pt.exp(x) * 1 + 1, mode="LLVM")
    (kept,) = cache.entries()
    pytensor.function([x], pt.exp(x) * 3, mode="LLVM")
    (other,) = set(cache.entries()) - {kept}
    kept.write_bytes(other.read_bytes())
    with caplog.at_level(logging.WARNING, logger="llvm_backend.rewrite_cache"):
        fn, outcome = _outcomes_of(lambda: pytensor.function([x], pt.exp(x) * 1 + 1, mode="LLVM"))
    assert "stored under key" in caplog.text
    assert outcome == {"stored": 1}
    np.testing.assert_allclose(fn(np.array([np.log(2.0)])), [3.0])


def _unwritable(monkeypatch):
    """The cache's files cannot be written, touched or removed (as a cache filled by another user: tests run as
    root, whom file modes do not stop)."""

    def refuse(*args, **kwargs):
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(store.os, "utime", refuse)
    monkeypatch.setattr(store.tempfile, "mkstemp", refuse)
    monkeypatch.setattr(store.Path, "unlink", refuse)


def test_a_cache_that_cannot_be_written_is_read_and_never_fails_a_compile(cache, monkeypatch):
    x = pt.dvector("x")
    pytensor.function([x], pt.exp(x) + 1, mode="LLVM")
    (entry,) = cache.entries()
    with monkeypatch.context() as patched:
        _unwritable(patched)
        hit, outcome = _outcomes_of(lambda: pytensor.function([x], pt.exp(x) + 1, mode="LLVM"))
        assert outcome == {"hit": 1}
        fresh, outcome = _outcomes_of(lambda: pytensor.function([x], pt.exp(x) + 2, mode="LLVM"))
        assert outcome == {"not stored": 1}
        entry.write_bytes(b"not a pickle")
        unreadable, outcome = _outcomes_of(lambda: pytensor.function([x], pt.exp(x) + 1, mode="LLVM"))
        assert outcome == {"not stored": 1}
    assert cache.entries() == [entry]
    np.testing.assert_allclose(hit(np.zeros(2)), [2.0, 2.0])
    np.testing.assert_allclose(fresh(np.zeros(2)), [3.0, 3.0])
    np.testing.assert_allclose(unreadable(np.zeros(2)), [2.0, 2.0])


def test_gradients_through_a_cache_that_cannot_be_written(cache, monkeypatch):
    through_cache = rewrite_cache.grad_through_cache(pytensor.grad)

    def cost():
        a, b = pt.dscalar("a"), pt.dvector("b")
        return [a, b], (a * pt.exp(b)).sum()

    wrt, expression = cost()
    through_cache(expression, wrt)
    with monkeypatch.context() as patched:
        _unwritable(patched)
        wrt, expression = cost()
        grads, outcome = _outcomes_of(lambda: through_cache(expression, wrt))
        assert outcome == {"hit": 1}
        assert equal_computations(grads, pytensor.grad(expression, wrt))
        wrt, expression = cost()
        doubled = expression * 2
        grads, outcome = _outcomes_of(lambda: through_cache(doubled, wrt))
        assert outcome == {"not stored": 1}
        assert equal_computations(grads, pytensor.grad(doubled, wrt))
