"""Codelet classes written in the program itself (``__main__``), carried to another process by source.

A compiled executable names its codelet classes: a class of an importable module travels by name,
one of a codelet file as that file's source. A class defined in the program's ``__main__`` can be
neither imported nor re-created by running the program again (that would run all of it). It
travels as the source of a module made of what it needs from ``__main__``: its own definition and
those of the functions and classes of ``__main__`` it uses, each at its original lines (so error
messages and the kernel cache's key do not change), with the other global names it uses (modules,
importable functions and classes, numbers, types) given as values. A class rebuilt that way in
another process is itself inline: it travels on the same way.
"""

from __future__ import annotations
import __future__

import ast
import contextlib
import hashlib
import inspect
import linecache
import pickle
import symtable
import types
from typing import Any

from ..errors import ExecutableError

#: module names of classes rebuilt from their ``__main__`` source
INLINE_PREFIX = "poplar_inline_codelets_"
_MISSING = object()


def is_inline(obj: type) -> bool:
    """Whether ``obj`` (a class) is defined in ``__main__``, or was rebuilt from such a definition."""
    return obj.__module__ == "__main__" or obj.__module__.startswith(INLINE_PREFIX)


def inline_source(cls: type) -> tuple[str, dict[str, Any]]:
    """(source, namespace): executing the source in a module seeded with the namespace defines
    ``cls`` (by its qualified name) as its module does."""
    module_globals = _globals_of(cls)
    segments: dict[int, list[str]] = {}
    namespace: dict[str, Any] = {}
    aliases: list[str] = []  # names a definition is known by besides its own
    todo, seen, done = [(cls.__name__, cls)], set(), set()
    while todo:
        name, obj = todo.pop()
        if name != obj.__name__ and name not in done:
            aliases.append(f"{name} = {obj.__name__}")
        done.add(name)
        if id(obj) in seen:
            continue
        seen.add(id(obj))
        lines, first = _source_lines(obj, cls, module_globals.get("__file__"))
        segments[first] = lines
        for used in sorted(_global_names("".join(lines)) - done - set(namespace)):
            value = module_globals.get(used, _MISSING)
            if isinstance(value, (type, types.FunctionType)) and value.__module__ == cls.__module__:
                todo.append((used, value))
            elif value is not _MISSING:
                namespace[used] = _checked_value(used, value, cls)
    size = max(first + len(lines) - 1 for first, lines in segments.items())
    text = [""] * size
    if module_globals.get("annotations") is __future__.annotations:
        text[0] = "from __future__ import annotations"  # (the original's first lines are not code)
    for first, lines in segments.items():
        text[first - 1:first - 1 + len(lines)] = [line.rstrip("\n") for line in lines]
    return "\n".join([*text, *aliases]) + "\n", namespace


def module_name(source: str, namespace: dict[str, Any]) -> str:
    """The name of the module an inline source and its namespace make (one per distinct pair)."""
    key = source + repr(sorted((k, repr(v)) for k, v in namespace.items()))
    return INLINE_PREFIX + hashlib.sha256(key.encode()).hexdigest()[:16]


def _globals_of(cls: type) -> dict[str, Any]:
    """The namespace ``cls`` was defined in: the globals of its methods, or of its bases' of the
    same module."""
    for base in cls.__mro__:
        for value in vars(base).values():
            if isinstance(value, types.FunctionType) and base.__module__ == cls.__module__:
                return value.__globals__
    module = inspect.getmodule(cls)
    return vars(module) if module is not None else {}


def _source_lines(obj: Any, cls: type, file: str | None) -> tuple[list[str], int]:
    where = f"cannot serialize class {cls.__qualname__} of {cls.__module__}"
    if obj.__name__ == "<lambda>":
        raise ExecutableError(f"{where}: it uses a lambda, which has no definition of its own: define it "
                              "with def")
    if "." in obj.__qualname__:
        raise ExecutableError(f"{where}: it uses {obj.__qualname__}, which is not defined at the top "
                              "level of its module")
    try:
        return _class_lines(obj, file) if isinstance(obj, type) else inspect.getsourcelines(obj)
    except (OSError, TypeError):
        raise ExecutableError(f"{where}: the source of {obj.__qualname__} is not available (a program run "
                              "from a file has it; an interactive session does not)") from None


def _class_lines(cls: type, file: str | None) -> tuple[list[str], int]:
    """The lines of ``cls``'s definition in ``file``, its module's (``inspect`` looks in the file of
    ``sys.modules[cls.__module__]``, another module's once ``runpy`` has run a program)."""
    lines = linecache.getlines(file) if file else []
    found = [node for node in ast.parse("".join(lines)).body if isinstance(node, ast.ClassDef)
             and node.name == cls.__name__] if lines else []
    if not found:
        return inspect.getsourcelines(cls)
    node = found[-1]  # the definition that binds the name
    first = min([node.lineno, *(d.lineno for d in node.decorator_list)])
    return lines[first - 1:node.end_lineno], first


def _global_names(source: str) -> set[str]:
    """The global names a top-level definition uses (in code, and in string annotations)."""
    names: set[str] = set()
    tables = [symtable.symtable(source, "<codelet>", "exec")]
    while tables:
        table = tables.pop()
        names.update(s.get_name() for s in table.get_symbols() if s.is_global() and s.is_referenced())
        tables.extend(table.get_children())
    for node in ast.walk(ast.parse(source)):
        notes = [getattr(node, "annotation", None), getattr(node, "returns", None)]
        for note in notes:
            if isinstance(note, ast.Constant) and isinstance(note.value, str):
                with contextlib.suppress(SyntaxError):  # (not an expression: Vertex reports it)
                    names.update(n.id for n in ast.walk(ast.parse(note.value, mode="eval"))
                                 if isinstance(n, ast.Name))
    return names


def _checked_value(name: str, value: Any, cls: type) -> Any:
    """``value`` if it can travel by value (a module travels by name)."""
    if isinstance(value, types.ModuleType):
        return value
    try:
        pickle.dumps(value)
    except Exception as exc:
        raise ExecutableError(f"cannot serialize class {cls.__qualname__} of {cls.__module__}: it uses "
                              f"the global '{name}' ({type(value).__name__}), which cannot be pickled: "
                              f"{exc}") from None
    return value
