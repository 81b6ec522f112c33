"""The on-disk kernel cache: hits across processes, corruption, location, disabling, keys."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

from codelet_harness import STRICT, isolated_cache, load_module  # noqa: F401

from poplar_py.codelet import codelet_compiler, jit
from poplar_py.codelet.codelet_compiler import KernelOptions, check_codelet, compile_codelet, kernel_key
from poplar_py.codelet.codelet_compiler import _typed as typed_of

CODELET = textwrap.dedent("""
    from poplar_py.vertex import Vertex, Input, Output, Vector

    SCALE = 2.0

    class Scale(Vertex):
        x: Input[Vector[float]]
        out: Output[Vector[float]]

        def compute(self):
            for i in range(len(self.x)):
                self.out[i] = self.x[i] * SCALE
    """)

SCRIPT = textwrap.dedent("""
    import sys, numpy as np
    sys.path.insert(0, sys.argv[1])
    import scale_codelet
    from poplar_py.codelet.codelet_compiler import compile_codelet, ERR_DTYPE
    c = compile_codelet(scale_codelet.Scale)
    x = np.arange(4, dtype=np.float32); out = np.zeros(4, np.float32)
    st = np.zeros(1, c.state_dtype)
    st["x.ptr"], st["x.size"], st["out.ptr"], st["out.size"] = x.ctypes.data, 4, out.ctypes.data, 4
    err = np.zeros(1, ERR_DTYPE)
    assert c.run(st.ctypes.data, 1, 0, 0, err.ctypes.data) == 0
    assert list(out) == [i * scale_codelet.SCALE for i in range(4)], out
    print("HIT" if c.cache_hit else "MISS")
    """)


def compile_in_fresh_process(tmp_path: Path, cache: Path | None, enabled: bool = True,
                             source: str = CODELET) -> str:
    (tmp_path / "scale_codelet.py").write_text(source)
    env = {k: v for k, v in os.environ.items() if not k.startswith("POPLAR_PY_CACHE")}
    if cache is not None:
        env["POPLAR_PY_CACHE_DIR"] = str(cache)
    if not enabled:
        env["POPLAR_PY_CACHE"] = "0"
    env["PYTHONPATH"] = str(Path(__file__).resolve().parents[2])
    result = subprocess.run(
        [sys.executable, "-c", SCRIPT, str(tmp_path)],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    return result.stdout.strip()


def objects(cache: Path) -> list[Path]:
    return sorted(p for p in cache.rglob("*") if p.is_file())


def test_second_compile_in_a_fresh_process_is_a_disk_hit(tmp_path):
    cache = tmp_path / "cache"
    assert compile_in_fresh_process(tmp_path, cache) == "MISS"
    files = objects(cache)
    assert len(files) == 1 and files[0].suffix == ".o"  # written via a temporary file, nothing left over
    assert files[0].parent.name == files[0].stem[:2]
    assert compile_in_fresh_process(tmp_path, cache) == "HIT"


def test_corrupted_cache_file_is_recompiled(tmp_path):
    cache = tmp_path / "cache"
    compile_in_fresh_process(tmp_path, cache)
    (path,) = objects(cache)
    good = path.read_bytes()
    for bad in (good[: len(good) // 2], good[:-10] + b"0123456789", b"garbage"):
        path.write_bytes(bad)
        assert compile_in_fresh_process(tmp_path, cache) == "MISS"
        assert path.read_bytes() == good  # rewritten
    assert compile_in_fresh_process(tmp_path, cache) == "HIT"


def test_cache_can_be_disabled(tmp_path):
    cache = tmp_path / "cache"
    assert compile_in_fresh_process(tmp_path, cache, enabled=False) == "MISS"
    assert not cache.exists()
    assert compile_in_fresh_process(tmp_path, cache, enabled=False) == "MISS"


def test_default_cache_location(monkeypatch):
    monkeypatch.delenv("POPLAR_PY_CACHE_DIR", raising=False)
    monkeypatch.delenv("POPLAR_PY_CACHE", raising=False)
    assert jit.cache_dir() == Path.home() / ".cache" / "poplar_py" / "kernels"
    monkeypatch.setenv("POPLAR_PY_CACHE", "0")
    assert jit.cache_dir() is None


def test_key_depends_on_source_constants_options_but_not_formatting(tmp_path):
    def key(source: str, options: KernelOptions = STRICT) -> str:
        module = load_module(tmp_path, source, prelude=False)
        check_codelet(module.Scale)
        return kernel_key(typed_of(module.Scale), options).digest

    base = key(CODELET)
    assert key(CODELET) == base
    assert key(CODELET.replace("self.x[i] * SCALE", "self.x[i]  *  SCALE  # comment")) == base
    assert key(CODELET.replace("SCALE = 2.0", "SCALE = 3.0")) != base
    assert key(CODELET.replace("Output[Vector[float]]", "Output[Vector[int]]")) != base
    assert key(CODELET, KernelOptions(checked=False, fast_math=False)) != base
    assert key("\n" + CODELET) != base  # line numbers end up in error records


def test_key_depends_on_the_compilers_own_source(tmp_path, monkeypatch):
    # another checkout or branch of the compiler, sharing the cache, never shares its kernels
    module = load_module(tmp_path, CODELET, prelude=False)
    check_codelet(module.Scale)
    base = kernel_key(typed_of(module.Scale), STRICT).digest
    monkeypatch.setattr(codelet_compiler, "compiler_digest", lambda: "another compiler")
    assert kernel_key(typed_of(module.Scale), STRICT).digest != base


def test_in_process_memo_and_lazy_ir(tmp_path):
    module = load_module(tmp_path, CODELET, prelude=False)
    first = compile_codelet(module.Scale, STRICT)
    assert compile_codelet(module.Scale, STRICT) is first
    again = load_module(tmp_path, CODELET, prelude=False)  # same source, another class: a disk hit
    hit = compile_codelet(again.Scale, STRICT)
    assert hit.cache_hit and hit.ir == first.ir and hit.object_size == first.object_size


def _entry(key: str, obj: bytes) -> bytes:
    """A cache entry as jit writes it, with a valid checksum (what a forger could write)."""
    import hashlib

    return jit._MAGIC + key.encode() + hashlib.sha256(key.encode() + obj).digest() + obj


OTHER = CODELET.replace("SCALE = 2.0", "SCALE = 3.0")


def test_an_entry_of_another_key_copied_over_is_a_miss(tmp_path):
    cache = tmp_path / "cache"
    compile_in_fresh_process(tmp_path, cache)
    (mine,) = objects(cache)
    other = tmp_path / "other"
    other.mkdir()
    assert compile_in_fresh_process(other, cache, source=OTHER) == "MISS"
    (theirs,) = [p for p in objects(cache) if p != mine]
    mine.write_bytes(theirs.read_bytes())  # a valid entry, of the other kernel (scaling by 3)
    assert compile_in_fresh_process(tmp_path, cache) == "MISS"  # (and the script checks it scales by 2)
    assert compile_in_fresh_process(tmp_path, cache) == "HIT"  # and the entry was replaced


def test_a_forged_entry_that_passes_its_checks_but_does_not_link_is_a_miss(tmp_path):
    cache = tmp_path / "cache"
    compile_in_fresh_process(tmp_path, cache)
    (path,) = objects(cache)
    key = path.name[:-2]
    for forged in (b"\x7fELF" + b"\0" * 60, b"garbage" * 50, path.read_bytes()[len(jit._MAGIC) + 96:][:200]):
        path.write_bytes(_entry(key, forged))
        assert compile_in_fresh_process(tmp_path, cache) == "MISS"
        assert compile_in_fresh_process(tmp_path, cache) == "HIT"
