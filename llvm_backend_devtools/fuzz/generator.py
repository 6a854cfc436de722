"""Random PyTensor graphs as a hypothesis strategy, each described by the Python source that builds it.

A `GraphSpec` is source text: the statements that declare the inputs and build each node (``v3 = pt.exp(x0)``),
the numpy expression of each input's value, and the outputs. The generator executes each statement as it
draws it (to read the PyTensor type it made) and tracks each value's runtime shape itself; the graph the
oracle checks and the reproducer a failure writes are built from that same text.

For ``graphs()`` drawing two inputs and an exp, a reduction and a join, the spec's `module` is::

    def build():
        x0 = pt.tensor("x0", dtype="float32", shape=(None, 1))
        x1 = pt.tensor("x1", dtype="int16", shape=(None,))
        v2 = pt.exp(x0)
        v3 = pt.sum(v2, axis=None, keepdims=False)
        v4 = pt.concatenate([x1, v3[None]], axis=0)
        return [x0, x1], [v4]


    def values():
        return [
            np.asfortranarray(np.random.default_rng(7).standard_normal((3, 1)).astype("float32")),
            np.random.default_rng(2).integers(-4, 5, size=(4,)).astype("int16")[::-1],
        ]
"""

import re
from dataclasses import dataclass, field
from functools import cached_property

import numpy as np
import pytensor
import pytensor.tensor as pt
from hypothesis import strategies as st
from pytensor.compile.builders import OpFromGraph

__all__ = ["DTYPES", "FAMILIES", "WIDE", "GraphSpec", "graphs"]

DTYPES = (
    "float64",
    "float32",
    "int64",
    "int32",
    "int16",
    "int8",
    "uint64",
    "uint32",
    "uint16",
    "uint8",
    "bool",
)

LAYOUTS = ("C", "F", "strided", "negative", "broadcast")

WIDE = 30
"""Past this many inputs, outputs or entries of one node, stock NUMBA takes from tens of seconds (60) to minutes
(120 and more) to compile a graph: the fuzzer leaves it out there."""

BIG_CONSTANT = 140_000
"""Elements of a float64 constant over 1 MB (numba would embed it as a dynamic global)."""

UNARY = {
    "f": ("pt.exp", "pt.log", "pt.sqrt", "pt.sin", "pt.tanh", "pt.abs", "pt.neg", "pt.sigmoid", "pt.floor", "pt.sqr"),
    "i": ("pt.neg", "pt.abs", "pt.sqr", "pt.invert", "pt.sign"),
    "u": ("pt.abs", "pt.sqr", "pt.invert"),
    "b": ("pt.invert",),
}
ARITHMETIC = ("pt.add", "pt.sub", "pt.mul", "pt.maximum", "pt.minimum")
FLOAT_BINARY = ("pt.true_div", "pt.pow")
BITWISE = ("pt.bitwise_and", "pt.bitwise_or", "pt.bitwise_xor")
COMPARISONS = ("pt.lt", "pt.le", "pt.gt", "pt.ge", "pt.eq", "pt.neq")
REDUCTIONS = ("pt.sum", "pt.prod", "pt.max", "pt.min", "pt.all", "pt.any")
SCAN_BODIES = ("acc * 0.5 + x_t", "pt.maximum(acc, x_t)", "acc + pt.exp(-pt.abs(x_t))")

FAMILIES = (
    "unary",
    "binary",
    "comparison",
    "cast",
    "switch",
    "reduce",
    "subtensor",
    "join",
    "make_vector",
    "dimshuffle",
    "alloc",
    "constant",
    "scan",
    "opfromgraph",
)

_NAMESPACE = {"np": np, "pt": pt, "pytensor": pytensor, "OpFromGraph": OpFromGraph}
IMPORTS = (
    "import numpy as np\n"
    "import pytensor\n"
    "import pytensor.tensor as pt\n"
    "from pytensor.compile.builders import OpFromGraph\n"
)


@dataclass(frozen=True)
class Value:
    """A variable of the graph being drawn: its name in the source, dtype, runtime shape and static shape."""

    name: str
    dtype: str
    shape: tuple[int, ...]
    static: tuple[int | None, ...]

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def kind(self) -> str:
        return np.dtype(self.dtype).kind


