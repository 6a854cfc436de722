"""Where each of the LLVM mode's rewrites runs, recorded where the rewrite is defined.

A rewrite module registers its rewrite with `register_llvm_rewrite`, naming where it runs: in PyTensor's ``optdb``
(`OPTDB`), at a position among its passes, or in one of the mode's two databases, at a position within it:
`llvm_rewrites_before_fusion` (``optdb`` position 48.5) and `llvm_rewrites` (49.4), which are themselves entries
of ``optdb``. A rewrite is registered in our databases at once, under the tags ``fast_run`` and `REWRITE_TAG`. An
``optdb`` entry is only recorded here: ``llvm_backend.process`` makes each an ``OptdbRegistration`` under
`REWRITE_TAG`, which ``import llvm_backend`` applies and ``revert_all`` undoes, so no query without our tag (the
LLVM linker's) sees our rewrites.

`RECORDS` holds every registration by name, a name only once; `in_running_order` lists them as a query including
our tag runs them, as ``llvm-backend rewrites`` prints them.
"""

import inspect
import re
from collections.abc import Callable
from dataclasses import dataclass

from pytensor.graph.rewriting.basic import GraphRewriter, NodeRewriter, in2out
from pytensor.graph.rewriting.db import SequenceDB

__all__ = [
    "OPTDB",
    "PRE_FUSION_NAME",
    "RECORDS",
    "REWRITES_NAME",
    "REWRITE_TAG",
    "RewriteRecord",
    "in_running_order",
    "llvm_rewrites",
    "llvm_rewrites_before_fusion",
    "register_llvm_rewrite",
]

REWRITE_TAG = "llvm_backend"
"""The tag of our rewrites in PyTensor's ``optdb``; only the LLVM mode (its linker's ``required_rewrites``) requests
it."""
OPTDB = "optdb"
"""The database name of a rewrite registered in PyTensor's ``optdb`` itself."""
PRE_FUSION_NAME = "llvm_backend_rewrites_before_fusion"
"""The name of `llvm_rewrites_before_fusion` in ``optdb``, and the database name of its rewrites."""
REWRITES_NAME = "llvm_backend_rewrites"
"""The name of `llvm_rewrites` in ``optdb``, and the database name of its rewrites."""

llvm_rewrites_before_fusion = SequenceDB()
"""The LLVM mode's rewrites that run before elemwise fusion, in ``optdb`` as `PRE_FUSION_NAME`."""
llvm_rewrites = SequenceDB()
"""The LLVM mode's rewrites that run after elemwise fusion, in ``optdb`` as `REWRITES_NAME`."""

_DATABASES: dict[str, SequenceDB] = {PRE_FUSION_NAME: llvm_rewrites_before_fusion, REWRITES_NAME: llvm_rewrites}


@dataclass(frozen=True)
class RewriteRecord:
    """Rewrite ``name``, registered in ``database`` (`OPTDB` or one of our databases' names) at ``position``:
    ``rewriter`` is what the database holds, ``module`` the module defining it, ``doc`` what it does, and
    ``together_with`` the names of the node rewriters run in one pass with it. An ``optdb`` entry also says why
    it runs at that position (``placement``)."""

    name: str
    database: str
    position: float
    rewriter: GraphRewriter | SequenceDB
    module: str
    doc: str
    together_with: tuple[str, ...] = ()
    placement: str = ""

    @property
    def tags(self) -> tuple[str, ...]:
        """The tags its database holds it under: `REWRITE_TAG` in ``optdb``, with ``fast_run`` in ours."""
        return (REWRITE_TAG,) if self.database == OPTDB else ("fast_run", REWRITE_TAG)

    @property
    def summary(self) -> str:
        """The first sentence of ``doc``, on one line."""
        text = " ".join(self.doc.split())
        return re.split(r"(?<=\.)\s", text, maxsplit=1)[0]


RECORDS: dict[str, RewriteRecord] = {}
"""Every registration of the LLVM mode's rewrites, by name; importing ``llvm_backend.rewrites`` fills it."""


