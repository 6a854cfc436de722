"""``llvm_backend_intrinsics.nutpie``: nutpie's C entry points over a numba function, called as nutpie calls them
(through their addresses, with a record of the shared data laid out as nutpie lays it out), without nutpie."""

import ctypes

import numpy as np
import pytest
from numba import njit, types

from llvm_backend_intrinsics.nutpie import SharedSlot, expand_entry, logp_entry

DOUBLES = ctypes.POINTER(ctypes.c_double)
LOGP = ctypes.CFUNCTYPE(ctypes.c_int64, ctypes.c_uint64, DOUBLES, DOUBLES, DOUBLES, ctypes.c_void_p)
EXPAND = ctypes.CFUNCTYPE(ctypes.c_int64, ctypes.c_uint64, ctypes.c_uint64, DOUBLES, DOUBLES, ctypes.c_void_p)
N_DIM = 3


def record(shared: dict[str, np.ndarray]) -> np.ndarray:
    """nutpie's record of shared data: per array, its address, size and shape (``make_user_data``'s layout)."""
    dtype = np.dtype(
        [
            (
                "shared",
                [
                    ("data", [(key, np.uintp) for key in shared]),
                    ("size", [(key, np.uintp) for key in shared]),
                    ("shape", [(key, np.uint, (value.ndim,)) for key, value in shared.items()]),
                ],
            )
        ]
    )
    user_data = np.zeros((), dtype=dtype)
    for key, value in shared.items():
        user_data["shared"]["data"][key] = value.ctypes.data
        user_data["shared"]["size"][key] = value.size
        user_data["shared"]["shape"][key] = value.shape
    return user_data


def slots(user_data: np.ndarray, shared: dict[str, np.ndarray]) -> list[SharedSlot]:
    fields = user_data.dtype["shared"]
    data, shape = fields.fields["data"][1], fields.fields["shape"][1]
    return [
        SharedSlot(data + fields["data"].fields[k][1], shape + fields["shape"].fields[k][1], v.ndim, v.dtype)
        for k, v in shared.items()
    ]


@njit
def logp_and_grad(x, weights, counts):
    """A log density of ``x`` reading a 2-d float and a 1-d int shared array; raises on mismatched shapes."""
    if weights.shape[1] != x.shape[0] or counts.shape[0] != weights.shape[0]:
        raise ValueError("shapes")
    grad = np.zeros_like(x)
    total = 0.0
    for i in range(weights.shape[0]):
        row = 0.0
        for j in range(x.shape[0]):
            row += weights[i, j] * x[j]
        total -= counts[i] * row * row
        for j in range(x.shape[0]):
            grad[j] -= 2.0 * counts[i] * row * weights[i, j]
    return np.asarray(total), grad


@njit
def expand(x, weights, counts):
    return (np.concatenate((x, weights.sum(axis=1) * counts)),)


def compiled(function, shared):
    signature = (types.Array(types.float64, 1, "C"), *(s.numba_type for s in shared))
    function.compile(signature)
    return function.overloads[signature]


@pytest.fixture
def model():
    rng = np.random.default_rng(0)
    shared = {"weights": rng.normal(size=(4, N_DIM)), "counts": np.arange(1, 5, dtype=np.int64)}
    user_data = record(shared)
    layout = slots(user_data, shared)
    entries = (logp_entry(compiled(logp_and_grad, layout), N_DIM, layout),)
    entries += (expand_entry(compiled(expand, layout), N_DIM, N_DIM + 4, layout),)
    return shared, user_data, entries


def call_logp(entry, user_data, x, dim=N_DIM):
    grad, logp = np.full(N_DIM, np.nan), np.full((), np.nan)
    pointers = [a.ctypes.data_as(DOUBLES) for a in (x, grad, logp)]
    return LOGP(entry.address)(dim, *pointers, user_data.ctypes.data), float(logp), grad


def call_expand(entry, user_data, x, n_expanded=N_DIM + 4):
    out = np.full(N_DIM + 4, np.nan)
    pointers = [a.ctypes.data_as(DOUBLES) for a in (x, out)]
    return EXPAND(entry.address)(N_DIM, n_expanded, *pointers, user_data.ctypes.data), out


def test_logp_and_expand_return_what_the_function_returns(model):
    shared, user_data, (logp, expanded) = model
    x = np.array([0.5, -1.0, 2.0])
    code, value, grad = call_logp(logp, user_data, x)
    want_logp, want_grad = logp_and_grad(x, *shared.values())
    assert code == 0
    assert value == float(want_logp)
    np.testing.assert_array_equal(grad, want_grad)
    code, out = call_expand(expanded, user_data, x)
    assert code == 0
    np.testing.assert_array_equal(out, expand(x, *shared.values())[0])


def test_new_data_is_read_through_the_record(model):
    shared, _, (logp, _) = model
    x = np.array([0.5, -1.0, 2.0])
    new = {"weights": np.ones((2, N_DIM)), "counts": np.array([3, 1])}
    _, value, grad = call_logp(logp, record(new), x)
    want_logp, want_grad = logp_and_grad(x, *new.values())
    assert value == float(want_logp) != float(logp_and_grad(x, *shared.values())[0])
    np.testing.assert_array_equal(grad, want_grad)


def test_nutpie_s_return_codes(model):
    _, user_data, (logp, expanded) = model
    x = np.array([0.5, -1.0, 2.0])
    assert call_logp(logp, user_data, x, dim=N_DIM + 1)[0] == -1
    assert call_expand(expanded, user_data, x, n_expanded=N_DIM)[0] == -1
    assert call_logp(logp, user_data, np.array([np.inf, 0.0, 0.0]))[0] == 3
    mismatched = record({"weights": np.ones((2, N_DIM)), "counts": np.array([1, 2, 3])})
    assert call_logp(logp, mismatched, x)[0] == 1
    assert call_expand(expanded, mismatched, x)[0] == -2


def test_a_log_density_that_is_not_finite_is_code_4():
    @njit
    def infinite(x):
        return -np.inf, np.zeros_like(x)

    entry = logp_entry(compiled(infinite, []), N_DIM, [])
    code, value, grad = call_logp(entry, np.zeros(()), np.zeros(N_DIM))
    assert (code, value) == (4, -np.inf)
    np.testing.assert_array_equal(grad, 0.0)


def test_a_gradient_of_another_length_is_an_error_not_a_copy_past_the_buffer():
    @njit
    def longer(x):
        return 0.0, np.zeros(x.shape[0] + 100)

    entry = logp_entry(compiled(longer, []), N_DIM, [])
    assert call_logp(entry, np.zeros(()), np.zeros(N_DIM))[0] == 1


def test_graphs_of_other_outputs_are_refused():
    @njit
    def three(x):
        return 0.0, x, x

    with pytest.raises(TypeError, match="log density and the gradient"):
        logp_entry(compiled(three, []), N_DIM, [])
    with pytest.raises(TypeError, match="one vector"):
        expand_entry(compiled(three, []), N_DIM, N_DIM, [])
