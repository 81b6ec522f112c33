"""Ctrl-C while kernels run: checked kernels stop, and the run raises KeyboardInterrupt.

A kernel runs with the GIL released, out of reach of Python's own SIGINT handling (a flag the
interpreter looks at between bytecodes). While an Engine runs, :data:`interruptible` puts a small
native handler in front of Python's: it sets the process's stop flag, which checked kernels read
where they check their cycle budget (:mod:`codelet.budget`), then passes the signal on to Python's
handler, so that Python code running meanwhile (a stream callback) is interrupted as usual and
Python raises KeyboardInterrupt as soon as the kernel has returned. The handler is a few LLVM
instructions, compiled once per process by the codelets' JIT; where a process has no
``sigaction`` (or SIGINT is ignored or left to its default), nothing is installed.
"""

from __future__ import annotations

import ctypes
import functools
import signal
import threading
from collections.abc import Callable

from . import jit

_SYMBOL = "poplar_py_on_sigint"
#: room for the C library's ``struct sigaction`` (152 bytes on Linux, 16 on macOS)
_ACTION_BYTES = 512
_SIG_DFL, _SIG_IGN = 0, 1

#: [0] the stop flag kernels read, [1] the handler the signal is passed on to
_slots = (ctypes.c_int64 * 2)()
_STOP = ctypes.addressof(_slots)
_lock = threading.Lock()
_depth = 0  # runs under way (an Engine may run inside another's stream callback, or in threads)
_installed = False  # whether the outermost run put the handler in place
_handler: int | None = None
# sigaction's records, made once (a run takes two calls): ours (Python's mask and flags, our
# handler), the one before the outermost run, and one for what ours replaced
_ours, _saved, _replaced = (ctypes.create_string_buffer(_ACTION_BYTES) for _ in range(3))
_OURS, _SAVED, _REPLACED = (ctypes.addressof(a) for a in (_ours, _saved, _replaced))
# the handler of each (the first member of the C structure)
_SAVED_HANDLER, _REPLACED_HANDLER = (ctypes.c_void_p.from_buffer(a) for a in (_saved, _replaced))
_SIGINT = int(signal.SIGINT)


def stop_address() -> int:
    """The address of the stop flag (an int64, non-zero once Ctrl-C was pressed in a run)."""
    return _STOP


@functools.cache
def _sigaction() -> Callable[..., int] | None:
    """The C library's ``sigaction``, if there is one; the first time, our record is made from
    the action in place (Python's)."""
    try:
        action = getattr(ctypes.CDLL(None), "sigaction", None)
    except (OSError, TypeError):  # no C library to open by that name (Windows)
        return None
    if action is None:
        return None
    action.argtypes, action.restype = (ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p), ctypes.c_int
    if action(_SIGINT, None, _OURS) != 0:
        return None
    _slots[1] = ctypes.c_void_p.from_buffer(_ours).value or 0
    ctypes.c_void_p.from_buffer(_ours).value = _compiled_handler()
    return action


def _compiled_handler() -> int:
    """The native handler: set the flag, call the handler in slot 1 (if there is one)."""
    global _handler
    if _handler is None:
        triple, layout = jit.target_info()
        text = f"""
target triple = "{triple}"
target datalayout = "{layout}"

define void @{_SYMBOL}(i32 %sig) {{
entry:
  store atomic i64 1, ptr inttoptr (i64 {_STOP} to ptr) monotonic, align 8
  %address = load atomic i64, ptr inttoptr (i64 {_STOP + 8} to ptr) monotonic, align 8
  %none = icmp ule i64 %address, {_SIG_IGN}
  br i1 %none, label %done, label %pass
pass:
  %python = inttoptr i64 %address to ptr
  call void %python(i32 %sig)
  br label %done
done:
  ret void
}}
"""
        _handler = jit.load_object(jit.compile_ir(text, 2), f"{_SYMBOL}_{_STOP}", _SYMBOL)
    return _handler


def _install(action: Callable[..., int]) -> bool:
    """Put the handler in front of the current one; False (the action left as it was) if SIGINT
    has no handler function to pass it on to (ignored, or its default)."""
    _slots[0] = 0
    if action(_SIGINT, _OURS, _SAVED) != 0:
        return False
    previous = _SAVED_HANDLER.value or 0
    if previous in (_SIG_DFL, _SIG_IGN):
        action(_SIGINT, _SAVED, None)
        return False
    _slots[1] = previous
    return True


def _restore(action: Callable[..., int]) -> None:
    """Put back the saved action, unless someone replaced ours meanwhile; clear the flag, which
    kernels run outside an Engine (tests) read too."""
    action(_SIGINT, _SAVED, _REPLACED)
    if _REPLACED_HANDLER.value != _handler:
        action(_SIGINT, _REPLACED, None)
    _slots[0] = 0


class _Interruptible:
    """The context of :data:`interruptible`."""

    def __enter__(self) -> None:
        global _depth, _installed
        action = _sigaction()
        if action is None:
            return
        with _lock:
            if _depth == 0:
                _installed = _install(action)
            _depth += 1

    def __exit__(self, *exc: object) -> None:
        global _depth
        action = _sigaction()
        if action is None:
            return
        with _lock:
            _depth -= 1
            if _depth == 0 and _installed:
                _restore(action)


#: ``with interruptible:`` runs its body with Ctrl-C stopping checked kernels (and raising
#: KeyboardInterrupt in Python, as before); the stop flag is clear before and after the
#: outermost such body
interruptible = _Interruptible()