@dataclass(frozen=True)
class GraphSpec:
    """A generated graph as source: input declarations, node statements, input value expressions, outputs."""

    inputs: tuple[str, ...]
    declarations: tuple[str, ...]
    statements: tuple[str, ...]
    value_sources: tuple[str, ...]
    outputs: tuple[str, ...]
    families: tuple[str, ...]
    widest: int

    @property
    def wide(self) -> bool:
        """Whether stock NUMBA would take minutes over it (more than `WIDE` inputs, outputs or node entries)."""
        return self.widest > WIDE

    @property
    def module(self) -> str:
        """The functions ``build() -> (inputs, outputs)`` and ``values() -> [input values]`` as Python source."""
        body = "".join(f"    {line}\n" for line in (*self.declarations, *self.statements))
        values = "".join(f"        {source},\n" for source in self.value_sources)
        return (
            f"def build():\n{body}    return [{', '.join(self.inputs)}], [{', '.join(self.outputs)}]\n\n\n"
            f"def values():\n    return [\n{values}    ]\n"
        )

    @cached_property
    def _functions(self) -> dict:
        namespace = dict(_NAMESPACE)
        exec(compile(self.module, "<fuzz graph>", "exec"), namespace)
        return namespace

    def build(self):
        """Fresh ``(inputs, outputs)`` PyTensor variables of the graph."""
        return self._functions["build"]()

    def values(self) -> list:
        """Fresh input values (new arrays at each call, in their layouts)."""
        return self._functions["values"]()


def _base_source(dtype: str, shape: tuple[int, ...], seed: int, special: bool) -> str:
    rng = f"np.random.default_rng({seed})"
    kind = np.dtype(dtype).kind
    if kind == "b":
        return f"({rng}.random({shape}) < 0.5)"
    if kind in "iu":
        low = 0 if kind == "u" else -4
        return f'{rng}.integers({low}, 5, size={shape}).astype("{dtype}")'
    if special:
        choices = "[np.nan, np.inf, -np.inf, 0.0, -0.0, 1.5, -2.0]"
        return f'{rng}.choice(np.array({choices}), size={shape}).astype("{dtype}")'
    return f'(3 * {rng}.standard_normal({shape})).astype("{dtype}")'


def value_source(dtype: str, shape: tuple[int, ...], layout: str, seed: int, special: bool = False) -> str:
    """A numpy expression for an array of ``dtype`` and ``shape`` laid out as ``layout`` (see `LAYOUTS`)."""
    if not shape:
        # numpy arithmetic on 0-d arrays returns scalars; an input's value is an array
        return f"np.asarray({_base_source(dtype, shape, seed, special)})"
    if layout == "C":
        return _base_source(dtype, shape, seed, special)
    if layout == "F":
        return f"np.asfortranarray({_base_source(dtype, shape, seed, special)})"
    if layout == "strided":
        wider = (*shape[:-1], 2 * shape[-1])
        return f"{_base_source(dtype, wider, seed, special)}[..., ::2]"
    if layout == "negative":
        return f"{_base_source(dtype, shape, seed, special)}[::-1]"
    row = (1,) * (len(shape) - 1) + shape[-1:]
    return f"np.broadcast_to({_base_source(dtype, row, seed, special)}, {shape})"


def _dummy(shape: tuple[int, ...]) -> np.ndarray:
    """A zero-strided array of ``shape``, to let numpy compute shapes."""
    return np.lib.stride_tricks.as_strided(np.zeros(1), shape, (0,) * len(shape))


