"""``llvm_backend.changes``: a change made and undone exactly, and one touching another library's internals made
only when the library has the release series and the shape it was written against."""

import importlib
import sys
import warnings

import numpy as np
import pytest

from llvm_backend.changes import ABSENT, AttributeChange, EntryChange, ImportedAttributeChange, Registration, Seam


def _module(tmp_path, monkeypatch, name):
    (tmp_path / f"{name}.py").write_text("def f(x):\n    return x + 1\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, name, raising=False)


def _doubled(original):
    def f(x):
        return 2 * original(x)

    return f


def test_an_imported_attribute_change_waits_for_its_module_and_reverts(tmp_path, monkeypatch):
    _module(tmp_path, monkeypatch, "later_module")
    change = ImportedAttributeChange("doubled", "f doubled", "later_module", "f", _doubled)
    finders = list(sys.meta_path)
    assert change.apply()
    assert "later_module" not in sys.modules
    module = importlib.import_module("later_module")
    assert module.f(1) == 4
    assert module.__loader__.get_source("later_module").startswith("def f")
    assert change.revert()
    assert module.f(1) == 2
    assert sys.meta_path == finders


def test_an_imported_attribute_change_on_a_module_imported_already_applies_at_once(tmp_path, monkeypatch):
    _module(tmp_path, monkeypatch, "earlier_module")
    module = importlib.import_module("earlier_module")
    change = ImportedAttributeChange("doubled", "f doubled", "earlier_module", "f", _doubled)
    finders = list(sys.meta_path)
    assert change.apply()
    assert module.f(1) == 4
    assert sys.meta_path == finders
    assert change.revert()
    assert module.f(1) == 2


def test_an_imported_attribute_change_resolves_its_wrapper_by_name_when_made(tmp_path, monkeypatch):
    _module(tmp_path, monkeypatch, "named_module")
    change = ImportedAttributeChange("doubled", "f doubled", "named_module", "f", f"{__name__}:_doubled")
    assert change.apply()
    try:
        assert importlib.import_module("named_module").f(1) == 4
    finally:
        change.revert()


def _never(current):
    return f"it holds {current!r}"


def test_a_change_whose_seam_does_not_match_is_not_made_and_says_why_once():
    table = {"key": 1}
    change = EntryChange("entry", "an entry", table, "key", 2, seam=Seam("numpy", np.__version__, _never))
    with pytest.warns(RuntimeWarning, match=rf"numpy {np.__version__}: it holds 1: entry is not applied"):
        assert not change.apply()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert not change.apply()
    assert table == {"key": 1}
    assert not change.applied and change.disabled == f"numpy {np.__version__}: it holds 1"


def test_a_library_of_another_release_series_disables_the_change():
    class Target:
        value = 1

    seam = Seam("numpy", "0.1", lambda current: None)
    change = AttributeChange("value", "a value", Target, "value", 2, seam=seam)
    with pytest.warns(RuntimeWarning, match=rf"numpy {np.__version__} is not 0.1.x"):
        assert not change.apply()
    assert Target.value == 1


def test_a_matching_seam_is_checked_on_what_the_change_replaces():
    seen = []

    def shape(current):
        seen.append(current)
        return None

    table = {}
    change = EntryChange("entry", "an entry", table, "key", 2, seam=Seam("numpy", np.__version__, shape))
    assert change.apply()
    assert table == {"key": 2} and seen == [ABSENT]
    assert change.revert()
    assert table == {}


def test_an_imported_attribute_change_checks_its_seam_on_the_module_s_attribute(tmp_path, monkeypatch):
    _module(tmp_path, monkeypatch, "checked_module")
    seam = Seam("numpy", np.__version__, lambda current: "not the f expected")
    change = ImportedAttributeChange("doubled", "f doubled", "checked_module", "f", _doubled, seam=seam)
    assert change.apply()
    try:
        with pytest.warns(RuntimeWarning, match="not the f expected: doubled is not applied"):
            module = importlib.import_module("checked_module")
        assert module.f(1) == 2
    finally:
        change.revert()
    assert module.f(1) == 2
    assert sys.modules["checked_module"] is module


def test_a_registration_goes_through_the_library_s_own_function_and_reverts():
    table, calls = {}, []

    def register(key, value):
        calls.append((key, value))
        table[key] = value

    change = Registration("entry", "an entry", register, table, "key", 2)
    assert change.apply() and not change.apply()
    assert calls == [("key", 2)] and table == {"key": 2}
    assert change.revert() and table == {}
