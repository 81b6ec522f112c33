"""The vertex types a graph knows: codelet classes by name, and template instances.

``addCodelets`` registers classes (checking each one now, so that unsupported Python is
reported where it was added); ``"Name<float,6>"`` instantiates a template the first time it
is named and registers the instance under that name.
"""

from __future__ import annotations

from typing import Any

from .codelet_loading import CodeletFileType, codelet_classes
from .errors import CodeletCompileError, CodeletError, UnknownVertexTypeError
from .kernels import check_codelet, is_cxx
from .templates import parse_argument, split_arguments
from .vertex import Vertex

_EXAMPLES = {None: "float", int: "4", bool: "true"}  # template arguments in error messages


class CodeletRegistry:
    """Codelet classes by vertex name."""

    def __init__(self) -> None:
        self._classes: dict[str, type[Vertex]] = {}
        self.version = 0  # changes whenever a name may come to mean another class

    def add(self, src: Any, file_type: CodeletFileType = CodeletFileType.Auto,
            compile_flags: str = "") -> bool:
        """Register the classes of ``src`` (a ``.py`` path, a module, a class or a list of them; a
        C++ file or text); whether any was new. Classes that are not templates are checked now."""
        added = False
        for cls in codelet_classes(src, file_type, compile_flags):
            known = self._classes.get(cls.vertexName)
            if known is cls:
                continue
            if known is not None and is_cxx(known) != is_cxx(cls):
                raise CodeletError(
                    f"addCodelets: vertex '{cls.vertexName}' of {cls.sourceFile or cls.__module__} is "
                    f"already defined by {known.sourceFile or known.__module__}: a C++ and a Python codelet "
                    "cannot share a name")
            if not cls.templateParams:
                check_codelet(cls)
            self._classes[cls.vertexName] = cls
            self.version += 1
            added = True
        return added

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