@dataclass
class _Draft:
    """A graph while it is drawn: statements are executed as they are added."""

    namespace: dict = field(default_factory=lambda: dict(_NAMESPACE))
    pool: list[Value] = field(default_factory=list)
    inputs: list[str] = field(default_factory=list)
    declarations: list[str] = field(default_factory=list)
    statements: list[str] = field(default_factory=list)
    value_sources: list[str] = field(default_factory=list)
    families: list[str] = field(default_factory=list)
    nodes: list[Value] = field(default_factory=list)
    widest: int = 1
    mismatched: bool = False
    """Whether some node's operands disagree in shape at runtime (so the graph raises, and runtime shapes
    tracked after it are not the graph's)."""

    def add_input(self, dtype: str, shape: tuple[int, ...], static, value: str) -> Value:
        name = f"x{len(self.pool)}"
        line = f'{name} = pt.tensor("{name}", dtype="{dtype}", shape={tuple(static)})'
        exec(line, self.namespace)
        self.inputs.append(name)
        self.declarations.append(line)
        self.value_sources.append(value)
        value = Value(name, dtype, shape, tuple(static))
        self.pool.append(value)
        return value

    def add(self, family: str, expression: str, shape: tuple[int, ...], prelude: str = "") -> Value:
        """Add ``v<k> = expression`` (after ``prelude`` statements, if any) of runtime shape ``shape``."""
        name = f"v{len(self.pool)}"
        lines = [*([prelude] if prelude else []), f"{name} = {expression}"]
        for line in lines:
            exec(line, self.namespace)
        var = self.namespace[name]
        static = var.type.shape
        shape = tuple(int(s) for s in shape)
        wrong = len(static) != len(shape) or any(s is not None and s != r for s, r in zip(static, shape, strict=False))
        if wrong and not self.mismatched:
            raise AssertionError(f"generator: {name} = {expression} has static shape {static}, runtime {shape}")
        self.statements += lines
        self.families.append(family)
        value = Value(name, var.type.dtype, shape, static)
        self.pool.append(value)
        self.nodes.append(value)
        return value

    def leaves(self) -> list[Value]:
        """The nodes no later statement uses (so that every node drawn is computed)."""
        used = {name for line in self.statements for name in re.findall(r"\bv\d+\b", line.partition(" = ")[2])}
        return [v for v in self.nodes if v.name not in used]

    def spec(self, outputs: list[Value]) -> GraphSpec:
        return GraphSpec(
            tuple(self.inputs),
            tuple(self.declarations),
            tuple(self.statements),
            tuple(self.value_sources),
            tuple(v.name for v in outputs),
            tuple(self.families),
            max(self.widest, len(self.inputs), len(outputs)),
        )


def _broadcasts(a: Value, b: Value) -> bool:
    """Whether PyTensor broadcasts ``a`` with ``b`` at runtime: per aligned dimension, equal sizes or a
    statically broadcastable side."""
    for (sa, ra), (sb, rb) in zip(zip(a.static[::-1], a.shape[::-1]), zip(b.static[::-1], b.shape[::-1])):
        if ra != rb and sa != 1 and sb != 1:
            return False
    return True


def _broadcast_shape(*values: Value) -> tuple[int, ...]:
    ndim = max(v.ndim for v in values)
    shape = []
    for k in range(1, ndim + 1):
        sizes = [v.shape[-k] for v in values if v.ndim >= k and v.static[-k] != 1]
        shape.append(sizes[0] if sizes else 1)
    return tuple(shape[::-1])


@st.composite
def _shapes(draw, max_ndim: int = 4):
    ndim = draw(st.integers(0, max_ndim))
    return tuple(draw(st.sampled_from((2, 1, 3, 0, 4, 5))) for _ in range(ndim))


@st.composite
def _static(draw, shape: tuple[int, ...]):
    choices = [draw(st.sampled_from(("none", "exact"))) if size == 1 else "none" for size in shape]
    return tuple(1 if choice == "exact" else None for choice in choices)


@st.composite
def _input(draw, g: _Draft, dtype=None, shape=None) -> Value:
    dtype = dtype or draw(st.sampled_from(DTYPES))
    shape = draw(_shapes()) if shape is None else shape
    static = draw(_static(shape))
    layout = draw(st.sampled_from(LAYOUTS))
    special = np.dtype(dtype).kind == "f" and draw(st.integers(0, 4)) == 0
    seed = draw(st.integers(0, 2**16))
    return g.add_input(dtype, shape, static, value_source(dtype, shape, layout, seed, special))


def _pick(draw, candidates: list[Value]) -> Value:
    return draw(st.sampled_from(candidates))


def _unary(draw, g: _Draft) -> None:
    v = _pick(draw, g.pool)
    op = draw(st.sampled_from(UNARY[v.kind]))
    g.add("unary", f"{op}({v.name})", v.shape)


