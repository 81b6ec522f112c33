"""Poplar's ``OptionFlags`` (poplar/OptionFlags.hpp): option names and string values.

Everything that takes options (an Engine, ``compileGraph``, the PopLibs functions) takes a dict
of option name to value; an ``OptionFlags`` is such a dict, with Poplar's methods: ``set``,
``at``, ``get``, ``remove``, ``clear`` and iteration over its ``(name, value)`` pairs with
``begin``/``end`` as in C++ (plain iteration, as a dict's, gives the names). As in Poplar, names
and values are strings. ``readJSON`` fills one from a JSON object, ``readJSONFromEnv`` from an
environment variable's JSON. Nothing here runs on the tiles.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Iterator, Mapping
from typing import IO, Any

from .errors import InvalidArgumentError, InvalidOptionError

__all__ = ["OptionFlags", "readJSON", "readJSONFromEnv"]


class OptionFlags(dict):
    """Option names mapped to string values: ``OptionFlags({"opt": "v"})`` or
    ``OptionFlags([("opt", "v")])``, then ``flags.set("other", "w")``."""

    def __init__(self, initial: Mapping[str, str] | Iterable[tuple[str, str]] = ()) -> None:
        super().__init__()
        self.set(initial)

    def set(self, option: Any, value: Any = None) -> None:
        """Set ``option`` to ``value``, or (one argument) every pair of a dict or of a list of pairs."""
        if value is None and not isinstance(option, str):
            pairs = option.items() if isinstance(option, Mapping) else option
            try:
                items = [tuple(pair) for pair in pairs]
            except TypeError:
                raise InvalidArgumentError(f"OptionFlags.set: expected a name and a value, or pairs of them, "
                                           f"got {option!r:.60}") from None
            for pair in items:
                if len(pair) != 2:
                    raise InvalidArgumentError(f"OptionFlags.set: {pair!r:.60} is not a (name, value) pair")
                self.set(*pair)
            return
        if not isinstance(option, str) or not isinstance(value, str):
            raise InvalidArgumentError(f"OptionFlags.set: option names and values are strings, got "
                                       f"{option!r:.40} = {value!r:.40}")
        self[option] = value

    def at(self, option: str) -> str:
        """The value of ``option``; InvalidOptionError if it is not set."""
        if option not in self:
            raise InvalidOptionError(f"OptionFlags.at: option '{option}' is not set")
        return self[option]

    def remove(self, option: str) -> None:
        """Unset ``option`` (nothing happens if it is not set)."""
        self.pop(option, None)

    def begin(self) -> Iterator[tuple[str, str]]:
        """The ``(name, value)`` pairs, as C++ iterates an OptionFlags."""
        return iter(list(self.items()))

    def end(self) -> Iterator[tuple[str, str]]:
        """The end of :meth:`begin`'s pairs: an exhausted iterator."""
        return iter(())


def readJSON(source: str | IO[str], flags: OptionFlags) -> None:
    """Set in ``flags`` the options of a JSON object (text, or an open text file): values are
    strings, or numbers and booleans written as Poplar reads them (``true``, ``42``)."""
    if not isinstance(flags, OptionFlags):
        raise InvalidArgumentError(f"readJSON: flags must be a poplar.OptionFlags, "
                                   f"got {type(flags).__name__}")
    text = source if isinstance(source, str) else getattr(source, "read", None)
    if text is None:
        raise InvalidArgumentError(f"readJSON: expected JSON text or an open file, "
                                   f"got {type(source).__name__}")
    try:
        values = json.loads(text if isinstance(text, str) else text())
    except json.JSONDecodeError as exc:
        raise InvalidOptionError(f"readJSON: not valid JSON: {exc}") from None
    if not isinstance(values, dict):
        raise InvalidOptionError(f"readJSON: expected a JSON object of options, got {type(values).__name__}")
    for name, value in values.items():
        if isinstance(value, (dict, list)) or value is None:
            raise InvalidOptionError(f"readJSON: option '{name}' has a value that is not a string, number "
                                     f"or boolean: {value!r:.40}")
        flags.set(name, json.dumps(value) if isinstance(value, bool) else str(value))


def readJSONFromEnv(variable: str, flags: OptionFlags) -> bool:
    """Set in ``flags`` the options of the JSON object held by the environment variable
    ``variable``; False (``flags`` unchanged) when it is not set."""
    if not isinstance(variable, str):
        raise InvalidArgumentError(f"readJSONFromEnv: the variable name must be a string, "
                                   f"got {variable!r:.40}")
    text = os.environ.get(variable)
    if text is None:
        return False
    readJSON(text, flags)
    return True
