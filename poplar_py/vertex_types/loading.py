"""Finding codelet classes: in a ``.py`` file, a module, a class or a list of them; in a C++
file or source text (compiled by :mod:`cxx.module`)."""

from __future__ import annotations

import enum
import hashlib
import importlib.util
import inspect
import io
import linecache
import os
import sys
import tempfile
import types as pytypes
from collections.abc import Iterable
from pathlib import Path
from types import CodeType
from typing import Any

from ..cxx import module as cxx
from ..errors import CodeletCompileError, CodeletError, InvalidArgumentError, PoplarError
from ..vertex import Vertex


class CodeletFileType(enum.Enum):
    """What ``graph.addCodelets`` is given (Poplar's ``CodeletFileType``): ``Auto`` goes by the
    file's extension; ``CppSource`` is C++ source text (or a C++ file of any name)."""

    PreprocessedAsmSource = "PreprocessedAsmSource"
    AsmSource = "AsmSource"
    CSource = "CSource"
    CppSource = "CppSource"
    IrSource = "IrSource"
    Object = "Object"
    Auto = "Auto"


# Frames from these folders are library code; a vertex's source is the user's line above them.
_LIBRARY_DIRS = tuple(os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), d)
                      for d in ("poplar_py", "poplibs_py", "codelets"))


_PREFIX = "poplar_codelets_"  # module names of codelet files loaded by path
_CPP_SOURCES = {".cpp", ".cc", ".cxx", ".c++", ".cp", ".hpp", ".h"}
_NATIVE_SOURCES = {".c", ".s", ".S", ".gp", ".o", ".ll", ".bc"}

# id of a code object -> (the code, kept so the id stays its own; file name, None for library code)
_code_files: dict[int, tuple[CodeType, str | None]] = {}


def caller_location() -> tuple[str, int]:
    """(file, line) of the user code that called into the graph (for error messages)."""
    frame = sys._getframe(2)  # the caller's caller: the graph method's caller
    while frame is not None:
        code = frame.f_code
        known = _code_files.get(id(code))
        if known is None:
            name = code.co_filename
            known = _code_files[id(code)] = (code, None if name.startswith(_LIBRARY_DIRS)
                                             else os.path.basename(name))
        if known[1] is not None:
            return known[1], frame.f_lineno
        frame = frame.f_back
    return "", 0


def codelet_classes(src: Any, file_type: CodeletFileType = CodeletFileType.Auto,
                    compile_flags: str = "") -> Iterable[type[Vertex]]:
    """The vertex classes of ``src`` (see ``Graph.addCodelets``)."""
    if isinstance(src, (list, tuple)):
        for item in src:
            yield from codelet_classes(item, file_type, compile_flags)
        return
    if isinstance(src, io.StringIO):
        src, file_type = src.getvalue(), CodeletFileType.CppSource
    if file_type is CodeletFileType.CppSource and isinstance(src, str) and not os.path.isfile(src):
        yield from cxx.load("CppSource", src, compile_flags)
        return
    if file_type not in (CodeletFileType.Auto, CodeletFileType.CppSource):
        raise CodeletError(f"addCodelets: {file_type.name} codelets cannot run on the simulator (IPU "
                           "assembly, objects and IR are the IPU's own code); give C++ source or Python "
                           "classes")
    if isinstance(src, type):
        if not issubclass(src, Vertex):
            raise InvalidArgumentError(f"addCodelets: {src.__name__} does not derive from poplar.Vertex")
        yield src
        return
    if isinstance(src, Vertex):
        raise InvalidArgumentError(f"addCodelets: got an instance of {type(src).__name__}; pass the class "
                                   f"({type(src).__name__}, not {type(src).__name__}())")
    if not isinstance(src, (pytypes.ModuleType, str, os.PathLike)):
        raise InvalidArgumentError(f"addCodelets takes a .py file, a module, a Vertex class or a list of "
                                   f"them; got {type(src).__name__} {src!r:.60}")
    if not isinstance(src, pytypes.ModuleType):
        path = _find_codelet_file(os.fspath(src))
        if file_type is CodeletFileType.CppSource or os.path.splitext(path)[1].lower() in _CPP_SOURCES:
            yield from cxx.load(path, None, compile_flags)
            return
    module = src if isinstance(src, pytypes.ModuleType) else _import(path)
    found = [obj for obj in vars(module).values()
             if isinstance(obj, type) and issubclass(obj, Vertex) and obj.__module__ == module.__name__]
    if not found:
        raise PoplarError(f"addCodelets: {getattr(module, '__file__', module)} defines no Vertex classes")
    yield from found


