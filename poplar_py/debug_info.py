"""Poplar's debug information (poplar/DebugContext.hpp, ProfileValue.hpp): ``DebugInfo``,
``SourceLocation``, ``ProfileValue`` and the debug-information streamer.

A library function records what it was called with: ``DebugInfo(debugContext, "popops")``
gives the call an id and a path name, and ``setValue(name, value)`` attaches values (the
arguments, the outputs). Between ``DebugInfo.initializeStreamer(file, DebugSerializationFormat.JSON)``
and ``DebugInfo.closeStreamer()`` every DebugInfo made is written to ``file`` as one JSON object
``{"contexts": [{"id", "name", "layer", "location": {...}, <values>...}, ...]}``, which Graphcore's
tools read alongside a profile. Nothing here runs on the tiles. CBOR, Poplar's default format,
needs an encoder the Python standard library does not have: poplar-py writes JSON only and says so
when asked for CBOR.
"""

from __future__ import annotations

import enum
import json
import sys
import threading
from collections.abc import Mapping, Sequence
from typing import Any

from .debug import DebugContext, DebugNameAndId, SourceLocation, debug_name
from .errors import InvalidArgumentError

__all__ = ["DebugInfo", "DebugSerializationFormat", "ProfileValue", "SourceLocation"]


class DebugSerializationFormat(enum.Enum):
    JSON = "JSON"
    CBOR = "CBOR"


class ProfileValue:
    """A value of debug information or a profile: a string, a number, a bool, a list of
    ProfileValues (``Vector``) or a dict of them by name (``Map``), as Poplar's variant."""

    Vector = list
    Map = dict

    def __init__(self, value: Any = "") -> None:
        self.value = _plain(value)

    def asString(self) -> str:
        return self._as(str, "a string")

    def asBool(self) -> bool:
        return self._as(bool, "a bool")

    def asDouble(self) -> float:
        if isinstance(self.value, bool) or not isinstance(self.value, (int, float)):
            raise InvalidArgumentError(f"ProfileValue.asDouble: {self.value!r:.40} is not a number")
        return float(self.value)

    def asInt(self) -> int:
        return self._as(int, "an integer")

    def asUint(self) -> int:
        value = self.asInt()
        if value < 0:
            raise InvalidArgumentError(f"ProfileValue.asUint: {value} is negative")
        return value

    def asVector(self) -> list:
        return [ProfileValue(v) for v in self._as(list, "a Vector")]

    def asMap(self) -> dict[str, ProfileValue]:
        return {k: ProfileValue(v) for k, v in self._as(dict, "a Map").items()}

    def _as(self, kind: type, what: str) -> Any:
        if not isinstance(self.value, kind) or (kind is int and isinstance(self.value, bool)):
            raise InvalidArgumentError(f"ProfileValue: {self.value!r:.40} is not {what}")
        return self.value

    def __eq__(self, other: object) -> bool:
        return _plain(other) == self.value if isinstance(other, ProfileValue) else self.value == other

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"ProfileValue({self.value!r})"


def _plain(value: Any) -> Any:
    """``value`` as JSON-able Python: ProfileValues unwrapped, tuples as lists, dict keys strings."""
    if isinstance(value, ProfileValue):
        return value.value
    if isinstance(value, (str, bool, int, float)):
        return value
    if isinstance(value, Mapping):
        if not all(isinstance(k, str) for k in value):
            raise InvalidArgumentError(f"ProfileValue: a Map's names are strings, got {list(value)!r:.60}")
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, Sequence):
        return [_plain(v) for v in value]
    raise InvalidArgumentError(f"ProfileValue: cannot hold {type(value).__name__} {value!r:.40} (a string, "
                               "number, bool, list or dict of them)")


class _Streamer:
    """Where DebugInfos go between initializeStreamer and closeStreamer."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.path: str | None = None
        self.records: list[dict[str, Any]] = []


_streamer = _Streamer()


class DebugInfo:
    """The debug information of one call: an id, the path name of its ``debugContext``, the
    ``layer`` that made it ("poplar", "popops", a user's own) and values set on it."""

    def __init__(self, debugContext: object, layer: str, location: SourceLocation | None = None) -> None:
        if not isinstance(layer, str):
            raise InvalidArgumentError(f"DebugInfo: layer must be a string, got {layer!r:.40}")
        self._context = DebugNameAndId(debug_name(debugContext, "DebugInfo: debugContext"))
        self._values: dict[str, Any] = {}
        self._record = {"id": self._context.getId(), "name": self._context.getName(), "layer": layer}
        where = location if location is not None else _caller()
        self._record["location"] = {"functionName": where.getFunctionName(), "fileName": where.getFileName(),
                                    "lineNumber": where.getLineNumber()}
        with _streamer.lock:
            if _streamer.path is not None:
                _streamer.records.append(self._record)

    def getId(self) -> int:
        return self._context.getId()

    def getPathName(self) -> str:
        return self._context.getName()

    def getValue(self, name: str) -> ProfileValue | None:
        """The value set as ``name``, or None."""
        return ProfileValue(self._record[name]) if name in self._values else None

    def setValue(self, name: str, value: Any) -> bool:
        """Attach ``value`` (a ProfileValue, or a string, number, bool, list or dict of them) as
        ``name``; False, changing nothing, if ``name`` is set already (as Poplar)."""
        if not isinstance(name, str):
            raise InvalidArgumentError(f"DebugInfo.setValue: the name must be a string, got {name!r:.40}")
        if name in self._values or name in ("id", "name", "layer", "location"):
            return False
        self._values[name] = self._record[name] = _plain(value)
        return True

    def context(self) -> DebugContext:
        """A DebugContext naming this call, for the calls it makes."""
        return DebugContext(self._context)

    @staticmethod
    def initializeStreamer(fileName: str,
                           format: DebugSerializationFormat = DebugSerializationFormat.JSON  # noqa: A002
                           ) -> None:
        """Collect every DebugInfo made from now on, for ``closeStreamer`` to write to ``fileName``."""
        if not isinstance(fileName, str) or not fileName:
            raise InvalidArgumentError(f"DebugInfo.initializeStreamer: fileName must be a path, "
                                       f"got {fileName!r:.40}")
        if format is not DebugSerializationFormat.JSON:
            raise InvalidArgumentError(f"DebugInfo.initializeStreamer: poplar-py writes debug information as "
                                       f"DebugSerializationFormat.JSON only, got {format!r:.40}")
        with _streamer.lock:
            _streamer.path, _streamer.records = fileName, []

    @staticmethod
    def closeStreamer() -> None:
        """Write the DebugInfos collected since ``initializeStreamer`` and stop collecting."""
        with _streamer.lock:
            path, records = _streamer.path, _streamer.records
            _streamer.path, _streamer.records = None, []
        if path is not None:
            with open(path, "w") as f:
                json.dump({"contexts": records}, f, indent=1)


def _caller() -> SourceLocation:
    """The location of the code that made a DebugInfo (outside this module)."""
    frame = sys._getframe(1)
    while frame is not None and frame.f_code.co_filename == __file__:
        frame = frame.f_back
    if frame is None:
        return SourceLocation()
    return SourceLocation(frame.f_code.co_name, frame.f_code.co_filename, frame.f_lineno)
