"""``llvm-backend --help`` and each subcommand's ``--help`` are plain text, without the reST of docstrings."""

import pytest

from llvm_backend.tools.cli import main

COMMANDS = ("report", "ir", "lowerings", "rewrites", "changes", "cache", "bench", "fuzz")  # built-in ones, then plugins
MARKUP = ("``", ":func:", ":class:", ":meth:", ":mod:")


def help_text(capsys, *argv) -> str:
    with pytest.raises(SystemExit) as stop:
        main([*argv, "--help"])
    assert stop.value.code == 0
    return capsys.readouterr().out


def test_every_subcommand_is_checked(capsys):
    assert "{" + ",".join(COMMANDS) + "}" in help_text(capsys)


@pytest.mark.parametrize("argv", [(), *((command,) for command in COMMANDS)], ids=["llvm-backend", *COMMANDS])
def test_help_has_no_rest_markup(capsys, argv):
    text = help_text(capsys, *argv)
    assert text.startswith(f"usage: {' '.join(('llvm-backend', *argv))} ")
    assert [markup for markup in MARKUP if markup in text] == []