def _static_broadcasts(a: Value, b: Value) -> bool:
    """Whether PyTensor accepts ``a`` and ``b`` as operands when it builds the graph (runtime sizes aside)."""
    pairs = zip(a.static[::-1], b.static[::-1])
    return all(sa is None or sb is None or sa == sb or 1 in (sa, sb) for sa, sb in pairs)


def _mismatching(draw) -> bool:
    """Rarely true: the next node takes operands whose runtime shapes disagree (the graph then raises)."""
    return draw(st.integers(0, 24)) == 0


def _binary_operands(draw, g: _Draft, a: Value, kinds: str = "biuf") -> Value:
    if _mismatching(draw):
        partners = [b for b in g.pool if b.kind in kinds and not _broadcasts(a, b) and _static_broadcasts(a, b)]
        if partners:
            g.mismatched = True
            return _pick(draw, partners)
    partners = [b for b in g.pool if _broadcasts(a, b) and b.kind in kinds] or [a]
    return _pick(draw, partners)


def _associative(draw, g: _Draft, a: Value) -> None:
    """A unary op of ``pt.add`` or ``pt.mul`` of ``a`` and 2 to 4 operands of its dtype that broadcast to its
    shape, some of them new 0-d inputs: loop-invariant operands among a loop's, which `hoist_invariants` groups
    and hoists."""
    operands = [a]
    for _ in range(draw(st.integers(2, 4))):
        fits = [
            b
            for b in g.pool
            if b.dtype == a.dtype
            and _broadcasts(a, b)
            and _static_broadcasts(a, b)
            and _broadcast_shape(a, b) == a.shape
        ]
        operands.append(_pick(draw, fits) if draw(st.booleans()) else draw(_input(g, a.dtype, ())))
    op = draw(st.sampled_from(("pt.add", "pt.mul")))
    # a unary op after it, so that fusion makes the two one Composite (which is what the hoist splits)
    unary = draw(st.sampled_from(UNARY[a.kind]))
    g.add("binary", f"{unary}({op}({', '.join(v.name for v in operands)}))", _broadcast_shape(*operands))


def _binary(draw, g: _Draft) -> None:
    a = _pick(draw, g.pool)
    if a.ndim and draw(st.integers(0, 3)) == 0:
        _associative(draw, g, a)
        return
    if a.kind in "biu" and draw(st.booleans()):
        b = _binary_operands(draw, g, a, "b" if a.kind == "b" else "iu")
        op = draw(st.sampled_from(BITWISE))
    else:
        b = _binary_operands(draw, g, a)
        ops = ARITHMETIC + (FLOAT_BINARY if "f" in (a.kind, b.kind) else ())
        if a.kind == b.kind == "b":
            ops = tuple(op for op in ops if op != "pt.sub")
        op = draw(st.sampled_from(ops))
    if draw(st.booleans()):
        a, b = b, a
    g.add("binary", f"{op}({a.name}, {b.name})", _broadcast_shape(a, b))


def _comparison(draw, g: _Draft) -> None:
    a = _pick(draw, g.pool)
    b = _binary_operands(draw, g, a)
    op = draw(st.sampled_from(COMPARISONS))
    g.add("comparison", f"{op}({a.name}, {b.name})", _broadcast_shape(a, b))


def _cast(draw, g: _Draft) -> None:
    v = _pick(draw, g.pool)
    dtype = draw(st.sampled_from(DTYPES))
    g.add("cast", f'pt.cast({v.name}, "{dtype}")', v.shape)


def _switch(draw, g: _Draft) -> None:
    a = _pick(draw, g.pool)
    b = _binary_operands(draw, g, a)
    conditions = [c for c in g.pool if _broadcasts(c, a) and _broadcasts(c, b)]
    c = _pick(draw, conditions or [a])
    condition = c.name if c.kind == "b" else f"pt.gt({c.name}, 0)"
    g.add("switch", f"pt.switch({condition}, {a.name}, {b.name})", _broadcast_shape(a, b, c))


def _reduce(draw, g: _Draft) -> None:
    v = _pick(draw, g.pool)
    op = draw(st.sampled_from(REDUCTIONS))
    axis = None
    if v.ndim and draw(st.booleans()):
        axes = draw(st.lists(st.integers(0, v.ndim - 1), min_size=1, max_size=v.ndim, unique=True))
        axis = tuple(sorted(axes)) if len(axes) > 1 else axes[0] - v.ndim * draw(st.integers(0, 1))
    keepdims = draw(st.booleans())
    shape = np.sum(_dummy(v.shape), axis=axis, keepdims=keepdims).shape
    g.add("reduce", f"{op}({v.name}, axis={axis}, keepdims={keepdims})", shape)


