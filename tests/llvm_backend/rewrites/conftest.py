import pytest


@pytest.fixture
def graph_calls(monkeypatch):
    """``graph_calls(owner, name)``: the graphs each later call of method ``owner.name(self, fgraph)`` is given, in a
    list that grows as they are made; the method itself still runs."""

    def count(owner, name: str) -> list:
        calls = []
        method = getattr(owner, name)

        def counted(self, fgraph):
            calls.append(fgraph)
            return method(self, fgraph)

        monkeypatch.setattr(owner, name, counted)
        return calls

    return count
