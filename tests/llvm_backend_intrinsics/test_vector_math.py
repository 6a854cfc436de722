import re
from pathlib import Path

import llvmlite.binding as llvm
import numpy as np
import pytest
from llvmlite import ir
from numba import njit
from numba.core import cgutils
from numba.extending import intrinsic

from llvm_backend_intrinsics.loops import LoopOutput, LoopSpec, node_loop_intrinsic
from llvm_backend_intrinsics.vector_math import (
    VECTOR_MATH_FUNCTIONS,
    declare_math_of,
    declare_vector_variants,
    variant_name,
)

RNG = np.random.default_rng(7)
HOST_HAS_AVX2 = bool(llvm.get_host_cpu_features().get("avx2", False))


def _declaring(*declarations) -> ir.Module:
    """A module declaring each ``(name, return type, argument types)``."""
    module = ir.Module(name="declarations")
    for name, returned, arguments in declarations:
        ir.Function(module, ir.FunctionType(returned, arguments), name)
    return module


def _declaration_line(module: ir.Module, name: str) -> str:
    [line] = [line for line in str(module).splitlines() if line.startswith("declare") and f'@"{name}"(' in line]
    return line


@pytest.mark.parametrize(("name", "element", "lanes"), [("log1p", ir.DoubleType(), 4), ("erff", ir.FloatType(), 8)])
def test_a_math_declaration_names_the_variant_it_defines_and_the_module_verifies(name, element, lanes):
    module = _declaring((name, element, [element]), ("exp", element, [element]))
    declare_vector_variants(module)
    llvm.parse_assembly(str(module)).verify()
    attribute = f'"vector-function-abi-variant"="_ZGV_LLVM_N{lanes}v_{name}({variant_name(name, lanes)})"'
    assert attribute in _declaration_line(module, name)
    variant = module.globals[variant_name(name, lanes)]
    assert variant.linkage == "weak_odr"
    assert str(variant.ftype) == f"<{lanes} x {element}> (<{lanes} x {element}>)"
    assert len(re.findall(rf'call [^\n]*@"{name}"\(', str(variant))) == lanes
    assert "vector-function-abi-variant" not in _declaration_line(module, "exp")


def test_a_module_is_given_its_variants_once():
    d = ir.DoubleType()
    module = _declaring(("expm1", d, [d]))
    declare_vector_variants(module)
    once = str(module)
    declare_vector_variants(module)
    assert str(module) == once


def test_a_declaration_of_another_signature_is_left_as_it_is():
    d, i = ir.DoubleType(), ir.IntType(64)
    module = _declaring(("log1p", d, [d, d]), ("erf", i, [i]))
    before = str(module)
    declare_vector_variants(module)
    assert str(module) == before


class _Library:
    """What `declare_math_of` reads of a numba code library: its IR."""

    def __init__(self, text: str):
        self.text = text

    def get_llvm_str(self) -> str:
        return self.text


def test_what_a_linked_library_declares_is_declared_in_the_module_as_it_declares_it():
    library = _Library(
        "declare double @lgamma(double) local_unnamed_addr #2\n"
        'declare float @"log1pf"(float %".1")\n'
        "declare double @lgammaf(double)\n"
        "declare double @exp(double)\n"
        "define double @erf(double %x) {\n  ret double %x\n}\n"
    )
    module = ir.Module(name="graph")
    declare_math_of(module, library)
    assert {name: str(module.globals[name].ftype) for name in module.globals} == {
        "lgamma": "double (double)",
        "log1pf": "float (float)",
    }
    declare_vector_variants(module)
    llvm.parse_assembly(str(module)).verify()
    assert variant_name("lgamma", 4) in module.globals and variant_name("log1pf", 8) in module.globals


def test_the_table_holds_c_functions_numba_calls_rather_than_intrinsics():
    """numba lowers each through ``unary_math_extern``, a call to the C library by the name the table holds."""
    import numba.cpython.mathimpl as mathimpl

    source = Path(mathimpl.__file__).read_text()
    for name in VECTOR_MATH_FUNCTIONS:
        assert re.search(rf'unary_math_extern\(math\.\w+, "{name}f", "{name}"', source), name


@intrinsic
def _log1p_ratio(typingctx, x, s):
    """``log1p(x) / s + x / (s + x)``, ``log1p`` declared as numba declares it (``unary_math_extern``)."""

    def codegen(context, builder, signature, args):
        value, scale = args
        name = "log1p" if value.type == ir.DoubleType() else "log1pf"
        log1p = cgutils.insert_pure_function(builder.module, ir.FunctionType(value.type, [value.type]), name=name)
        ratio = builder.fdiv(builder.call(log1p, [value]), scale)
        return builder.fadd(ratio, builder.fdiv(value, builder.fadd(scale, value)))

    return x(x, s), codegen


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("n", [0, 1, 1001])
def test_a_loop_calling_log1p_vectorizes_its_body_and_keeps_the_scalar_values(dtype, n):
    """With ``log1p`` an opaque call, LLVM kept the loop scalar, its divisions too; through the variant it
    vectorizes where the host's vectors make it pay (AVX2 and wider), and each element is the scalar value."""
    element = np.dtype(dtype)
    node = node_loop_intrinsic(LoopSpec(((False,), None), (LoopOutput(element),)), _log1p_ratio)

    @njit
    def run(x, s):
        return node(x, s)

    x, s = RNG.uniform(0.0, 3.0, n).astype(dtype), element.type(1.7)
    np.testing.assert_allclose(run(x, s), np.log1p(x) / s + x / (s + x), rtol=1e-6 if dtype == "float32" else 1e-15)
    [signature] = run.signatures
    module = run.overloads[signature].library.get_llvm_str()
    scalar, kind = ("log1p", "double") if dtype == "float64" else ("log1pf", "float")
    vector_calls = re.findall(rf'call [^\n]*<(\d+) x {kind}> @"?llvm_backend\.vector\.{scalar}\.(\d+)"?\(', module)
    if HOST_HAS_AVX2:
        assert vector_calls and all(lanes == named for lanes, named in vector_calls)
