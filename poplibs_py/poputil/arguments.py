"""The trailing arguments PopLibs functions share: ``debugContext, options`` (and a planning cache).

In C++ they are the last parameters, each with a default, so a call may give them positionally
(``add(graph, a, b, prog, "name", {"opt": "v"})``) or, in Python, by keyword. Functions whose
leading arguments vary (overloads read from ``*args``) hand the positional rest to
:func:`trailingArguments`; every function checks its options with :func:`checkOptions`, so an
option is checked the same way however it was passed, and nothing given is dropped silently.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from typing import Any

from .errors import PoplibsArgumentError, PoplibsError


def _given(value: Any) -> bool:
    """Whether a keyword argument differs from the defaults the trailing parameters use."""
    return value is not None and not (isinstance(value, str) and value == "")


def trailingArguments(what: str, rest: Sequence[Any], keywords: Mapping[str, Any]) -> list[Any]:
    """The values of PopLibs' trailing parameters, named in their C++ order by ``keywords`` (each
    with the value the call gave by keyword, or its default: None or ""), after the positional
    arguments ``rest`` are placed in that order. More positional arguments than parameters, or a
    parameter given both ways, raise PoplibsArgumentError naming ``what``."""
    names, values = list(keywords), list(keywords.values())
    if len(rest) > len(names):
        extra = list(rest[len(names):])
        raise PoplibsArgumentError(f"{what}: {len(extra)} positional argument(s) too many after "
                                   f"{', '.join(names)}: {extra!r:.80}")
    for i, value in enumerate(rest):
        if _given(values[i]):
            raise PoplibsArgumentError(f"{what}: {names[i]} given both positionally and by keyword")
        values[i] = value
    return values


def checkOptions(options: Any, known: Collection[str] | None, what: str) -> dict[str, Any]:
    """``options`` (None: no options) as a dict, checked as PopLibs' option parsing checks them:
    PoplibsArgumentError unless it is a dict, PoplibsError naming the first option not in
    ``known`` (``known`` None: the function reads no option, so any name is accepted)."""
    if options is None:
        return {}
    if not isinstance(options, Mapping):
        raise PoplibsArgumentError(f"{what}: options must be a dict of option names to values, got "
                                   f"{type(options).__name__} {options!r:.40}")
    for name in options:
        if known is not None and name not in known:
            raise PoplibsError(f"{what}: unrecognised option '{name}' (known: {', '.join(sorted(known))})")
    return dict(options)
