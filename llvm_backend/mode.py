"""The PyTensor mode "LLVM": our linker plus our rewrites, and the names it is registered under on import
(``llvm_backend.process`` registers them)."""

from pytensor.compile.mode import Mode
from pytensor.graph.rewriting.basic import in2out
from pytensor.graph.rewriting.db import RewriteDatabaseQuery, SequenceDB
from pytensor.tensor.rewriting.basic import constant_folding
from pytensor.tensor.rewriting.math import local_sum_prod_of_mul_or_div

from llvm_backend.linker import REWRITE_TAG, LLVMLinker
from llvm_backend.rewrites.columns import data_columns
from llvm_backend.rewrites.hoist import hoist_invariants
from llvm_backend.rewrites.logistic import share_logistic_exps
from llvm_backend.rewrites.made_vectors import elemwise_of_make_vector, join_of_make_vector
from llvm_backend.rewrites.products import product_of_invariant_factors
from llvm_backend.rewrites.reductions import reduce_make_vector
from llvm_backend.rewrites.sums import sum_of_invariant_terms
from llvm_backend.rewrites.switches import sum_of_scalar_switch

__all__ = [
    "EXPOSE_SCALARS_NAME",
    "LINKER_NAME",
    "LLVM",
    "MODE_NAME",
    "PRE_FUSION_NAME",
    "REWRITES_NAME",
    "SUPERVISOR_NAME",
    "llvm_rewrites",
    "llvm_rewrites_before_fusion",
]

MODE_NAME = "LLVM"
LINKER_NAME = "llvm"
REWRITES_NAME = "llvm_backend_rewrites"
SUPERVISOR_NAME = "llvm_backend_indexed_supervisor"
EXPOSE_SCALARS_NAME = "llvm_backend_expose_scalar_inputs"
PRE_FUSION_NAME = "llvm_backend_rewrites_before_fusion"

llvm_rewrites_before_fusion = SequenceDB()
"""Rewrites run only in the LLVM mode, before elemwise fusion: products by data matrices as suits their width,
sums gated by one condition as its switch of the sum, a sum's terms that do not vary along its axes added once
(with PyTensor's ``local_sum_prod_of_mul_or_div`` taking out the factors that do not vary of what is left, and
its ``constant_folding`` folding a factor taken out of a constant, such as ``Squeeze([-0.5])``), a
product's factors that do not vary along the loop multiplied together once, elementwise ops and joins of made
vectors item by item."""
llvm_rewrites_before_fusion.register("data_columns", data_columns, "fast_run", REWRITE_TAG, position=0.5)
for position, name, node_rewriters in (
    (0.6, "sum_of_scalar_switch", (sum_of_scalar_switch,)),
    (0.65, "sum_of_invariant_terms", (sum_of_invariant_terms, local_sum_prod_of_mul_or_div, constant_folding)),
    (0.68, "product_of_invariant_factors", (product_of_invariant_factors,)),
    (0.7, "made_vectors", (elemwise_of_make_vector, join_of_make_vector)),
):
    llvm_rewrites_before_fusion.register(
        name, in2out(*node_rewriters, name=name), "fast_run", REWRITE_TAG, position=position
    )

llvm_rewrites = SequenceDB()
"""Rewrites run only in the LLVM mode (anything using `LLVMLinker`)."""
llvm_rewrites.register(
    "hoist_invariants", in2out(hoist_invariants, name="hoist_invariants"), "fast_run", REWRITE_TAG, position=0.5
)
llvm_rewrites.register(
    "share_logistic_exps",
    in2out(share_logistic_exps, name="share_logistic_exps"),
    "fast_run",
    REWRITE_TAG,
    position=0.6,
)
llvm_rewrites.register(
    "reduce_make_vector",
    in2out(reduce_make_vector, name="reduce_make_vector"),
    "fast_run",
    REWRITE_TAG,
    position=0.7,
)


LLVM = Mode(
    linker=LLVMLinker(),
    optimizer=RewriteDatabaseQuery(include=["fast_run", "numba", REWRITE_TAG]),
)
