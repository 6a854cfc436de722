"""Vector variants of the C math functions numba calls, so that a loop calling one still vectorizes.

LLVM's loop vectorizer widens a call only to an intrinsic (``llvm.exp``, ``llvm.log``, ``llvm.sqrt``, ...) or to
a function whose declaration names vector variants of itself (the ``vector-function-abi-variant`` attribute,
LLVM's VFABI). numba lowers ``log1p``, ``expm1``, ``erf``, ``erfc``, ``lgamma``, the inverse and hyperbolic
trigonometric functions and their ``float`` forms as calls to the C library (``unary_math_extern``), so a single
such call kept a whole loop body scalar: its divisions, square roots and intrinsic calls with it. A
stochastic-volatility model's log density and gradient, one loop with ``exp``, ``log1p``, ``log`` and six
divisions per element, ran slower than stock's, whose fusion had happened to leave ``log1p`` in a loop of its own
(bench/results/pymc_corpus).

`declare_vector_variants` gives each such function declared in a module a variant of 256 bits (4 lanes of a
``double``, 8 of a ``float``: one AVX register, two SSE ones) and names it in the declaration. A variant calls the
scalar function once per lane, in lane order, so every element's value is the scalar function's, bit for bit;
what vectorizes is the rest of the body. Whether a loop is vectorized stays LLVM's choice by its own cost model,
as for the intrinsics it scalarizes the same way. One width only: each variant is code LLVM compiles in every
module declaring the function, and on the stochastic-volatility loop 4 lanes ran faster than 8 or 2.

A function called from a library numba links into the module (a stock scalar function, ``math.lgamma`` in
PyTensor's ``gammaln``) is declared there, not in the module: `declare_math_of` declares in the module what such
a library declares, and the linked calls then resolve to the module's declaration and its variants.

The attribute is a string attribute, which llvmlite's ``FunctionAttributes`` does not take: `_VariantAttributes`
renders it after the others, and the import-time probe `_check_rendering` fails loudly if llvmlite renders a
declaration's attributes otherwise than this module expects.
"""

import re
from weakref import WeakKeyDictionary

from llvmlite import ir
from numba.core import cgutils

__all__ = ["VECTOR_MATH_FUNCTIONS", "declare_math_of", "declare_vector_variants", "variant_name"]

VECTOR_MATH_FUNCTIONS = (
    "acos",
    "acosh",
    "asin",
    "asinh",
    "atan",
    "atanh",
    "cosh",
    "erf",
    "erfc",
    "expm1",
    "lgamma",
    "log1p",
    "log2",
    "sinh",
    "tan",
    "tanh",
)
"""The C library functions of one ``double`` numba calls rather than an LLVM intrinsic; each ``f``-suffixed name
is the ``float`` one."""

_ATTRIBUTE = "vector-function-abi-variant"
_MATH_NAMES = {
    **dict.fromkeys(VECTOR_MATH_FUNCTIONS, "double"),
    **{f"{name}f": "float" for name in VECTOR_MATH_FUNCTIONS},
}
"""Each `VECTOR_MATH_FUNCTIONS` name and its ``float`` form, with its element type's name."""
_LANES = {"double": 4, "float": 8}
_TYPES = {"double": ir.DoubleType(), "float": ir.FloatType()}
_MATH_DECLARATION = re.compile(r'^declare [^@\n]*?\b(double|float) @"?(\w+)"?\((double|float)[^,)]*\)', re.MULTILINE)
_declared_by: WeakKeyDictionary = WeakKeyDictionary()
"""Per numba code library, the `VECTOR_MATH_FUNCTIONS` declarations its IR holds, read once."""


def variant_name(function: str, lanes: int) -> str:
    """The name of the vector variant of C function ``function`` on ``lanes`` lanes."""
    return f"llvm_backend.vector.{function}.{lanes}"


class _VariantAttributes(ir.FunctionAttributes):
    """A declaration's attributes followed by the string attribute naming its vector variants (``mappings``,
    VFABI names)."""

    def __init__(self, attributes, mappings: str):
        super().__init__(attributes)
        self.alignstack = attributes.alignstack
        self.personality = attributes.personality
        self.mappings = mappings

    def __bool__(self) -> bool:
        return True  # llvmlite renders a function's attributes only when its set is true: the string is one

    def _to_list(self, ret_type):
        return [*super()._to_list(ret_type), f'"{_ATTRIBUTE}"="{self.mappings}"']