def _index(draw, g: _Draft, size: int) -> tuple[str, int]:
    """An integer index into a dimension of ``size`` (mostly in range, sometimes out: an IndexError), as a
    constant or a 0-d input, and its value."""
    if size and draw(st.integers(0, 9)):
        index = draw(st.integers(-size, size - 1))
    else:
        index = draw(st.integers(-size - 2, size + 2))
    if draw(st.booleans()):
        return str(index), index
    return g.add_input("int64", (), (), f'np.array({index}, dtype="int64")').name, index


def _slice(draw, size: int) -> tuple[str, slice]:
    bound = st.one_of(st.none(), st.integers(-size - 1, size + 1))
    start, stop = draw(bound), draw(bound)
    step = draw(st.one_of(st.none(), st.sampled_from((1, 2, -1, -2, 3))))
    return ":".join("" if part is None else str(part) for part in (start, stop, step)), slice(start, stop, step)


def _subtensor(draw, g: _Draft) -> None:
    v = _pick(draw, [v for v in g.pool if v.ndim] or g.pool)
    if not v.ndim:
        return
    parts, shape = [], []
    n_indexed = v.ndim if draw(st.booleans()) else draw(st.integers(1, v.ndim))
    for size in v.shape[:n_indexed]:
        if draw(st.booleans()):
            source, _ = _index(draw, g, size)
        else:
            source, part = _slice(draw, size)
            shape.append(len(range(*part.indices(size))))
        parts.append(source)
    shape += v.shape[n_indexed:]
    expression = f"{v.name}[{', '.join(parts)}]"
    if not shape and draw(st.booleans()):
        # scalar math on a scalar index, which PyTensor's scalarization turns into a ScalarSubtensor
        expression = f"{draw(st.sampled_from(UNARY[v.kind]))}({expression})"
    g.add("subtensor", expression, shape)


def _join_entries(draw, g: _Draft, base: Value, axis: int, width: int) -> list[str]:
    def fits(v: Value) -> bool:
        return v.ndim == base.ndim and all((v.shape[k] == base.shape[k]) or k == axis for k in range(base.ndim))

    def static_fits(v: Value) -> bool:
        if v.ndim != base.ndim:
            return False
        pairs = [(v.static[k], base.static[k]) for k in range(base.ndim) if k != axis]
        return all(a is None or b is None or a == b for a, b in pairs)

    candidates = [v.name for v in g.pool if fits(v)]
    if _mismatching(draw):
        misfits = [v.name for v in g.pool if static_fits(v) and not fits(v)]
        if misfits:
            g.mismatched = True
            candidates = [base.name, draw(st.sampled_from(misfits))]
    if base.ndim == 1:
        candidates += [f"{v.name}[None]" for v in g.pool if v.ndim == 0]
    return [draw(st.sampled_from(candidates)) for _ in range(width)]


def _width(draw) -> int:
    return draw(st.one_of(st.integers(2, 5), st.integers(6, 300)))


def _filled_join_entries(draw, g: _Draft, base: Value) -> tuple[list[str], int]:
    """A 1-d join's entries around a map of the vector ``base`` that only the join reads. Three times in four
    the other entries are what lets the LLVM mode's loop write the map within the join's output
    (`filled_joins`): values of ``base``'s dtype of a static length (0-d values as 1-element vectors, vectors
    of a static shape, a constant vector); else, which may keep it from applying, any 0-d values and vectors.
    Returns the entries and the output's length."""
    length = draw(st.integers(1, 3))
    fitting = [(f"pt.zeros({length}, dtype='{base.dtype}')", length)]
    fitting += [(f"{v.name}[None]", 1) for v in g.pool if v.ndim == 0 and v.dtype == base.dtype]
    fitting += [
        (v.name, v.shape[0]) for v in g.pool if v.ndim == 1 and v.static[0] is not None and v.dtype == base.dtype
    ]
    other = [(f"{v.name}[None]", 1) for v in g.pool if v.ndim == 0] + [
        (v.name, v.shape[0]) for v in g.pool if v.ndim == 1
    ]
    choices = fitting if draw(st.integers(0, 3)) else other
    entries = [draw(st.sampled_from(choices)) for _ in range(draw(st.integers(1, 4)))]
    entries.insert(
        draw(st.integers(0, len(entries))), (f"{draw(st.sampled_from(UNARY[base.kind]))}({base.name})", base.shape[0])
    )
    return [entry for entry, _ in entries], sum(size for _, size in entries)


