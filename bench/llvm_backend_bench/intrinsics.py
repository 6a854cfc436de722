"""Microbenchmarks of the intrinsics themselves: each public intrinsic called from a plain ``@njit`` function,
beside the numba/numpy code a user would write instead (``llvm-backend bench --filter '^intrinsics/'``).

A `Micro` pairs ``ours`` (calling the intrinsic) with its ``peer`` on the same arguments; `measure_micro`
compiles both afresh in this process (the seconds of the first call, which compiles), times them in interleaved
rounds, counts NRT allocations per call and the instructions of each optimized function. The same works for an
intrinsic of one's own::

    from llvm_backend_bench.intrinsics import Micro, format_micro_table, measure_micro

    micro = Micro("mine/sum", "my_sum against np.sum", my_njit_sum, numpy_sum, lambda: (np.ones(1000),))
    print(format_micro_table(measure_micro([micro])))
"""

import re
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass

import numba
import numpy as np
from numba import typeof

from llvm_backend.tools.measure import function_instruction_count, nrt_allocations_per_call, seconds_per_call
from llvm_backend_intrinsics.argpack import ArrayPack, ArrayPackType, pack_item
from llvm_backend_intrinsics.join import linear_join
from llvm_backend_intrinsics.loops import LoopOutput, LoopSpec, loop_intrinsic
from llvm_backend_intrinsics.reduction import full_reduce
from llvm_backend_intrinsics.scalarpack import ScalarPack, ScalarPackType, scalar_item
from llvm_backend_intrinsics.select import select

__all__ = [
    "MICRO_CASES",
    "Micro",
    "MicroResult",
    "as_json",
    "format_micro_table",
    "measure_micro",
    "peer_arguments",
    "select_micro",
]

OURS, PEER = "ours", "peer"
ALLOCATION_CALLS = 20


@dataclass(frozen=True)
class Micro:
    name: str
    description: str
    ours: numba.core.registry.CPUDispatcher
    """An ``@njit`` function calling the intrinsic."""
    peer: numba.core.registry.CPUDispatcher
    """The ``@njit`` function a user would write instead, on the same arguments."""
    arguments: Callable[[], tuple]


@dataclass(frozen=True)
class MicroResult:
    case: str
    side: str
    function: str
    compile_s: float
    us_per_call: float
    allocs_per_call: float
    ir_instructions: int


@numba.njit
def join_tuple(arrays):
    return linear_join(0, arrays, np.float64)


@numba.njit
def concatenate_tuple(arrays):
    return np.concatenate(arrays)


@numba.njit
def join_pack(pack):
    return linear_join(0, (pack,), np.float64)


@numba.njit
def reduce_sum(x):
    return full_reduce(x, "add", 0.0, np.dtype("float64"), np.dtype("float64"))


@numba.njit
def numpy_sum(x):
    return np.sum(x)


@numba.njit
def reduce_max(x):
    return full_reduce(x, "maximum", -np.inf, np.dtype("float64"), np.dtype("float64"))


@numba.njit
def numpy_max(x):
    return np.max(x)


_SUM = LoopOutput(np.dtype("float64"), "add", np.dtype("float64"), 0.0, scalar=True)
_DOT_AND_NORM = loop_intrinsic(LoopSpec(((False,), (False,)), (_SUM, _SUM)))


@numba.njit
def _products(x, y):
    return x * y, x * x


@numba.njit
def loop_dot_and_norm(x, y):
    return _DOT_AND_NORM(_products, (x, y))


@numba.njit
def hand_dot_and_norm(x, y):
    dot = 0.0
    norm = 0.0
    for i in range(x.shape[0]):
        dot += x[i] * y[i]
        norm += x[i] * x[i]
    return dot, norm


@numba.njit
def last_of_pack(pack):
    return pack_item(pack, 59)[0]


@numba.njit
def last_of_tuple(arrays):
    return arrays[59][0]


@numba.njit
def last_of_scalar_pack(pack):
    return scalar_item(pack, 59)


@numba.njit
def last_of_scalars(scalars):
    return scalars[59]


def _switch_chain(n: int, name: str, step: str) -> numba.core.registry.CPUDispatcher:
    """An ``@njit`` function of ``n`` switches on a running value in one body (a PyMC model's bounds checks
    fused into one Composite), each ``v = step``."""
    source = "\n".join([f"def {name}(v):", *[f"    v = {step}"] * n, "    return v"])
    namespace = {"select": select}
    exec(source, namespace)
    return numba.njit(namespace[name])


def _vectors(n: int, length: int = 16) -> tuple:
    return tuple(np.arange(length, dtype="float64") + i for i in range(n))


def _pack(n: int) -> ArrayPack:
    return ArrayPack(ArrayPackType.of("float64", 1, n), np.dtype("float64"), list(_vectors(n)))


def _join_cases() -> list[Micro]:
    """``linear_join`` against ``np.concatenate``: on a tuple of 8 and 60 vectors, and on a pack of 60."""
    cases = [
        Micro(
            f"intrinsics/linear_join/tuple_{n}",
            f"{n} vectors(16), a tuple",
            join_tuple,
            concatenate_tuple,
            lambda n=n: (_vectors(n),),
        )
        for n in (8, 60)
    ]
    pack = Micro(
        "intrinsics/linear_join/pack_60",
        "60 vectors(16): linear_join on a pack, np.concatenate on a tuple",
        join_pack,
        concatenate_tuple,
        lambda: (_pack(60),),
    )
    return [*cases, pack]


