"""The native loops that execute copy plans (one small LLVM module per process).

``copy_pieces(src_base, dst_base, pieces, n)`` moves ``n`` pieces, each a row of six int64
``(src, dst, count, src_step, dst_step, size)``: ``count`` elements of ``size`` bytes, read
from ``src_base + src`` every ``src_step`` bytes and written to ``dst_base + dst`` every
``dst_step`` bytes. ``copy_uniform_<size>(src_base, dst_base, pieces, n, src_step, dst_step)``
does the same for pieces that share their steps and element size (rows of
``(src, dst, count)``), the common case. A piece contiguous on both sides is one
``memmove``; any other is a typed loop (elements are copied as raw bits). Exchanges, host
transfers and engine loads all run through them.
"""

from __future__ import annotations

import ctypes
import hashlib
from functools import cache

import llvmlite.ir as ir

from ..codelet import jit

_I64 = ir.IntType(64)
_I8 = ir.IntType(8)
_PTR = ir.PointerType()
_SIZES = (1, 2, 4, 8)
_FALSE = ir.Constant(ir.IntType(1), 0)


def _counted_loop(b: ir.IRBuilder, fn: ir.Function, n: ir.Value, body, name: str) -> None:
    """for i in range(n): body(b, i); the builder ends after the loop."""
    before = b.block
    head, step, done = (fn.append_basic_block(f"{name}.{x}") for x in ("head", "body", "done"))
    b.branch(head)
    b.position_at_end(head)
    i = b.phi(_I64)
    i.add_incoming(ir.Constant(_I64, 0), before)
    b.cbranch(b.icmp_signed("<", i, n), step, done)
    b.position_at_end(step)
    body(b, i)
    i.add_incoming(b.add(i, ir.Constant(_I64, 1)), b.block)
    b.branch(head)
    b.position_at_end(done)


def _row(b: ir.IRBuilder, table: ir.Value, i: ir.Value, width: int) -> list[ir.Value]:
    """Row ``i`` of an int64 table ``width`` wide."""
    first = b.mul(i, ir.Constant(_I64, width))
    return [b.load(b.gep(table, [b.add(first, ir.Constant(_I64, k))], inbounds=True, source_etype=_I64),
                   typ=_I64) for k in range(width)]


def _byte(b: ir.IRBuilder, base: ir.Value, offset: ir.Value) -> ir.Value:
    return b.gep(base, [offset], source_etype=_I8)


def _strided(b: ir.IRBuilder, fn: ir.Function, s: ir.Value, d: ir.Value, count: ir.Value, ss: ir.Value,
             ds: ir.Value, nbytes: int) -> None:
    """``count`` elements of ``nbytes`` bytes, ``ss`` bytes apart at ``s``, to ``ds`` apart at ``d``."""
    elem = ir.IntType(8 * nbytes)

    def move(b: ir.IRBuilder, j: ir.Value) -> None:
        value = b.load(b.gep(s, [b.mul(j, ss)], source_etype=_I8), typ=elem)
        b.store(value, b.gep(d, [b.mul(j, ds)], source_etype=_I8))

    _counted_loop(b, fn, count, move, f"elements{nbytes}")


def _copy_pieces(m: ir.Module, memmove: ir.Function) -> None:
    """copy_pieces: every piece has its own steps and element size."""
    fn = ir.Function(m, ir.FunctionType(ir.VoidType(), [_PTR] * 3 + [_I64]), "copy_pieces")
    src_base, dst_base, pieces, n = fn.args
    b = ir.IRBuilder(fn.append_basic_block("entry"))

    def piece(b: ir.IRBuilder, i: ir.Value) -> None:
        src, dst, count, ss, ds, size = _row(b, pieces, i, 6)
        s, d = _byte(b, src_base, src), _byte(b, dst_base, dst)
        contiguous = b.and_(b.icmp_signed("==", ss, size), b.icmp_signed("==", ds, size))
        with b.if_else(contiguous) as (flat, strided):
            with flat:
                b.call(memmove, [d, s, b.mul(count, size), _FALSE])
            with strided:
                done = fn.append_basic_block("piece.done")
                switch = b.switch(size, done)
                for nbytes in _SIZES:
                    case = fn.append_basic_block(f"size{nbytes}")
                    switch.add_case(ir.Constant(_I64, nbytes), case)
                    b.position_at_end(case)
                    _strided(b, fn, s, d, count, ss, ds, nbytes)
                    b.branch(done)
                b.position_at_end(done)

    _counted_loop(b, fn, n, piece, "pieces")
    b.ret_void()


