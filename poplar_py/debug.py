"""Debug names: Poplar's ``DebugContext`` and ``DebugNameAndId``, accepted wherever a name is.

Poplar threads a ``DebugContext`` through every API call so that profiles can name what
created each tensor and program. Here a name is what a profile and an error message show,
so a context reduces to its path name: ``DebugContext(parent, "mul")`` is ``"parent/mul"``.
"""

from __future__ import annotations

import itertools
import sys

from .errors import InvalidArgumentError

_ids = itertools.count(1)


class SourceLocation:
    """Where a call was made: function, file and line (``SourceLocation.Current()`` is the caller's)."""

    def __init__(self, functionName: str = "", fileName: str = "", lineNumber: int = 0) -> None:
        self.functionName, self.fileName, self.lineNumber = functionName, fileName, int(lineNumber)

    @staticmethod
    def Current() -> SourceLocation:
        """The location of the code calling ``Current()``."""
        frame = sys._getframe(1)
        return SourceLocation(frame.f_code.co_name, frame.f_code.co_filename, frame.f_lineno)

    def getFunctionName(self) -> str:
        return self.functionName

    def getFileName(self) -> str:
        return self.fileName

    def getLineNumber(self) -> int:
        return self.lineNumber

    def isValid(self) -> bool:
        return bool(self.fileName)

    def __repr__(self) -> str:
        return f"SourceLocation({self.functionName!r}, {self.fileName!r}, {self.lineNumber})"


class DebugNameAndId:
    """A name with a unique id (``getId()``), as Poplar's."""

    def __init__(self, name: str = "", id: int | None = None) -> None:  # noqa: A002 (Poplar's name)
        self._name = debug_name(name, "DebugNameAndId")
        self._id = next(_ids) if id is None else int(id)

    def getName(self) -> str:
        return self._name

    def getId(self) -> int:
        return self._id

    def getPathName(self) -> str:
        """The name (with its parents' when built from a DebugContext path)."""
        return self._name

    def __str__(self) -> str:
        return self._name

    def __repr__(self) -> str:
        return f"DebugNameAndId({self._name!r}, {self._id})"


class DebugContext:
    """``DebugContext(name[, location])``, ``DebugContext(parent, name)`` (a parent context, or a
    string, as C++ converts it) or ``DebugContext(DebugNameAndId)``: its path name joins the
    parent's and its own with ``/``; a ``SourceLocation`` is taken and not kept."""

    def __init__(self, first: object = "", name: object = "") -> None:
        if isDebugName(name) and name:  # (parent, name): C++ makes a string parent a DebugContext
            parent, own = debug_name(first, "DebugContext: the parent"), debug_name(name, "DebugContext")
            self._path = f"{parent}/{own}" if parent else own
        elif name and not isinstance(name, SourceLocation):
            raise InvalidArgumentError(f"DebugContext(name, location): the location must be a "
                                       f"poplar.SourceLocation, got {type(name).__name__} {name!r:.40}")
        else:
            self._path = debug_name(first, "DebugContext")

    def getPathName(self) -> str:
        return self._path

    def __str__(self) -> str:
        return self._path

    def __repr__(self) -> str:
        return f"DebugContext({self._path!r})"

    def __bool__(self) -> bool:
        return bool(self._path)


def isDebugName(value: object) -> bool:
    """Whether ``value`` is a debug name: a string, a DebugContext or a DebugNameAndId (for
    libraries whose functions take a debug name positionally, after other arguments)."""
    return isinstance(value, (str, DebugContext, DebugNameAndId))


def label(name: object, debugContext: object, what: str) -> str:
    """The name given to an API taking both ``name`` and ``debugContext`` (the context wins)."""
    return debug_name(debugContext if debugContext is not None else name, what)


def debug_name(value: object, what: str = "debug name") -> str:
    """The name a debug argument stands for: a string, a DebugContext or a DebugNameAndId
    (None for no name). Anything else raises InvalidArgumentError naming ``what``."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, (DebugContext, DebugNameAndId)):
        return str(value)
    raise InvalidArgumentError(f"{what}: a debug name must be a string or a poplar.DebugContext, "
                               f"got {type(value).__name__} {value!r:.60}")