def _scalar_declaration(module: ir.Module, name: str, element: ir.Type) -> ir.Function | None:
    """``module``'s declaration of ``name`` if it is one of ``element -> element`` not given variants yet."""
    function = module.globals.get(name)
    if not isinstance(function, ir.Function) or function.blocks or isinstance(function.attributes, _VariantAttributes):
        return None
    if function.ftype.return_type != element or list(function.ftype.args) != [element] or function.ftype.var_arg:
        return None
    return function


def _define_variant(module: ir.Module, scalar: ir.Function, element: ir.Type, lanes: int) -> str:
    """Define the ``lanes``-lane variant of ``scalar`` in ``module`` (once) and return its VFABI mapping.

    Its linkage is ``weak_odr``: every module defining it defines the same function, and LLVM keeps it though
    nothing calls it until the vectorizer does."""
    name = variant_name(scalar.name, lanes)
    vector = ir.VectorType(element, lanes)
    if name not in module.globals:
        variant = ir.Function(module, ir.FunctionType(vector, [vector]), name)
        variant.linkage = "weak_odr"
        builder = ir.IRBuilder(variant.append_basic_block("lanes"))
        result = ir.Constant(vector, ir.Undefined)
        for lane in range(lanes):
            at = ir.IntType(32)(lane)
            value = builder.call(scalar, [builder.extract_element(variant.args[0], at)], name=f"lane{lane}")
            result = builder.insert_element(result, value, at)
        builder.ret(result)
    return f"_ZGV_LLVM_N{lanes}v_{scalar.name}({name})"


def declare_vector_variants(module: ir.Module) -> None:
    """Name vector variants in each declaration in ``module`` of a `VECTOR_MATH_FUNCTIONS` function (or its
    ``float`` form), defining them; a module declaring none is left as it is, and a declaration given its
    variants once is not given them again."""
    for name, kind in _MATH_NAMES.items():
        scalar = _scalar_declaration(module, name, _TYPES[kind])
        if scalar is not None:
            mapping = _define_variant(module, scalar, _TYPES[kind], _LANES[kind])
            scalar.attributes = _VariantAttributes(scalar.attributes, mapping)


def declare_math_of(module: ir.Module, library) -> None:
    """Declare in ``module`` each `VECTOR_MATH_FUNCTIONS` function (or ``float`` form) that numba code library
    ``library``, to be linked into it, declares, as numba declares it (``insert_pure_function``, as
    ``unary_math_extern`` does): the module's declaration is the one the linked calls keep.
    `declare_vector_variants` then names its variants. A library's declarations are read from its IR once."""
    declared = _declared_by.get(library)
    if declared is None:
        declared = tuple(
            sorted(
                {
                    name
                    for returned, name, argument in _MATH_DECLARATION.findall(library.get_llvm_str())
                    if _MATH_NAMES.get(name) == returned == argument
                }
            )
        )
        _declared_by[library] = declared
    for name in declared:
        element = _TYPES[_MATH_NAMES[name]]
        cgutils.insert_pure_function(module, ir.FunctionType(element, [element]), name=name)


def _check_rendering() -> None:
    """Raise ImportError unless llvmlite renders `_VariantAttributes` on a declaration as LLVM reads it."""
    module = ir.Module(name="llvm_backend.vector_math.probe")
    unary = ir.FunctionType(ir.DoubleType(), [ir.DoubleType()])
    ir.Function(module, unary, "log1p").attributes.add("nounwind")
    ir.Function(module, unary, "expm1")
    declare_vector_variants(module)
    lines = [line for line in str(module).splitlines() if line.startswith("declare")]
    expected = {name: f'"{_ATTRIBUTE}"="_ZGV_LLVM_N4v_{name}({variant_name(name, 4)})"' for name in ("log1p", "expm1")}
    rendered = len(lines) == 2 and all(
        any(f'@"{name}"(' in line and text in line for line in lines) for name, text in expected.items()
    )
    if not rendered or not any("nounwind" in line for line in lines):
        raise ImportError(
            "llvm_backend_intrinsics.vector_math: llvmlite no longer renders a declaration's attributes through "
            f"FunctionAttributes._to_list as this module expects; the declarations read {lines!r}"
        )


_check_rendering()
