"""The native loop that executes copy plans (one small LLVM module per process).

``copy_pieces(src_base, dst_base, src, dst, count, src_step, dst_step, size, n)`` moves
``n`` pieces: piece ``i`` is ``count[i]`` elements of ``size[i]`` bytes, read from
``src_base + src[i]`` every ``src_step[i]`` bytes and written to ``dst_base + dst[i]`` every
``dst_step[i]`` bytes. A piece contiguous on both sides is one ``memmove``; any other is
a typed loop (elements are copied as raw bits). Exchanges, host transfers and engine
loads all run through it.
"""

from __future__ import annotations

import ctypes
import hashlib
from functools import cache

import llvmlite.ir as ir

from . import jit

_I64 = ir.IntType(64)
_I8 = ir.IntType(8)
_PTR = ir.PointerType()
_SIZES = (1, 2, 4, 8)


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


def _module() -> str:
    triple, layout = jit.target_info()
    m = ir.Module("poplar_copy")
    m.triple, m.data_layout = triple, layout
    memmove = m.declare_intrinsic("llvm.memmove", [_PTR, _PTR, _I64])
    fn = ir.Function(m, ir.FunctionType(ir.VoidType(), [_PTR] * 8 + [_I64]), "copy_pieces")
    src_base, dst_base, src, dst, count, src_step, dst_step, size, n = fn.args
    b = ir.IRBuilder(fn.append_basic_block("entry"))

    def at(b: ir.IRBuilder, array: ir.Value, i: ir.Value) -> ir.Value:
        return b.load(b.gep(array, [i], inbounds=True, source_etype=_I64), typ=_I64)

    def piece(b: ir.IRBuilder, i: ir.Value) -> None:
        s = b.gep(src_base, [at(b, src, i)], source_etype=_I8)
        d = b.gep(dst_base, [at(b, dst, i)], source_etype=_I8)
        c, ss, ds, z = at(b, count, i), at(b, src_step, i), at(b, dst_step, i), at(b, size, i)
        flat = b.and_(b.icmp_signed("==", ss, z), b.icmp_signed("==", ds, z))
        with b.if_else(flat) as (contiguous, strided):
            with contiguous:
                b.call(memmove, [d, s, b.mul(c, z), ir.Constant(ir.IntType(1), 0)])
            with strided:
                done = fn.append_basic_block("piece.done")
                switch = b.switch(z, done)
                for nbytes in _SIZES:
                    case = fn.append_basic_block(f"size{nbytes}")
                    switch.add_case(ir.Constant(_I64, nbytes), case)
                    b.position_at_end(case)
                    elem = ir.IntType(8 * nbytes)

                    def move(b: ir.IRBuilder, j: ir.Value, elem=elem) -> None:
                        value = b.load(b.gep(s, [b.mul(j, ss)], source_etype=_I8), typ=elem)
                        b.store(value, b.gep(d, [b.mul(j, ds)], source_etype=_I8))

                    _counted_loop(b, fn, c, move, f"elements{nbytes}")
                    b.branch(done)
                b.position_at_end(done)

    _counted_loop(b, fn, n, piece, "pieces")
    b.ret_void()
    return str(m)


_SIGNATURE = ctypes.CFUNCTYPE(None, *([ctypes.c_void_p] * 8), ctypes.c_int64)


@cache
def copy_pieces() -> ctypes._CFuncPtr:
    """The compiled ``copy_pieces`` (see the module docstring)."""
    text = _module()
    key = "copy-pieces-" + hashlib.sha256((text + jit.host_fingerprint()).encode()).hexdigest()
    obj = jit.cache_read(key)
    if obj is None:
        obj = jit.compile_ir(text, 3)
        jit.cache_write(key, obj)
    return _SIGNATURE(jit.load_object(obj, key, "copy_pieces"))
