"""Whether an object tree is what its annotations say: a loaded executable's payload is checked
this way before anything uses it (a file can hold any pickle behind a valid header).

A value matches a class annotation by ``isinstance`` (an ``int`` may be a numpy integer, a
``float`` any real); a dataclass's fields are matched against their annotations, each object
once; a container's items against its item annotations. Items whose annotation mentions no
dataclass are matched through one item of each class, so that a map of a million arrays costs
one pass of ``type()``, not a million checks.
"""

from __future__ import annotations

import dataclasses
import functools
import numbers
import types
import typing
from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np

#: annotations whose values may be numpy's scalars too
_CLASSES: dict[Any, tuple[type, ...]] = {int: (numbers.Integral,), float: (numbers.Real,),
                                         bool: (bool, np.bool_)}


class _MismatchError(Exception):
    """Where a value differs from its annotation, and how."""


def mismatch(value: Any, hint: Any, where: str) -> str | None:
    """None if ``value`` matches the annotation ``hint``, else the first difference found (naming
    ``where`` and the path of fields and items below it)."""
    try:
        _check(value, hint, where, set())
    except _MismatchError as exc:
        return str(exc)
    return None


def _check(value: Any, hint: Any, where: str, seen: set[int]) -> None:
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin in (typing.Union, types.UnionType):
        problems = []
        for arm in args:
            try:
                return _check(value, arm, where, seen)
            except _MismatchError as exc:
                problems.append(exc)
        raise problems[0]
    if hint is Any or isinstance(hint, typing.TypeVar):
        return
    classes = _CLASSES.get(hint, (origin or hint,))
    try:
        matches = isinstance(value, classes)
    except TypeError:  # an annotation isinstance cannot test (a protocol, a Literal...)
        matches = True
    if not matches:
        expected = getattr(hint, "__name__", hint)
        raise _MismatchError(f"{where} is of type {type(value).__name__}, not {expected}")
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        if id(value) not in seen:
            seen.add(id(value))
            _check_fields(value, where, seen)
    elif isinstance(value, Mapping) and len(args) == 2:
        _check_items(value.keys(), args[0], f"{where} key", seen)
        _check_items(value.values(), args[1], f"{where} value", seen)
    elif isinstance(value, (list, tuple, set, frozenset)) and args:
        if len(args) == 1 or args[1] is Ellipsis:
            _check_items(value, args[0], f"{where} item", seen)
        elif len(args) != len(value):
            raise _MismatchError(f"{where} has {len(value)} items, not {len(args)}")
        else:
            for k, (item, arm) in enumerate(zip(value, args)):
                _check(item, arm, f"{where}[{k}]", seen)


def _check_fields(value: Any, where: str, seen: set[int]) -> None:
    hints = _field_hints(type(value))
    for f in dataclasses.fields(value):
        if not hasattr(value, f.name):
            raise _MismatchError(f"{where} has no field {f.name}")
        if f.name in hints:
            _check(getattr(value, f.name), hints[f.name], f"{where}.{f.name}", seen)


def _check_items(items: Iterable[Any], hint: Any, where: str, seen: set[int]) -> None:
    if _mentions_dataclass(hint):
        for item in items:
            _check(item, hint, where, seen)
        return
    for item in {type(item): item for item in items}.values():
        _check(item, hint, where, seen)


@functools.cache
def _field_hints(cls: type) -> dict[str, Any]:
    """A dataclass's resolved field annotations (none when they cannot be resolved)."""
    try:
        return typing.get_type_hints(cls)
    except (NameError, TypeError):
        return {}


def _mentions_dataclass(hint: Any) -> bool:
    if isinstance(hint, type) and dataclasses.is_dataclass(hint):
        return True
    try:
        return any(_mentions_dataclass(a) for a in typing.get_args(hint))
    except TypeError:
        return False
