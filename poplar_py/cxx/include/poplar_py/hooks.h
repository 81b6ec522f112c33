// poplar-py: the calls through which the shipped headers talk to the simulator.
//
// Codelet code never calls these itself. poplar-py's compiler replaces each call after inlining
// (see poplar_py/cxx/instrument.py): a cycle adjustment is added to the count of its basic block,
// a bounds check becomes a compare that fails the vertex (or nothing in unchecked mode), and the
// other hooks read the arguments the engine passes to each vertex.
#pragma once

extern "C" {
// Adjust the cycle count of the enclosing block by n (the shipped accessors' own bookkeeping
// loads are free, as field pointers and sizes are in the Python codelets' count).
void __poplar_py_cycles(long n);
// Fail the vertex with "index out of bounds" unless index < size; field: the field's object.
void __poplar_py_check(const void *field, unsigned long index, unsigned long size);
// The address of a row of a vector list from the entry the engine wrote.
void *__poplar_py_row(unsigned long entry);
// The worker running this vertex (0 for a Vertex).
unsigned __poplar_py_worker(void);
// The vertex's state record.
void *__poplar_py_vertex_base(void);
// Fail the vertex with a message (failed assertion, trap).
[[noreturn]] void __poplar_py_fail(long code);
}

#if defined(POPLAR_PY_NO_CHECKS)
#define POPLAR_PY_CHECK(field, index, size) ((void)0)
#else
// the size load is part of the check, which is free: -1 keeps the count the same in both modes
#define POPLAR_PY_CHECK(field, index, size)                                    \
  (__poplar_py_check((field), (index), (size)), __poplar_py_cycles(-1))
#endif
