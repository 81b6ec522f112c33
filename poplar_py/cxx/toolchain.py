"""clang from the ``ziglang`` wheel: finding it, checking it matches llvmlite, running it.

The wheel (the ``cxx`` extra) ships clang inside the ``zig`` binary (``zig clang``) with libc++
and glibc headers, so compiling a codelet needs nothing from the system. The IR clang writes
is read by llvmlite, so both must be built on the same LLVM major version: checked at first use,
with the exact ``pip install`` line when they differ.
"""

from __future__ import annotations

import functools
import re
import subprocess
from dataclasses import dataclass
from pathlib import Path

import llvmlite.binding as llvm

from ..errors import CodeletError

INCLUDE_DIR = Path(__file__).parent / "include"
#: the ziglang release whose clang is built on the LLVM major llvmlite 0.50 uses (22)
ZIGLANG_PIN = "ziglang==0.17.1"
#: seconds one clang run may take (a template instantiated without end is cut off, not waited for)
CLANG_TIMEOUT = 120
_TRIPLE = "x86_64-unknown-linux-gnu"
#: what zig's own driver defines for its libc++ headers (their ``__config_site``)
_LIBCXX_DEFINES = (
    "_LIBCPP_ABI_VERSION=1",
    "_LIBCPP_ABI_NAMESPACE=__1",
    "_LIBCPP_HAS_THREADS=1",
    "_LIBCPP_HAS_MONOTONIC_CLOCK",
    "_LIBCPP_HAS_TERMINAL",
    "_LIBCPP_HAS_MUSL_LIBC=0",
    "_LIBCXXABI_DISABLE_VISIBILITY_ANNOTATIONS",
    "_LIBCPP_DISABLE_VISIBILITY_ANNOTATIONS",
    "_LIBCPP_HAS_VENDOR_AVAILABILITY_ANNOTATIONS=0",
    "_LIBCPP_HAS_FILESYSTEM=0",
    "_LIBCPP_HAS_LOCALIZATION=0",
    "_LIBCPP_HAS_UNICODE",
    "_LIBCPP_HAS_WIDE_CHARACTERS",
    "_LIBCPP_HAS_NO_STD_MODULES",
    "_LIBCPP_PSTL_BACKEND_SERIAL",
    "_LIBCPP_HARDENING_MODE=_LIBCPP_HARDENING_MODE_NONE",
    "_LIBCPP_ASSERTION_SEMANTIC_DEFAULT=_LIBCPP_ASSERTION_SEMANTIC_IGNORE",
    "__GLIBC_MINOR__=31",
)
_DIAGNOSTIC = re.compile(
    r"^(?P<file>[^\n:]+):(?P<line>\d+):(?P<col>\d+): (?P<kind>error|fatal error): (?P<msg>.*)$", re.MULTILINE
)


@dataclass(frozen=True)
class Clang:
    """The clang to run: the zig binary, its library folder and its version."""

    zig: Path
    lib: Path
    version: str  # clang's, e.g. "22.1.8"

    def base_args(self) -> list[str]:
        """Target, hermetic include paths (zig's libc++ and glibc headers, then poplar-py's)."""
        lib = self.lib
        args = [
            str(self.zig),
            "clang",
            "-target",
            _TRIPLE,
            "-nostdinc",
            "-nostdinc++",
            "-isystem",
            str(INCLUDE_DIR),
        ]
        for sub in (
            "libcxx/include",
            "libcxxabi/include",
            "include",
            "libc/include/x86-linux-gnu",
            "libc/include/generic-glibc",
            "libc/include/x86-linux-any",
            "libc/include/any-linux-any",
        ):
            args += ["-isystem", str(lib / sub)]
        return args + [f"-D{d}" for d in _LIBCXX_DEFINES]

    def run(self, args: list[str], what: str, source: str | None = None) -> str:
        """Run clang; its standard output. A clang error is a CodeletError quoting its first
        diagnostics (file:line: message), a run longer than CLANG_TIMEOUT one saying so."""
        try:
            done = subprocess.run(
                self.base_args() + args,
                input=source,
                capture_output=True,
                text=True,
                timeout=CLANG_TIMEOUT,
                check=False,
            )
        except subprocess.TimeoutExpired:
            raise CodeletError(f"{what}: clang did not finish in {CLANG_TIMEOUT} s") from None
        if done.returncode != 0:
            raise CodeletError(f"{what}: clang failed:\n{first_errors(done.stderr)}")
        return done.stdout


def first_errors(stderr: str, limit: int = 5) -> str:
    """clang's error lines (file:line:col: error: message), at most ``limit``; else its output."""
    found = [
        f"{m['file']}:{m['line']}:{m['col']}: {m['kind']}: {m['msg']}" for m in _DIAGNOSTIC.finditer(stderr)
    ]
    if not found:
        return stderr.strip()[-2000:] or "(no message)"
    more = f"\n... and {len(found) - limit} more" if len(found) > limit else ""
    return "\n".join(found[:limit]) + more


@functools.cache
def clang() -> Clang:
    """The checked toolchain (found once per process). Raises CodeletError when the ``cxx``
    extra is missing or its LLVM major differs from llvmlite's, saying what to install."""
    try:
        import ziglang  # the cxx extra: looked for when a C++ file is first added, not on import
    except ImportError:
        raise CodeletError(
            "C++ codelets need clang from the 'ziglang' wheel: install the cxx extra "
            f"(pip install 'poplar-py[cxx]', or pip install '{ZIGLANG_PIN}')"
        ) from None
    folder = Path(ziglang.__file__).parent
    zig = folder / "zig"
    try:
        out = subprocess.run(
            [str(zig), "clang", "--version"], capture_output=True, text=True, timeout=60, check=True
        ).stdout
    except (OSError, subprocess.SubprocessError) as exc:
        raise CodeletError(
            f"C++ codelets: cannot run {zig} clang ({exc}); reinstall with "
            f"pip install --force-reinstall '{ZIGLANG_PIN}'"
        ) from None
    found = re.search(r"clang version (\d+)\.(\d+)\.(\d+)", out)
    if found is None:
        raise CodeletError(f"C++ codelets: cannot read clang's version from {zig} clang --version")
    major = int(found[1])
    if major != llvm.llvm_version_info[0]:
        raise CodeletError(
            f"C++ codelets: the ziglang wheel's clang {found[0].split()[-1]} is built on LLVM {major} but "
            f"llvmlite on LLVM {llvm.llvm_version_info[0]}: the IR clang writes must be read by the same "
            f"major version; pip install '{ZIGLANG_PIN}' (the release matching this llvmlite)"
        )
    return Clang(zig, folder / "lib", found[0].split()[-1])