def _find_codelet_file(path: str) -> str:
    """The absolute path of a codelet file named by ``addCodelets``: as given, or relative to the
    program's file; a missing file or one the simulator cannot run is a PoplarError naming it."""
    candidates = [path]
    if not os.path.isabs(path):
        main = sys.modules.get("__main__")
        for base in (getattr(main, "__file__", None), inspect.stack()[3].filename):
            if base:
                candidates.append(os.path.join(os.path.dirname(os.path.abspath(base)), path))
    suffix = os.path.splitext(str(path))[1]
    if suffix in _NATIVE_SOURCES or suffix.lower() in _NATIVE_SOURCES:
        raise CodeletError(
            f"addCodelets('{path}'): {suffix} files are IPU assembly, C or compiled code, which the "
            "simulator cannot run; vertices are C++ classes (.cpp) or Python classes (.py)")
    if suffix.lower() not in _CPP_SOURCES and suffix != ".py":
        raise CodeletCompileError(f"addCodelets('{path}'): codelet files are Python (.py) files of Vertex "
                                  "classes or C++ (.cpp) files of poplar::Vertex classes")
    for candidate in candidates:
        if os.path.isfile(candidate):
            return os.path.abspath(candidate)
    raise PoplarError(f"addCodelets: no codelet file '{path}' (looked in {', '.join(candidates)})")


def codelet_source(module: str) -> str | None:
    """The source text of a module of codelets that cannot be imported by name: a codelet file
    loaded by ``addCodelets(path)``, or generated code (source in ``linecache``); else None."""
    mod = sys.modules.get(module)
    if mod is None or module == "__main__" or (mod.__spec__ is not None and not module.startswith(_PREFIX)):
        return None
    path = getattr(mod, "__file__", None)
    if path is None:
        return None
    if path in linecache.cache:
        return "".join(linecache.cache[path][2])
    try:
        return Path(path).read_text()
    except OSError:
        return None


def import_codelet_source(module: str, source: str, namespace: dict[str, Any] | None = None
                          ) -> pytypes.ModuleType:
    """The codelet module ``module`` again, from its source text, run with the global names of
    ``namespace`` already set (in another process: written to the system's temporary folder
    first, so that the compiler can read its source)."""
    loaded = sys.modules.get(module)
    if loaded is not None:
        return loaded
    folder = Path(tempfile.gettempdir()) / "poplar_py_codelets"
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{module}_{hashlib.sha256(source.encode()).hexdigest()[:16]}.py"
    if not path.exists():
        path.write_text(source)
    return _import(str(path), module, namespace)


def _import(full: str, name: str | None = None,
            namespace: dict[str, Any] | None = None) -> pytypes.ModuleType:
    """The module of codelet file ``full`` (imported once); a file that does not import is a
    CodeletCompileError naming it."""
    name = name or _PREFIX + hashlib.sha256(full.encode()).hexdigest()[:16]
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, full)
    module = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    module.__dict__.update(namespace or {})
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)  # type: ignore[union-attr]
    except SyntaxError as exc:
        del sys.modules[name]
        raise CodeletCompileError(f"{full}:{exc.lineno}: syntax error: {exc.msg}") from None
    except Exception as exc:
        del sys.modules[name]
        raise CodeletCompileError(f"addCodelets('{full}'): importing the file raised "
                                  f"{type(exc).__name__}: {exc}") from exc
    return module
