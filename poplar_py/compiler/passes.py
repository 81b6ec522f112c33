"""Running the compiler passes: each names itself in its errors, dumps and checks.

* An unexpected exception inside a pass becomes a :class:`~poplar_py.errors.CompilerPassError`
  naming the pass and what it was working on (a pass says so with :func:`working_on`), its
  cause the original; a :class:`~poplar_py.errors.PoplarError` a pass raises on purpose keeps
  its class and message and gains a note naming the pass (shown in its traceback).
* ``POPLAR_PY_DUMP_AFTER=<pass>[,<pass>...]`` (or ``all``) prints to stderr what each named pass
  produced; pass names are matched ignoring case, ``-`` and ``_`` (``plan-compute-sets``).
* ``POPLAR_PY_CHECK_PASSES=1`` checks each pass's result (:mod:`pass_checks`) before the next runs.
* ``POPLAR_PY_DEBUG_PASSES=1`` prints each pass's time.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable, Sequence
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Generic, TypeVar

from ..errors import CompilerPassError, InvalidOptionError, PoplarError
from .progress import Progress

S = TypeVar("S")

_subject: ContextVar[str | None] = ContextVar("poplar_py_pass_subject", default=None)


class InvariantError(Exception):
    """A compiler pass's result breaks an invariant (the message says which, and where)."""


def working_on(subject: str | None) -> str | None:
    """Say what the running pass handles now (``"planning compute set 'conv'"``), for its errors;
    returns what it said before (to say again once done with a nested object)."""
    previous = _subject.get()
    _subject.set(subject)
    return previous


@dataclass(frozen=True)
class CompilerPass(Generic[S]):
    """One pass over the compiler's state: what it does, how its result reads as text and
    which invariants its result keeps."""

    name: str
    run: Callable[[S], None]
    dump: Callable[[S], str]
    check: Callable[[S], None] | None = None


def run_passes(passes: Sequence[CompilerPass[S]], state: S, check_input: Callable[[S], None] | None = None,
               progress_callback: Callable[[int, int], object] | None = None) -> dict[str, float]:
    """Run ``passes`` in order over ``state``; each one's time in seconds. With
    ``POPLAR_PY_CHECK_PASSES=1`` ``check_input`` checks the state first."""
    dumps = dumped_passes([p.name for p in passes], os.environ.get("POPLAR_PY_DUMP_AFTER", ""))
    checking = os.environ.get("POPLAR_PY_CHECK_PASSES") == "1"
    debug = os.environ.get("POPLAR_PY_DEBUG_PASSES") == "1"
    if checking and check_input is not None:
        _checked("the frozen graph IR given to the compiler", "", check_input, state)
    times = {}
    with Progress(len(passes), callback=progress_callback) as progress:
        for p in passes:
            progress.step(p.name)
            start = time.perf_counter()
            _run(p, state)
            times[p.name] = time.perf_counter() - start
            if debug:
                print(f"[poplar-py] pass {p.name}: {times[p.name] * 1e3:.1f} ms", file=sys.stderr)
            if p.name in dumps:
                print(f"[poplar-py] after pass '{p.name}':\n{p.dump(state)}", file=sys.stderr, end="")
            if checking and p.check is not None:
                _checked(f"the result of compiler pass '{p.name}'", p.name, p.check, state)
    return times


def _run(p: CompilerPass[S], state: S) -> None:
    """Run one pass, its errors naming it."""
    working_on(None)
    try:
        p.run(state)
    except PoplarError as exc:  # raised on purpose: its message names the culprit already
        if hasattr(exc, "add_note"):  # Python 3.11 on: shown below the message in tracebacks
            exc.add_note(f"(in compiler pass '{p.name}'{_while(_subject.get())})")
        raise
    except Exception as exc:
        subject = _subject.get()
        raise CompilerPassError(f"internal error in compiler pass '{p.name}'{_while(subject)}: "
                                f"{type(exc).__name__}: {exc}", p.name, subject) from exc
    finally:
        working_on(None)


def _while(subject: str | None) -> str:
    return f", while {subject}" if subject else ""


def _checked(what: str, name: str, check: Callable[[S], None], state: S) -> None:
    """Run an invariant check; a violation becomes a CompilerPassError naming ``what`` broke it."""
    try:
        check(state)
    except InvariantError as exc:
        raise CompilerPassError(f"{what} is invalid (POPLAR_PY_CHECK_PASSES): {exc}", name) from exc


def _key(name: str) -> str:
    return name.strip().lower().replace("-", " ").replace("_", " ")


def dumped_passes(names: Sequence[str], setting: str) -> set[str]:
    """The pass names a ``POPLAR_PY_DUMP_AFTER`` value selects: a comma-separated list of names,
    or ``all``."""
    wanted = [w for w in (_key(w) for w in setting.split(",")) if w]
    if "all" in wanted:
        return set(names)
    by_key = {_key(n): n for n in names}
    unknown = [w for w in wanted if w not in by_key]
    if unknown:
        listing = ", ".join(f"'{n}'" for n in names)
        raise InvalidOptionError(f"POPLAR_PY_DUMP_AFTER names no compiler pass: '{unknown[0]}'; the passes "
                                 f"are {listing} (or 'all')")
    return {by_key[w] for w in wanted}
