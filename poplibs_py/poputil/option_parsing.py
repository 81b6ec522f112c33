"""Option specifications (OptionParsing.hpp, ``poplibs::OptionSpec``): the way PopLibs, and code
written like it, checks an OptionFlags and turns each value string into a typed value.

An :class:`OptionSpec` maps option names to :class:`OptionHandler` objects; ``spec.parse(name,
value)`` finds the handler and lets it parse and store the value, and raises
``poplar_py.InvalidOptionError`` (Poplar's ``invalid_option``) for an unknown name or a bad
value, with PopLibs' messages::

    class Options:
        partialsType = poplar.FLOAT
        availableMemoryProportion = 0.6
        numIPUs = 1

    opts = Options()
    spec = OptionSpec({
        "partialsType": OptionHandler.createWithEnum((opts, "partialsType"),
                                                     {"half": poplar.HALF, "float": poplar.FLOAT}),
        "availableMemoryProportion": OptionHandler.createWithDouble((opts, "availableMemoryProportion"), 0.0),
        "numIPUs": OptionHandler.createWithInteger((opts, "numIPUs")),
    })
    spec.parseAll({"partialsType": "half", "numIPUs": "2"})

C++ handlers write through a reference; here the *output* of a handler is either a callable
taking the value, or an ``(object, name)`` pair: ``object[name] = value`` for a dict or a list,
``setattr(object, name, value)`` otherwise. A list handler appends to a list given as it is.
Values are strings, as in an OptionFlags; a bool (``true``/``false``) or a number given in a
Python dict is taken as its string.
"""

from __future__ import annotations

import math
import re
import sys
from collections.abc import Callable, Iterable, Mapping, MutableMapping, MutableSequence
from typing import Any

import numpy as np

from poplar_py import InvalidOptionError

from .errors import PoplibsArgumentError

__all__ = ["OptionHandler", "OptionSpec", "createOptionalDoubleHandler", "createOptionalEnumHandler", "parse"]