def _copy_uniform(m: ir.Module, memmove: ir.Function, nbytes: int) -> None:
    """copy_uniform_<nbytes>: pieces of (src, dst, count) sharing their steps and element size."""
    signature = ir.FunctionType(ir.VoidType(), [_PTR] * 3 + [_I64] * 3)
    fn = ir.Function(m, signature, f"copy_uniform_{nbytes}")
    src_base, dst_base, pieces, n, ss, ds = fn.args
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    size = ir.Constant(_I64, nbytes)

    def whole(b: ir.IRBuilder, i: ir.Value) -> None:
        src, dst, count = _row(b, pieces, i, 3)
        s, d = _byte(b, src_base, src), _byte(b, dst_base, dst)
        with b.if_else(b.icmp_signed("==", count, ir.Constant(_I64, 1))) as (one, many):
            with one:  # single elements (scattered data) are common: no call for them
                elem = ir.IntType(8 * nbytes)
                b.store(b.load(s, typ=elem), d)
            with many:
                b.call(memmove, [d, s, b.mul(count, size), _FALSE])

    def strided(b: ir.IRBuilder, i: ir.Value) -> None:
        src, dst, count = _row(b, pieces, i, 3)
        _strided(b, fn, _byte(b, src_base, src), _byte(b, dst_base, dst), count, ss, ds, nbytes)

    contiguous = b.and_(b.icmp_signed("==", ss, size), b.icmp_signed("==", ds, size))
    with b.if_else(contiguous) as (flat, scattered):
        with flat:
            _counted_loop(b, fn, n, whole, "runs")
        with scattered:
            _counted_loop(b, fn, n, strided, "pieces")
    b.ret_void()


def _module() -> str:
    triple, layout = jit.target_info()
    m = ir.Module("poplar_copy")
    m.triple, m.data_layout = triple, layout
    memmove = m.declare_intrinsic("llvm.memmove", [_PTR, _PTR, _I64])
    _copy_pieces(m, memmove)
    for nbytes in _SIZES:
        _copy_uniform(m, memmove, nbytes)
    return str(m)


_PIECES = ctypes.CFUNCTYPE(None, *([ctypes.c_void_p] * 3), ctypes.c_int64)
_UNIFORM = ctypes.CFUNCTYPE(None, *([ctypes.c_void_p] * 3), ctypes.c_int64, ctypes.c_int64, ctypes.c_int64)


@cache
def _library() -> dict[str, int]:
    text = _module()
    key = "copy-" + hashlib.sha256((text + jit.host_fingerprint()).encode()).hexdigest()
    obj = jit.cache_read(key)
    if obj is None:
        obj = jit.compile_ir(text, 3)
        jit.cache_write(key, obj)
    names = ["copy_pieces"] + [f"copy_uniform_{size}" for size in _SIZES]
    return {name: jit.load_object(obj, f"{key}-{name}", name) for name in names}


@cache
def copy_pieces() -> ctypes._CFuncPtr:
    """``copy_pieces(src_base, dst_base, pieces, n)``: rows of (src, dst, count, src step, dst step, size)."""
    return _PIECES(_library()["copy_pieces"])


@cache
def copy_uniform(size: int) -> ctypes._CFuncPtr:
    """``copy_uniform(src_base, dst_base, pieces, n, src_step, dst_step)``: rows of (src, dst,
    count), every element ``size`` bytes."""
    return _UNIFORM(_library()[f"copy_uniform_{size}"])
