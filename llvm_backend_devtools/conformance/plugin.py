"""pytest plugin: PyTensor's ``tests/link/numba`` suite with the LLVM mode in place of stock NUMBA.

Enable it with ``-p llvm_backend_devtools.conformance.plugin --llvm-mode``. The suite reaches the numba
backend in four ways, and each is redirected to our `LLVMLinker`:

- ``mode="NUMBA"`` and ``get_mode("NUMBA")``: ``predefined_modes["NUMBA"]`` becomes our ``LLVM`` mode;
- ``Mode("numba", ...)`` and ``Mode()`` under the default ``linker=auto``: ``predefined_linkers["numba"]``
  becomes an `LLVMLinker`;
- ``Mode(NumbaLinker(), ...)`` objects built at import time (``numba_mode``, ``numba_inplace_mode`` of
  ``tests/link/numba/test_basic.py``, their copies in the modules that import them, the default
  arguments of ``compare_numba_and_py`` and ``eval_python_only``): after collection, every such value
  among the suite's module globals and its functions' default arguments becomes the same mode
  (same rewrite query) with an `LLVMLinker`;
- ``NumbaLinker`` called inside a test (``Mode(linker=NumbaLinker(), ...)``): the suite modules' global
  name ``NumbaLinker`` is bound to `LLVMLinker`.

The suite's other uses of ``NumbaLinker`` stay true: `LLVMLinker` subclasses it. At the end of the
session the plugin prints how many graphs `LLVMLinker` (and stock `NumbaLinker`) compiled and fails
the session if `LLVMLinker` compiled fewer than ``--llvm-min-compiled`` (default 1).

Loading the plugin imports PyTensor before the suite's root ``conftest.py`` appends its flags to
``PYTENSOR_FLAGS`` at session start, too late for PyTensor to read them; the plugin stops the session
if that happened. The conformance runner sets the suite's environment before starting pytest.
"""

import os
import sys
from functools import wraps
from pathlib import Path
from types import FunctionType, ModuleType

import pytest
from pytensor.compile import mode as pytensor_mode
from pytensor.compile.mode import Mode, get_mode
from pytensor.configparser import parse_config_string
from pytensor.link.numba.linker import NumbaLinker

from llvm_backend import rewrite_cache
from llvm_backend.linker import LLVMLinker
from llvm_backend.mode import LLVM
from llvm_backend.rewrites.registry import REWRITE_TAG
from llvm_backend_devtools.conformance import SUMMARY_PREFIX

__all__ = ["SUMMARY_PREFIX", "LLVMSubstitution"]

FLAGS_AT_IMPORT = parse_config_string(os.environ.get("PYTENSOR_FLAGS", ""))
"""The PyTensor flags PyTensor was imported with (it was imported by this module at the latest)."""


def pytest_addoption(parser):
    """``--llvm-mode`` and ``--llvm-min-compiled``."""
    group = parser.getgroup("llvm-mode", "run PyTensor's numba suite under the LLVM mode")
    group.addoption("--llvm-mode", action="store_true", help="substitute the LLVM mode for the numba mode")
    group.addoption(
        "--llvm-min-compiled",
        type=int,
        default=1,
        help="fail the session if LLVMLinker compiled fewer graphs than this (default 1)",
    )


def pytest_configure(config):
    """Register the substitution when ``--llvm-mode`` is given."""
    if config.getoption("llvm_mode"):
        config.pluginmanager.register(LLVMSubstitution(config), "llvm-substitution")


