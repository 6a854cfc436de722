import pytest

from llvm_backend import rewrite_cache
from llvm_backend.rewrite_cache import RewriteCache


@pytest.fixture
def cache(tmp_path, monkeypatch):
    """A fresh, empty cache for the LLVM mode."""
    fresh = RewriteCache(tmp_path / "rewrites")
    monkeypatch.setattr(rewrite_cache.store, "DEFAULT", fresh)
    monkeypatch.delenv("LLVM_BACKEND_REWRITE_CACHE", raising=False)
    return fresh
