"""Vertex names (VertexTemplates.hpp)."""

from __future__ import annotations


def _text(a: object) -> str:
    if isinstance(a, bool):
        return "true" if a else "false"
    return str(a)


def templateVertexParams(first: bool, *args: object) -> str:
    """The template arguments part of a vertex name: ``templateVertexParams(True, FLOAT, 4)`` is
    ``"<float,4>"``; with ``first`` False the text that follows an earlier argument (``",float,4>"``)."""
    if not args:
        return "" if first else ">"
    return ("<" if first else ",") + ",".join(_text(a) for a in args) + ">"


def templateVertex(name: str, *args: object) -> str:
    """Poplar's templated vertex name: ``templateVertex("popops::Fill", FLOAT)`` is
    ``"popops::Fill<float>"`` (types by name, bools as true/false, numbers as digits)."""
    return name + templateVertexParams(True, *args)