def _join(draw, g: _Draft) -> None:
    base = _pick(draw, [v for v in g.pool if v.ndim] or g.pool)
    if not base.ndim or draw(st.integers(0, 3)) == 0:
        _stack(draw, g, base)
        return
    if base.ndim == 1 and draw(st.integers(0, 2)) == 0:
        entries, size = _filled_join_entries(draw, g, base)
        g.add("join", f"pt.concatenate([{', '.join(entries)}])", (size,))
        return
    axis = draw(st.integers(0, base.ndim - 1))
    width = _width(draw)
    entries = _join_entries(draw, g, base, axis, width)
    g.widest = max(g.widest, width)
    size = sum(_runtime(g, entry)[axis] for entry in entries)
    shape = (*base.shape[:axis], size, *base.shape[axis + 1 :])
    if draw(st.booleans()):
        axis -= base.ndim * draw(st.integers(0, 1))
        g.add("join", f"pt.concatenate([{', '.join(entries)}], axis={axis})", shape)
    else:
        g.add("join", f"pt.join({axis}, {', '.join(entries)})", shape)


def _runtime(g: _Draft, entry: str) -> tuple[int, ...]:
    name = entry.removesuffix("[None]")
    value = next(v for v in g.pool if v.name == name)
    return (1,) if entry.endswith("[None]") else value.shape


def _stack(draw, g: _Draft, base: Value) -> None:
    """``pt.stack`` of values of ``base``'s shape: of 0-d values a MakeVector, else a Join of expanded entries."""
    same = [v.name for v in g.pool if v.shape == base.shape]
    width = _width(draw)
    g.widest = max(g.widest, width)
    entries = [draw(st.sampled_from(same)) for _ in range(width)]
    axis = draw(st.integers(0, base.ndim))
    shape = (*base.shape[:axis], width, *base.shape[axis:])
    g.add("make_vector" if not base.ndim else "join", f"pt.stack([{', '.join(entries)}], axis={axis})", shape)


def _make_vector(draw, g: _Draft) -> None:
    """A MakeVector of 0-d values (after a full reduction making one, if the graph has none)."""
    scalars = [v for v in g.pool if not v.ndim]
    if not scalars:
        v = _pick(draw, g.pool)
        scalars = [g.add("reduce", f"{draw(st.sampled_from(REDUCTIONS))}({v.name})", ())]
    _stack(draw, g, _pick(draw, scalars))


def _dimshuffle(draw, g: _Draft) -> None:
    v = _pick(draw, g.pool)
    kept = [k for k in range(v.ndim) if v.static[k] != 1 or draw(st.booleans())]
    order = list(draw(st.permutations(kept)))
    for _ in range(draw(st.integers(0, 2))):
        order.insert(draw(st.integers(0, len(order))), "x")
    shape = tuple(1 if k == "x" else v.shape[k] for k in order)
    g.add("dimshuffle", f"{v.name}.dimshuffle({tuple(order)})", shape)


def _alloc(draw, g: _Draft) -> None:
    v = _pick(draw, g.pool)
    lead = tuple(draw(st.sampled_from((2, 1, 0, 3))) for _ in range(draw(st.integers(0, 2))))
    own = tuple(draw(st.sampled_from((2, 1, 3))) if s == 1 else r for s, r in zip(v.static, v.shape, strict=True))
    shape = lead + own
    g.add("alloc", f"pt.alloc({v.name}, {', '.join(map(str, shape))})", shape)


