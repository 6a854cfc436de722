"""The compiled function of the LLVM mode: PyTensor's `Function`, safe to call from several threads.

PyTensor's ``Function.__call__`` writes its arguments into the input storage cells it shares with the linker's
thunk, calls the thunk, which reads them back, and then empties the cells. Two threads calling one function
interleave those steps wherever CPython switches threads: one thread's call reads the other's arguments (a
wrong value, silently) or cells the other has emptied already. A 60-scalar graph called from 4 threads got
about one of each per 4,000 calls. `LLVMFunction` makes each call one critical section of the function, so a
call sees only its own arguments. It costs no parallelism: numba's compiled code holds the GIL, so calls from
Python threads never ran at once. The lock is re-entrant: a call made from inside the function's own call (an
op's ``perform`` calling it) goes on as stock's would instead of deadlocking.

Every `Mode` whose linker is ours makes them, a plain ``Mode(linker="llvm")`` and the one PyMC's ``compile``
rebuilds on our linker too: ``Mode.function_maker`` is `function_maker` (``llvm_functions`` in
``llvm_backend.process``).

``fn.vm.jit_fn`` shares no state between calls (it packs its arguments on its own stack) and needs no lock:
nutpie's chains call it from their own threads.
"""

import threading

from pytensor.compile.executor import Function
from pytensor.compile.maker import FunctionMaker

from llvm_backend.linker import LLVMLinker

__all__ = ["LLVMFunction", "LLVMFunctionMaker", "function_maker"]


class LLVMFunction(Function):
    """A `Function` whose calls hold a lock of its own: the thread that sets its inputs is the one whose
    call reads them. It pickles as PyTensor's `Function` does (``pickle_llvm_function`` in
    ``llvm_backend.process``: copyreg keys PyTensor's pickling by the exact class)."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.call_lock = threading.RLock()

    def __call__(self, *args, **kwargs):
        with self.call_lock:
            return super().__call__(*args, **kwargs)


class LLVMFunctionMaker(FunctionMaker):
    """PyTensor's `FunctionMaker`, making `LLVMFunction`\\ s unless told otherwise (``Function.copy`` passes
    the class of the function it copies)."""

    def __init__(self, *args, function_class=LLVMFunction, **kwargs):
        super().__init__(*args, function_class=function_class, **kwargs)


def function_maker(mode):
    """``Mode.function_maker`` while the package is imported: `LLVMFunctionMaker` for a mode whose linker is an
    `LLVMLinker`, PyTensor's `FunctionMaker` for any other (a subclass's own, such as DebugMode's, still wins)."""
    return LLVMFunctionMaker if isinstance(mode.linker, LLVMLinker) else FunctionMaker
