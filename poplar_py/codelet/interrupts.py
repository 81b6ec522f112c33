"""Ctrl-C while kernels run: checked kernels stop, and the run raises KeyboardInterrupt.

A kernel runs with the GIL released, out of reach of Python's own SIGINT handling (a flag the
interpreter looks at between bytecodes). While an Engine runs, :func:`interruptible` puts a small
native handler in front of Python's: it sets the process's stop flag, which checked kernels read
where they check their cycle budget (:mod:`codelet.budget`), then passes the signal on to Python's
handler, so that Python code running meanwhile (a stream callback) is interrupted as usual and
Python raises KeyboardInterrupt as soon as the kernel has returned. The handler is a few LLVM
instructions, compiled once per process by the codelets' JIT; where a process has no
``sigaction`` (or SIGINT is ignored or left to its default), nothing is installed.
"""

from __future__ import annotations

import contextlib
import ctypes
import functools
import signal
import threading
from collections.abc import Callable, Iterator

from . import jit

_SYMBOL = "poplar_py_on_sigint"
#: room for the C library's ``struct sigaction`` (152 bytes on Linux, 16 on macOS)
_ACTION_BYTES = 512
_SIG_DFL, _SIG_IGN = 0, 1

#: [0] the stop flag kernels read, [1] the handler the signal is passed on to
_slots = (ctypes.c_int64 * 2)()
_lock = threading.Lock()
_depth = 0  # runs under way (an Engine may run inside another's stream callback)
_saved = ctypes.create_string_buffer(_ACTION_BYTES)  # the action before the outermost run
_handler: int | None = None


def stop_address() -> int:
    """The address of the stop flag (an int64, non-zero once Ctrl-C was pressed in a run)."""
    return ctypes.addressof(_slots)


@functools.cache
def _sigaction() -> Callable[..., int] | None:
    """The C library's ``sigaction``, if there is one."""
    return getattr(ctypes.CDLL(None), "sigaction", None)


def _compiled_handler() -> int:
    """The native handler: set the flag, call the handler in slot 1."""
    global _handler
    if _handler is None:
        triple, layout = jit.target_info()
        flag, forward = stop_address(), stop_address() + 8
        text = f"""
target triple = "{triple}"
target datalayout = "{layout}"

define void @{_SYMBOL}(i32 %sig) {{
  store atomic i64 1, ptr inttoptr (i64 {flag} to ptr) monotonic, align 8
  %address = load atomic i64, ptr inttoptr (i64 {forward} to ptr) monotonic, align 8
  %python = inttoptr i64 %address to ptr
  call void %python(i32 %sig)
  ret void
}}
"""
        obj = jit.compile_ir(text, 2)
        _handler = jit.load_object(obj, f"{_SYMBOL}_{flag}", _SYMBOL)
    return _handler


def _install(action: Callable[..., int]) -> bool:
    """Put the handler in front of the current one; False (nothing done) if SIGINT has no handler
    function to pass it on to."""
    current = ctypes.create_string_buffer(_ACTION_BYTES)
    if action(signal.SIGINT, None, current) != 0:
        return False
    python = ctypes.c_void_p.from_buffer(current).value or 0
    if python in (_SIG_DFL, _SIG_IGN):
        return False
    ctypes.memmove(_saved, current, _ACTION_BYTES)
    _slots[0], _slots[1] = 0, python
    ctypes.c_void_p.from_buffer(current).value = _compiled_handler()  # the same mask and flags
    return action(signal.SIGINT, current, None) == 0


def _restore(action: Callable[..., int]) -> None:
    """Put back the saved action, unless someone replaced ours meanwhile."""
    replaced = ctypes.create_string_buffer(_ACTION_BYTES)
    action(signal.SIGINT, _saved, replaced)
    if ctypes.c_void_p.from_buffer(replaced).value != _handler:
        action(signal.SIGINT, replaced, None)


@contextlib.contextmanager
def interruptible() -> Iterator[None]:
    """Run the body with Ctrl-C stopping checked kernels (and raising KeyboardInterrupt in Python,
    as before); the stop flag starts clear in the outermost such run."""
    global _depth
    action = _sigaction()
    if action is None:
        yield
        return
    with _lock:
        installed = _depth > 0 or _install(action)
        if installed:
            _depth += 1
    try:
        yield
    finally:
        if installed:
            with _lock:
                _depth -= 1
                if _depth == 0:
                    _restore(action)