def _constant(draw, g: _Draft) -> None:
    """A constant operand: small and contiguous, small and strided, or over 1 MB (C or F ordered)."""
    v = _pick(draw, g.pool)
    kind = draw(st.sampled_from(("small", "strided", "big", "big_f")))
    if kind in ("small", "strided"):
        size = int(np.prod(v.shape))
        if kind == "small":
            array = f'np.arange({size}).astype("{v.dtype}").reshape({v.shape})'
        else:
            array = f'np.arange({2 * size}).astype("{v.dtype}")[::2].reshape({v.shape})'
        g.add("constant", f"pt.add({v.name}, pt.constant({array}))", v.shape)
        return
    shape = (BIG_CONSTANT,) if kind == "big" else (350, 400)
    array = f"np.linspace(-2, 2, {int(np.prod(shape))}).reshape({shape})"
    if kind == "big_f":
        array = f"np.asfortranarray({array})"
    g.add("constant", f"pt.mul(pt.sum({v.name}), pt.constant({array}))", shape)


def _scan(draw, g: _Draft) -> None:
    """A scan over the leading axis of a value (cast to float64) carrying one state."""
    v = _pick(draw, [v for v in g.pool if v.ndim] or g.pool)
    if not v.ndim:
        return
    body = draw(st.sampled_from(SCAN_BODIES))
    sequence = f'pt.cast({v.name}, "float64")'
    # of the type of one step (static shape too), which scan requires of a recurrent state
    initial = f"pt.zeros_like({sequence}).sum(axis=0)"
    g.add(
        "scan",
        f"pytensor.scan(lambda x_t, acc: {body}, sequences=[{sequence}], outputs_info=[{initial}], "
        "return_updates=False)",
        v.shape,
    )


def _opfromgraph(draw, g: _Draft) -> None:
    """An OpFromGraph of one input: a unary op of its dtype, combined with the input."""
    v = _pick(draw, g.pool)
    op = draw(st.sampled_from(UNARY[v.kind]))
    combine = "pt.bitwise_or" if v.kind == "b" else draw(st.sampled_from(ARITHMETIC))
    inner = f"i{len(g.pool)}"
    g.add(
        "opfromgraph",
        f"OpFromGraph([{inner}], [{combine}({op}({inner}), {inner})])({v.name})",
        v.shape,
        prelude=f"{inner} = {v.name}.type()",
    )


DRAWS = {
    "unary": _unary,
    "binary": _binary,
    "comparison": _comparison,
    "cast": _cast,
    "switch": _switch,
    "reduce": _reduce,
    "subtensor": _subtensor,
    "join": _join,
    "make_vector": _make_vector,
    "dimshuffle": _dimshuffle,
    "alloc": _alloc,
    "constant": _constant,
    "scan": _scan,
    "opfromgraph": _opfromgraph,
}
"""Family -> the function drawing one node of it."""


@st.composite
def _wide_inputs(draw, g: _Draft) -> None:
    """31 to 300 inputs of one dtype and shape (which the LLVM mode takes as packs), of 0-d ones maybe their
    stack (a MakeVector wider than a call), and maybe an op per input."""
    dtype = draw(st.sampled_from(DTYPES))
    shape = draw(st.one_of(st.just(()), _shapes(max_ndim=2)))
    inputs = [draw(_input(g, dtype, shape)) for _ in range(draw(st.integers(31, 300)))]
    if not shape and draw(st.booleans()):
        g.add("make_vector", f"pt.stack([{', '.join(x.name for x in inputs)}])", (len(inputs),))
    if draw(st.booleans()):
        for x in inputs:
            op = draw(st.sampled_from(UNARY[x.kind]))
            g.add("unary", f"{op}({x.name})", x.shape)


@st.composite
def graphs(draw, max_nodes: int = 12, families=FAMILIES) -> GraphSpec:
    """A random graph: 1 to 300 inputs, up to ``max_nodes`` drawn nodes of ``families``, 1 to 300 outputs."""
    g = _Draft()
    if draw(st.integers(0, 9)):
        for _ in range(draw(st.integers(1, 4))):
            draw(_input(g))
    else:
        draw(_wide_inputs(g))
    for _ in range(draw(st.integers(1, max_nodes))):
        DRAWS[draw(st.sampled_from(families))](draw, g)
    if not g.nodes:
        _unary(draw, g)
    extra = draw(st.lists(st.sampled_from(g.nodes), max_size=300 if len(g.nodes) > 30 else 3))
    return g.spec([*g.leaves(), *extra])