def _record(record: RewriteRecord) -> None:
    """Add ``record`` to `RECORDS` and its rewriter to its database if it is one of ours; a name registered
    already, or a database that is none of ours nor ``optdb``, is refused and nothing is changed."""
    previous = RECORDS.get(record.name)
    if previous is not None:
        raise ValueError(
            f"llvm_backend: a rewrite named {record.name!r} is registered already "
            f"(in {previous.database} at {previous.position}, by {previous.module})"
        )
    if record.database != OPTDB and record.database not in _DATABASES:
        raise ValueError(
            f"llvm_backend: no rewrite database {record.database!r} (databases: {OPTDB}, {', '.join(_DATABASES)})"
        )
    if record.database in _DATABASES:
        _DATABASES[record.database].register(record.name, record.rewriter, *record.tags, position=record.position)
    RECORDS[record.name] = record


def register_llvm_rewrite(
    database: str,
    *,
    position: float,
    name: str | None = None,
    together_with: tuple[NodeRewriter, ...] = (),
    placement: str = "",
) -> Callable:
    """A decorator registering a rewrite of the LLVM mode in ``database`` (`OPTDB`, `PRE_FUSION_NAME` or
    `REWRITES_NAME`) at ``position`` as ``name``, and returning the rewrite unchanged.

    A node rewriter (``@node_rewriter``'s) runs as ``in2out(rewriter, *together_with)``, named after it unless
    ``name`` is given; a `GraphRewriter` runs as itself, and needs a ``name``. Its docstring (a node rewriter's
    function's) is the record's ``doc``; an ``optdb`` entry also needs ``placement``, why it runs at ``position``.
    A name registered already, a rewrite without a name or docstring, or an ``optdb`` entry without its placement
    is refused with a ValueError, and nothing is registered."""

    def register(rewriter: NodeRewriter | GraphRewriter) -> NodeRewriter | GraphRewriter:
        defined = getattr(rewriter, "fn", rewriter)
        doc = inspect.getdoc(defined)
        registered_name = name or getattr(rewriter, "__name__", None)
        if not registered_name or not doc:
            raise ValueError(f"llvm_backend: a rewrite needs a name and a docstring: {rewriter!r}")
        if together_with and not isinstance(rewriter, NodeRewriter):
            raise TypeError(f"llvm_backend: only node rewriters run together with others, not {rewriter!r}")
        if database == OPTDB and not placement:
            raise ValueError(f"llvm_backend: {registered_name} in optdb needs its placement")
        if isinstance(rewriter, NodeRewriter):
            registered = in2out(rewriter, *together_with, name=registered_name)
        else:
            registered = rewriter
        record = RewriteRecord(
            name=registered_name,
            database=database,
            position=position,
            rewriter=registered,
            module=defined.__module__,
            doc=doc,
            together_with=tuple(str(other) for other in together_with),
            placement=placement,
        )
        _record(record)
        return rewriter

    return register


def in_running_order() -> list[RewriteRecord]:
    """`RECORDS` in the order a query including our tag runs them: by ``optdb`` position, each of our databases
    followed by its rewrites, by their position within it."""

    def key(record: RewriteRecord) -> tuple:
        if record.database == OPTDB:
            return (record.position, 0, 0.0, record.name)
        return (RECORDS[record.database].position, 1, record.position, record.name)

    return sorted(RECORDS.values(), key=key)


_record(
    RewriteRecord(
        name=PRE_FUSION_NAME,
        database=OPTDB,
        position=48.5,
        rewriter=llvm_rewrites_before_fusion,
        module=__name__,
        doc="The LLVM mode's rewrites to run before elemwise fusion, which folds what they leave into its loops.",
        placement="after ``add_mul_fusion`` (48) has flattened a linear predictor's sum into one ``Add``, before "
        "elemwise fusion (49).",
    )
)
_record(
    RewriteRecord(
        name=REWRITES_NAME,
        database=OPTDB,
        position=49.4,
        rewriter=llvm_rewrites,
        module=__name__,
        doc="The LLVM mode's rewrites to run on fused nodes.",
        placement="after elemwise fusion (49), so they see fused nodes, before the destroy handler (49.5) and the "
        "inplace rewrites, so what they produce can still be made inplace.",
    )
)