def _loop_cases() -> list[Micro]:
    """``full_reduce`` against numpy's reductions and ``loop_intrinsic`` against a hand-written loop."""
    reductions = [
        Micro(
            f"intrinsics/full_reduce/{name}_{size}",
            f"{name} of a vector({size})",
            ours,
            peer,
            lambda size=size: (np.linspace(0.0, 1.0, size),),
        )
        for name, ours, peer in (("sum", reduce_sum, numpy_sum), ("max", reduce_max, numpy_max))
        for size in (1_000, 1_000_000)
    ]
    loops = [
        Micro(
            f"intrinsics/loop/dot_and_norm_{size}",
            f"x @ y and x @ x of two vectors({size}) in one loop: loop_intrinsic against a hand-written loop",
            loop_dot_and_norm,
            hand_dot_and_norm,
            lambda size=size: (np.linspace(0.0, 1.0, size), np.linspace(1.0, 2.0, size)),
        )
        for size in (1_000, 1_000_000)
    ]
    return [*reductions, *loops]


def _micro_cases() -> list[Micro]:
    select_chain = Micro(
        "intrinsics/select/chain_200",
        "200 switches in one body: select against the conditional expression",
        _switch_chain(200, "select_chain", "select(v > 0.5, v * 1.01, v - 0.3)"),
        _switch_chain(200, "conditional_chain", "v * 1.01 if v > 0.5 else v - 0.3"),
        lambda: (0.7,),
    )
    array_pack = Micro(
        "intrinsics/argpack/unbox_60",
        "60 vectors(16) passed as one pack against a tuple, last one read",
        last_of_pack,
        last_of_tuple,
        lambda: (_pack(60),),
    )
    scalar_pack = Micro(
        "intrinsics/scalarpack/unbox_60",
        "60 0-d float64 arrays in their cells passed as one scalar pack against a tuple of their floats",
        last_of_scalar_pack,
        last_of_scalars,
        lambda: (ScalarPack(ScalarPackType.of("float64", 60), [[np.asarray(float(k))] for k in range(60)]),),
    )
    return [*_join_cases(), *_loop_cases(), select_chain, array_pack, scalar_pack]


MICRO_CASES: dict[str, Micro] = {case.name: case for case in _micro_cases()}


def select_micro(pattern: str | None = None) -> list[Micro]:
    """The microbenchmarks whose name matches regular expression ``pattern`` (all if None)."""
    return [case for name, case in MICRO_CASES.items() if pattern is None or re.search(pattern, name)]


def peer_arguments(arguments: tuple) -> tuple:
    """A peer takes a tuple where ours takes a pack (of a scalar pack, the Python scalars of its cells' values)."""
    return tuple(_as_tuple(a) for a in arguments)


def _as_tuple(argument):
    if isinstance(argument, ArrayPack):
        return tuple(argument.arrays)
    if isinstance(argument, ScalarPack):
        return tuple(cell[0].item() for cell in argument.cells)
    return argument


def measure_micro(cases: list[Micro], rounds: int = 9, progress: Callable[[str], None] = print) -> list[MicroResult]:
    """Measure each case's two sides: fresh compile (seconds of the first call), µs per call (interleaved
    rounds), NRT allocations per call and the optimized function's instructions."""
    results = []
    for i, micro in enumerate(cases, start=1):
        progress(f"[{i}/{len(cases)}] {micro.name}: compiling and timing ours and its peer")
        arguments = micro.arguments()
        sides = {OURS: (micro.ours, arguments), PEER: (micro.peer, peer_arguments(arguments))}
        compiled, calls = {}, {}
        for side, (dispatcher, args) in sides.items():
            fresh = numba.jit(**dispatcher.targetoptions)(dispatcher.py_func)
            start = time.perf_counter()
            fresh(*args)
            compiled[side] = (fresh, time.perf_counter() - start, tuple(typeof(a) for a in args))
            calls[side] = lambda fresh=fresh, args=args: fresh(*args)
        seconds = seconds_per_call(calls, rounds)
        for side, (fresh, compile_s, signature) in compiled.items():
            overload = fresh.overloads[signature]
            results.append(
                MicroResult(
                    micro.name,
                    side,
                    fresh.py_func.__name__,
                    compile_s,
                    seconds[side] * 1e6,
                    nrt_allocations_per_call(calls[side], ALLOCATION_CALLS),
                    function_instruction_count(overload.library.get_llvm_str(), overload.fndesc.mangled_name),
                )
            )
    return results


def format_micro_table(results: list[MicroResult]) -> str:
    """The results as a Markdown table, ours with its ratio to the peer."""
    lines = [
        "| case | side | function | compile s | us/call | allocs/call | IR instr |",
        "| --- | --- | --- | --- | --- | --- | --- |",
    ]
    peers = {r.case: r for r in results if r.side == PEER}
    for r in results:
        peer = peers.get(r.case) if r.side == OURS else None
        cells = []
        for field, fmt in (
            ("compile_s", "{:.3f}"),
            ("us_per_call", "{:.2f}"),
            ("allocs_per_call", "{:.1f}"),
            ("ir_instructions", "{:d}"),
        ):
            value = getattr(r, field)
            cell = fmt.format(value)
            if peer is not None and getattr(peer, field):
                cell += f" ({value / getattr(peer, field):.2f}x)"
            cells.append(cell)
        lines.append(f"| {r.case} | {r.side} | {r.function} | {' | '.join(cells)} |")
    return "\n".join(lines)


def as_json(results: list[MicroResult]) -> list[dict]:
    return [asdict(r) for r in results]
