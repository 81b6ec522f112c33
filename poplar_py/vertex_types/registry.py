"""The vertex types a graph knows: codelet classes by name, and template instances.

``addCodelets`` registers classes (checking each one now, so that unsupported Python is
reported where it was added); ``"Name<float,6>"`` instantiates a template the first time it
is named and registers the instance under that name.
"""

from __future__ import annotations

import inspect
from typing import Any

from ..errors import CodeletCompileError, CodeletError, UnknownVertexTypeError
from ..templates import parse_argument, split_arguments
from ..vertex import Vertex
from .backends import check_codelet, is_cxx
from .loading import CodeletFileType, codelet_classes

_EXAMPLES = {None: "float", int: "4", bool: "true"}  # template arguments in error messages


def definition(cls: type[Vertex]) -> str:
    """Where a vertex class is defined, for messages: its C++ file, or its Python class, file and
    line."""
    if is_cxx(cls):
        return cls.sourceFile
    try:
        line = f":{inspect.getsourcelines(cls)[1]}"
    except (OSError, TypeError):  # no source: a class made by code, or its file is gone
        line = ""
    return f"class {cls.__module__}.{cls.__qualname__} ({cls.sourceFile or '<no file>'}{line})"


class CodeletRegistry:
    """Codelet classes by vertex name: one definition per name, as Poplar's."""

    def __init__(self) -> None:
        self._classes: dict[str, type[Vertex]] = {}

    def add(self, src: Any, file_type: CodeletFileType = CodeletFileType.Auto,
            compile_flags: str = "") -> bool:
        """Register the classes of ``src`` (a ``.py`` path, a module, a class or a list of them; a
        C++ file or text); whether any was new. Classes that are not templates are checked now.
        Another class under a name already taken (here or earlier) is refused, naming both
        definitions, before any class of ``src`` is registered; the same class again is allowed."""
        new: dict[str, type[Vertex]] = {}
        for cls in codelet_classes(src, file_type, compile_flags):
            known = new.get(cls.vertexName) or self._classes.get(cls.vertexName)
            if known is cls:
                continue
            if known is not None:
                error = CodeletError if is_cxx(known) or is_cxx(cls) else CodeletCompileError
                raise error(f"addCodelets: vertex '{cls.vertexName}' of {definition(cls)} is already defined "
                            f"by {definition(known)}: a graph has one definition of each vertex type (give "
                            "one of them another class name or vertexName)")
            if not cls.templateParams:
                check_codelet(cls)
            new[cls.vertexName] = cls
        self._classes.update(new)
        return bool(new)

    def lookup(self, name: str, required: bool = True) -> type[Vertex] | None:
        """The class registered as ``name``, instantiating a template for ``"Name<float,int>"``."""
        cls = self._classes.get(name)
        if cls is None and name.endswith(">") and "<" in name:
            cls = self._instantiate(name)
        if cls is not None and cls.templateParams:
            raise UnknownVertexTypeError(
                f"vertex type '{name}' is a template: name its arguments, as in "
                f"'{name}<{','.join(_EXAMPLES.get(p.kind, '...') for p in cls.templateParams)}>'")
        if cls is None and required:
            raise UnknownVertexTypeError(
                f"unknown vertex type '{name}'; call graph.addCodelets first "
                f"(registered: {', '.join(sorted(self._classes)) or 'none'})")
        return cls

    def _instantiate(self, name: str) -> type[Vertex] | None:
        base, args = name[:-1].split("<", 1)
        template = self._classes.get(base)
        if template is None or not template.templateParams:
            return None
        texts = split_arguments(args)
        params = template.templateParams
        if len(texts) != len(params):
            template.instantiate(*texts)  # raises: the wrong number of arguments
        try:
            values = [parse_argument(p, a, name) for p, a in zip(params, texts)]
        except CodeletCompileError as exc:
            raise UnknownVertexTypeError(f"vertex type '{name}': {exc}") from None
        cls = template.instantiate(*values)
        check_codelet(cls)
        self._classes[name] = cls
        return cls