_DBL_MIN = sys.float_info.min  # C++'s numeric_limits<double>::min(): the smallest positive normal
_DBL_MAX = sys.float_info.max
_DEC = re.compile(r"[+-]?[0-9]+")
_HEX = re.compile(r"[+-]?(0[xX])?[0-9a-fA-F]+")
_FLOAT = re.compile(r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")


def _text(value: Any) -> str:
    """An option value as OptionFlags holds it: a string (bools as true/false, numbers as
    written)."""
    if isinstance(value, str):
        return value
    if isinstance(value, (bool, np.bool_)):
        return "true" if value else "false"
    if isinstance(value, (int, float, np.integer, np.floating)):
        return str(value)
    raise InvalidOptionError(f"an option value must be a string (or a bool or a number), got "
                             f"{type(value).__name__} {value!r:.40}")


class parse:  # noqa: N801 (PopLibs' namespace poplibs::parse)
    """The value parsers of ``poplibs::parse``; each raises InvalidOptionError."""

    @staticmethod
    def asInteger(value: Any, bits: int = 32, signed: bool = True) -> int:
        """A decimal integer, or a hexadecimal one when it contains ``0x`` (leading spaces are
        skipped, nothing may follow), within the range of a C++ integer of ``bits`` (an ``int``
        by default): ``"Not a valid integer"`` otherwise."""
        text = _text(value).lstrip()
        pattern, base = (_HEX, 16) if "0x" in text else (_DEC, 10)
        if not pattern.fullmatch(text):
            raise InvalidOptionError("Not a valid integer")
        result = int(text, base)
        lo, hi = (-(1 << (bits - 1)), (1 << (bits - 1)) - 1) if signed else (0, (1 << bits) - 1)
        if not lo <= result <= hi:
            raise InvalidOptionError("Not a valid integer")
        return result

    @staticmethod
    def asFloatingPoint(value: Any) -> float:
        """The number at the start of the value (as C++ streams read one: leading spaces skipped,
        what follows the number ignored): ``"Not a floating point number"`` when there is none."""
        match = _FLOAT.match(_text(value).lstrip())
        if not match:
            raise InvalidOptionError("Not a floating point number")
        result = float(match.group(0))
        if math.isinf(result):
            raise InvalidOptionError("Not a floating point number")
        return result

    @staticmethod
    def describeEnumValues(valueMap: Mapping[str, Any]) -> str:
        """The names of an enum's values as PopLibs lists them: ``['a', 'b']``, sorted."""
        return "[" + ", ".join(f"'{k}'" for k in sorted(valueMap)) + "]"

    @staticmethod
    def asEnum(value: Any, valueMap: Mapping[str, Any]) -> Any:
        """The value ``valueMap`` gives the name; ``"Not one of the values: [...]"`` otherwise."""
        text = _text(value)
        if text not in valueMap:
            raise InvalidOptionError("Not one of the values: " + parse.describeEnumValues(valueMap))
        return valueMap[text]

    @staticmethod
    def asBool(value: Any) -> bool:
        """``true`` or ``false``."""
        return parse.asEnum(value, {"true": True, "false": False})


def _setter(output: Any, what: str) -> Callable[[Any], None]:
    """How a handler stores a value: call ``output``, or set ``output[1]`` of ``output[0]``."""
    if callable(output):
        return output
    if isinstance(output, tuple) and len(output) == 2:
        target, key = output
        if isinstance(target, (MutableMapping, MutableSequence)):
            def put(v: Any) -> None:
                target[key] = v
            return put
        if isinstance(key, str):
            return lambda v: setattr(target, key, v)
    raise PoplibsArgumentError(f"{what}: the output must be a callable taking the value or an (object, name) "
                               f"pair, got {type(output).__name__} {output!r:.40}")


def _bound_text(x: float | int) -> str:
    """A bound as C++'s ``std::to_string`` writes it (doubles with six decimals)."""
    return str(x) if isinstance(x, (int, np.integer)) else f"{x:f}"


class OptionHandler:
    """Parses one option's value: ``OptionHandler(f)`` calls ``f(valueString)``; the
    ``createWith...`` constructors parse a type and store it in their output."""

    def __init__(self, valueHandler: Callable[[str], Any]) -> None:
        if not callable(valueHandler):
            raise PoplibsArgumentError(f"OptionHandler: the value handler must be callable, got "
                                       f"{type(valueHandler).__name__}")
        self._handler = valueHandler

    def parseValue(self, value: Any) -> None:
        self._handler(_text(value))

    @staticmethod
    def createWithEnum(output: Any, valueMap: Mapping[str, Any]) -> OptionHandler:
        """The value named (a key of ``valueMap``, which is copied)."""
        put = _setter(output, "OptionHandler.createWithEnum")
        if not isinstance(valueMap, Mapping):
            raise PoplibsArgumentError(f"OptionHandler.createWithEnum: valueMap must be a dict of names to "
                                       f"values, got {type(valueMap).__name__}")
        values = dict(valueMap)
        return OptionHandler(lambda v: put(parse.asEnum(v, values)))

    @staticmethod
    def createWithInteger(output: Any) -> OptionHandler:
        """An ``int`` (decimal, or hexadecimal with ``0x``)."""
        put = _setter(output, "OptionHandler.createWithInteger")
        return OptionHandler(lambda v: put(parse.asInteger(v)))

    @staticmethod
    def createWithBool(output: Any) -> OptionHandler:
        """``true`` or ``false``."""
        return OptionHandler.createWithEnum(output, {"true": True, "false": False})

    @staticmethod
    def ensureValueIsWithinBounds(value: Any, lowerBound: Any, lowerBoundIsInclusive: bool, upperBound: Any,
                                  upperBoundIsInclusive: bool) -> None:
        """InvalidOptionError unless ``value`` is within the bounds (each inclusive or not):
        ``"Value must be greater than [or equal to ]X"`` or ``"Value must be less than ..."``."""
        if value < lowerBound or (not lowerBoundIsInclusive and value == lowerBound):
            raise InvalidOptionError("Value must be greater than " + ("or equal to " if lowerBoundIsInclusive
                                                                      else "") + _bound_text(lowerBound))
        if value > upperBound or (not upperBoundIsInclusive and value == upperBound):
            raise InvalidOptionError("Value must be less than " + ("or equal to " if upperBoundIsInclusive
                                                                   else "") + _bound_text(upperBound))

    @staticmethod
    def createWithDouble(output: Any, lowerBound: float = _DBL_MIN, lowerBoundIsInclusive: bool = True,
                         upperBound: float = _DBL_MAX, upperBoundIsInclusive: bool = True) -> OptionHandler:
        """A floating-point number within the bounds. As in PopLibs the default lower bound is
        the smallest positive double, so 0 and negative values are refused unless a lower bound
        is given."""
        put = _setter(output, "OptionHandler.createWithDouble")

        def handle(v: str) -> None:
            x = parse.asFloatingPoint(v)
            OptionHandler.ensureValueIsWithinBounds(x, lowerBound, lowerBoundIsInclusive, upperBound,
                                                    upperBoundIsInclusive)
            put(x)
        return OptionHandler(handle)

    @staticmethod
    def createWithString(output: Any) -> OptionHandler:
        """The string itself."""
        put = _setter(output, "OptionHandler.createWithString")
        return OptionHandler(put)

    @staticmethod
    def createWithList(output: Any) -> OptionHandler:
        """A comma-separated list of integers (each decimal, or hexadecimal with ``0x``), appended
        to ``output`` when it is a list (as C++ appends to its vector), else passed to it as a
        list: ``"Not a comma-separated list of integers"`` otherwise."""
        if isinstance(output, list):
            put: Callable[[Any], None] = output.extend
        else:
            put = _setter(output, "OptionHandler.createWithList")

        def handle(v: str) -> None:
            values = []
            for element in v.split(","):
                pattern, base = (_HEX, 16) if "0x" in element else (_DEC, 10)
                text = element.lstrip()
                if not pattern.fullmatch(text):
                    raise InvalidOptionError("Not a comma-separated list of integers")
                values.append(int(text, base))
            put(values)
        return OptionHandler(handle)


def createOptionalDoubleHandler(output: Any, lowerBound: float = _DBL_MIN, lowerBoundIsInclusive: bool = True,
                                upperBound: float = _DBL_MAX,
                                upperBoundIsInclusive: bool = True) -> OptionHandler:
    """``OptionHandler.createWithDouble`` for an optional value (C++'s ``std::optional<double>``)."""
    return OptionHandler.createWithDouble(output, lowerBound, lowerBoundIsInclusive, upperBound,
                                          upperBoundIsInclusive)


def createOptionalEnumHandler(output: Any, valueMap: Mapping[str, Any]) -> OptionHandler:
    """``OptionHandler.createWithEnum`` for an optional value: ``none`` stores None."""
    put = _setter(output, "createOptionalEnumHandler")
    if not isinstance(valueMap, Mapping):
        raise PoplibsArgumentError(f"createOptionalEnumHandler: valueMap must be a dict of names to values, "
                                   f"got {type(valueMap).__name__}")
    values = dict(valueMap)
    return OptionHandler(lambda v: put(None if v == "none" else parse.asEnum(v, values)))


class OptionSpec:
    """The options a function knows: ``OptionSpec({name: OptionHandler, ...})`` (or a list of
    ``(name, handler)`` pairs, as C++'s initializer list)."""

    def __init__(self, handlers: Mapping[str, OptionHandler] | Iterable[tuple[str, OptionHandler]]) -> None:
        pairs = list(handlers.items()) if isinstance(handlers, Mapping) else list(handlers)
        self._handlers: dict[str, OptionHandler] = {}
        for pair in pairs:
            if not (isinstance(pair, tuple) and len(pair) == 2 and isinstance(pair[0], str)
                    and isinstance(pair[1], OptionHandler)):
                raise PoplibsArgumentError(f"OptionSpec: each entry must be an option name and an "
                                           f"OptionHandler, got {pair!r:.60}")
            self._handlers.setdefault(pair[0], pair[1])  # (the first of a repeated name, as std::map's)

    def __contains__(self, option: str) -> bool:
        return option in self._handlers

    def names(self) -> list[str]:
        """The option names, sorted."""
        return sorted(self._handlers)

    def parse(self, option: str, value: Any, ignoreUnknown: bool = False) -> None:
        """Parse and store one option: ``"Unrecognised option 'x'"`` for a name not in the spec
        (unless ``ignoreUnknown``), ``"Invalid value 'v' for option 'x': <why>"`` for a value the
        handler refuses."""
        handler = self._handlers.get(option)
        if handler is None:
            if ignoreUnknown:
                return
            raise InvalidOptionError(f"Unrecognised option '{option}'")
        try:
            handler.parseValue(value)
        except InvalidOptionError as e:
            shown = value if isinstance(value, str) else _text(value) if isinstance(
                value, (bool, int, float, np.bool_, np.integer, np.floating)) else repr(value)
            raise InvalidOptionError(f"Invalid value '{shown}' for option '{option}': {e}") from None

    def parseAll(self, options: Mapping[str, Any] | None, ignoreUnknown: bool = False) -> None:
        """Parse every entry of an options dict (an OptionFlags) in turn, as PopLibs' functions
        loop over theirs (a poplar-py convenience)."""
        if options is None:
            return
        if not isinstance(options, Mapping):
            raise PoplibsArgumentError(f"OptionSpec.parseAll: options must be a dict of option names to "
                                       f"values, got {type(options).__name__} {options!r:.40}")
        for name, value in options.items():
            self.parse(name, value, ignoreUnknown)
