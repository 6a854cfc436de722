"""``llvm_backend.rewrites.registry``: every rewrite the LLVM mode runs under our tag has one record, made where the
rewrite is defined; ``llvm-backend rewrites`` lists the records and docs/reference.md holds that list."""

import pytest
from pytensor.compile.mode import get_mode, optdb
from pytensor.graph.rewriting.basic import (
    SequentialGraphRewriter,
    SequentialNodeRewriter,
    WalkingGraphRewriter,
    node_rewriter,
)
from pytensor.graph.rewriting.db import RewriteDatabaseQuery, SequenceDB
from pytensor.tensor.elemwise import Elemwise
from pytensor.tensor.rewriting.basic import constant_folding
from pytensor.tensor.rewriting.math import local_sum_prod_of_mul_or_div

from llvm_backend import process
from llvm_backend.rewrites.hoist import hoist_invariants
from llvm_backend.rewrites.made_vectors import elemwise_of_make_vector, join_of_make_vector
from llvm_backend.rewrites.registry import (
    OPTDB,
    PRE_FUSION_NAME,
    RECORDS,
    REWRITE_TAG,
    REWRITES_NAME,
    in_running_order,
    llvm_rewrites,
    llvm_rewrites_before_fusion,
    register_llvm_rewrite,
)
from llvm_backend.rewrites.sums import sum_of_invariant_terms
from llvm_backend.rewrites.supervisor import SUPERVISOR_NAME, UseIndexedSupervisor
from llvm_backend.tools.cli import main

DATABASES = {OPTDB: optdb, PRE_FUSION_NAME: llvm_rewrites_before_fusion, REWRITES_NAME: llvm_rewrites}


def _names(rewriter) -> set:
    """The names of ``rewriter`` and, for a query's sequence, of everything in it, at every depth."""
    names = {getattr(rewriter, "name", None)}
    if isinstance(rewriter, SequentialGraphRewriter):
        for inner in rewriter.data:
            names |= _names(inner)
    return names


def test_every_rewrite_the_llvm_query_runs_under_our_tag_has_a_record():
    query = get_mode("LLVM").provided_optimizer
    assert REWRITE_TAG in query.include
    without_our_tag = RewriteDatabaseQuery(include=[tag for tag in query.include if tag != REWRITE_TAG])
    # PyTensor's own query (the package wraps optdb.query for ours in the rewrite cache)
    ours = _names(SequenceDB.query(optdb, query)) - _names(SequenceDB.query(optdb, without_our_tag))
    assert ours == set(RECORDS)


def test_each_record_is_what_its_database_holds_at_its_position_under_its_tags():
    for name, record in RECORDS.items():
        database = DATABASES[record.database]
        assert list(database.__db__[name]) == [record.rewriter], name
        assert database.__position__[name] == record.position, name
        assert all(record.rewriter in database.__db__[tag] for tag in record.tags), name
    assert [change.name for change in process.OPTDB_REGISTRATIONS] == [
        record.name for record in in_running_order() if record.database == OPTDB
    ]
    assert all(change in process.CHANGES and change.applied for change in process.OPTDB_REGISTRATIONS)


def test_grouped_node_rewriters_run_in_one_in2out_in_their_order():
    sums = RECORDS["sum_of_invariant_terms"].rewriter
    assert isinstance(sums, WalkingGraphRewriter) and sums.order == "in_to_out"
    assert isinstance(sums.node_rewriter, SequentialNodeRewriter)
    assert sums.node_rewriter.rewrites == (sum_of_invariant_terms, local_sum_prod_of_mul_or_div, constant_folding)
    assert RECORDS["sum_of_invariant_terms"].tags == ("fast_run", REWRITE_TAG)
    made = RECORDS["made_vectors"]
    assert made.rewriter.node_rewriter.rewrites == (elemwise_of_make_vector, join_of_make_vector)
    assert made.together_with == ("join_of_make_vector",) and made.module == "llvm_backend.rewrites.made_vectors"
    assert RECORDS["hoist_invariants"].rewriter.node_rewriter is hoist_invariants


def test_the_rewrites_command_prints_one_row_per_record_in_running_order(capsys):
    assert main(["rewrites"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "| rewrite | database | position | module | what it does |"
    rows = [line.removeprefix("| ").removesuffix(" |").split(" | ") for line in lines[2:]]
    assert sorted(row[0] for row in rows) == sorted(RECORDS)
    outer = None
    for name, database, position, module, does in rows:
        record = RECORDS[name]
        assert (database, float(position), module) == (record.database, record.position, record.module)
        assert does.startswith(record.summary)
        if database == OPTDB:
            assert outer is None or RECORDS[outer].position < record.position
            outer, inner = name, None
        else:
            # after its database's own row, before the next row of optdb
            assert database == outer and (inner is None or inner < record.position)
            inner = record.position
    assert rows[0][0] == SUPERVISOR_NAME


def test_registering_a_name_twice_is_refused_and_changes_nothing():
    records, positions = dict(RECORDS), dict(llvm_rewrites_before_fusion.__position__)
    with pytest.raises(ValueError, match="'hoist_invariants' is registered already"):
        register_llvm_rewrite(PRE_FUSION_NAME, position=0.9)(hoist_invariants)
    with pytest.raises(ValueError, match=f"'{SUPERVISOR_NAME}' is registered already"):
        register_llvm_rewrite(OPTDB, position=1.0, name=SUPERVISOR_NAME, placement="anywhere.")(UseIndexedSupervisor())
    assert RECORDS == records and llvm_rewrites_before_fusion.__position__ == positions


def test_a_registration_that_says_too_little_is_refused():
    with pytest.raises(ValueError, match="no rewrite database 'fusion'"):
        register_llvm_rewrite("fusion", position=0.9, name="nowhere")(hoist_invariants)
    with pytest.raises(ValueError, match="needs a name"):
        register_llvm_rewrite(REWRITES_NAME, position=0.9)(UseIndexedSupervisor())

    @node_rewriter([Elemwise])
    def undocumented(fgraph, node):
        return None

    with pytest.raises(ValueError, match="and a docstring"):
        register_llvm_rewrite(REWRITES_NAME, position=0.9)(undocumented)
    with pytest.raises(ValueError, match="needs its placement"):
        register_llvm_rewrite(OPTDB, position=0.9, name="unplaced")(UseIndexedSupervisor())
    with pytest.raises(TypeError, match="only node rewriters"):
        register_llvm_rewrite(REWRITES_NAME, position=0.9, name="grouped", together_with=(hoist_invariants,))(
            UseIndexedSupervisor()
        )
    assert not {"nowhere", "undocumented", "unplaced", "grouped"} & set(RECORDS)