class LLVMSubstitution:
    """The active plugin: patches PyTensor's registries and the suite's modules, counts compilations."""

    def __init__(self, config):
        self.config = config
        self.minimum = config.getoption("llvm_min_compiled")
        self.compiled = {LLVMLinker: 0, NumbaLinker: 0}
        self.replacements: dict[Mode, Mode] = {}
        self.too_few = False
        self.patch = pytest.MonkeyPatch()
        self.patch.setitem(pytensor_mode.predefined_modes, "NUMBA", LLVM)
        self.patch.setitem(pytensor_mode.predefined_linkers, "numba", LLVMLinker())
        for linker_class in self.compiled:
            self.patch.setattr(linker_class, "fgraph_convert", self.counting(linker_class))

    def counting(self, linker_class):
        """``linker_class.fgraph_convert``, counting its calls."""
        convert = linker_class.fgraph_convert

        @wraps(convert)
        def fgraph_convert(linker, *args, **kwargs):
            self.compiled[linker_class] += 1
            return convert(linker, *args, **kwargs)

        return fgraph_convert

    def pytest_unconfigure(self):
        """Undo the patches."""
        self.patch.undo()

    @pytest.hookimpl(trylast=True)
    def pytest_sessionstart(self, session):
        """Stop if the suite's conftest set PyTensor flags after PyTensor read them."""
        flags = parse_config_string(os.environ.get("PYTENSOR_FLAGS", ""))
        late = {key: value for key, value in flags.items() if FLAGS_AT_IMPORT.get(key) != value}
        if late:
            pytest.exit(
                f"PYTENSOR_FLAGS {late} were set after PyTensor was imported; "
                "set them in the environment before starting pytest",
                returncode=pytest.ExitCode.USAGE_ERROR,
            )

    def pytest_collection_modifyitems(self, session, config, items):
        """Substitute in every module of the suite, now that collection has imported them all."""
        suite = Path(config.rootpath, "tests")
        item_modules = {item.module for item in items if getattr(item, "module", None) is not None}
        for module in list(sys.modules.values()):
            if module in item_modules or in_directory(module, suite):
                self.substitute_in(module)

    def substitute_in(self, module: ModuleType) -> None:
        """Replace stock numba values among a module's globals and its own functions' defaults."""
        for name, value in list(vars(module).items()):
            if name == "eval_python_only" and isinstance(value, FunctionType):
                setattr(module, name, self.stock_python_only(value))
                continue
            replacement = self.llvm_equivalent(value)
            if replacement is not value:
                setattr(module, name, replacement)
            elif isinstance(value, FunctionType) and value.__module__ == module.__name__:
                self.substitute_defaults(value)

    def substitute_defaults(self, function: FunctionType) -> None:
        """Replace stock numba modes among ``function``'s default arguments."""
        if function.__defaults__:
            function.__defaults__ = tuple(map(self.llvm_equivalent, function.__defaults__))
        if function.__kwdefaults__:
            function.__kwdefaults__ = {k: self.llvm_equivalent(v) for k, v in function.__kwdefaults__.items()}

    def stock_python_only(self, eval_python_only: FunctionType):
        """``eval_python_only`` run with the stock mode whatever mode it is given.

        The suite's ``eval_python_only`` runs the numba implementation as plain Python (``numba_njit``
        and stock's own intrinsics mocked by name) to measure the coverage of stock's dispatch code.
        Our intrinsics have no Python body, so under LLVM that step cannot run; it stays a stock step,
        and the real comparison that follows it runs under LLVM.
        """
        if getattr(eval_python_only, "stock_only", False):
            return eval_python_only

        @wraps(eval_python_only)
        def stock_only(*args, mode=None, **kwargs):
            if mode is not None:
                kwargs["mode"] = stock_equivalent(mode)
            return eval_python_only(*args, **kwargs)

        stock_only.stock_only = True
        return stock_only

    def llvm_equivalent(self, value):
        """`LLVMLinker` for `NumbaLinker`, the same mode with an `LLVMLinker` for a stock numba mode, else ``value``."""
        if value is NumbaLinker:
            return LLVMLinker
        if isinstance(value, Mode) and type(value.linker) is NumbaLinker:
            if value not in self.replacements:
                # with our linker its graphs go through the rewrite cache, as "LLVM"'s do
                self.replacements[value] = type(value)(linker=LLVMLinker(), optimizer=value.provided_optimizer)
            return self.replacements[value]
        return value

    def pytest_sessionfinish(self, session):
        """Fail the session if tests ran but `LLVMLinker` compiled fewer graphs than required."""
        self.too_few = bool(session.testscollected) and self.compiled[LLVMLinker] < self.minimum
        if self.too_few:
            session.exitstatus = pytest.ExitCode.TESTS_FAILED

    def pytest_terminal_summary(self, terminalreporter):
        """Print the compile counts."""
        llvm, stock = self.compiled[LLVMLinker], self.compiled[NumbaLinker]
        terminalreporter.write_line(
            f"{SUMMARY_PREFIX} LLVMLinker compiled {llvm} graphs, stock NumbaLinker compiled {stock}"
        )
        outcomes = ", ".join(f"{outcome} {count}" for outcome, count in sorted(rewrite_cache.outcomes.items()))
        terminalreporter.write_line(f"{SUMMARY_PREFIX} rewrite cache: {outcomes or 'not used'}")
        if self.too_few:
            terminalreporter.write_line(
                f"{SUMMARY_PREFIX} FAILED: fewer than --llvm-min-compiled={self.minimum} graphs "
                "went through LLVMLinker",
                red=True,
            )


def stock_equivalent(mode):
    """``mode`` (a name or a `Mode`) with stock's `NumbaLinker` and without our rewrites, if it uses ours.

    Covers the modes a test derives from the substituted one, e.g. ``numba_mode.including("specialize")``.
    """
    mode = get_mode(mode)
    if not isinstance(mode.linker, LLVMLinker):
        return mode
    return Mode(linker=NumbaLinker(), optimizer=mode.provided_optimizer.excluding(REWRITE_TAG))


def in_directory(module: ModuleType, directory: Path) -> bool:
    """Whether ``module`` was loaded from a file under ``directory``."""
    file = getattr(module, "__file__", None)
    return file is not None and Path(file).is_relative_to(directory)
