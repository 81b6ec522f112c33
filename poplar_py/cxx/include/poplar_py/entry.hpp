// poplar-py: how the engine runs the vertices of a C++ codelet file (included after the file).
//
// For each vertex class the compiler writes POPLAR_PY_VERTEX(symbol, Class), which defines
//   <symbol>_entry(state, worker, context, cycles, offset, buffers) -> status: one compute() call,
//       the function whose cycles poplar-py counts (everything the codelet calls is inlined in it);
//   <symbol>(states, n, slots, sums, err, offset, buffers) -> status: the batch runner the engine
//       calls, over n state records, adding each vertex's cycles to sums[slots[i]].
// A failed check records the error and jumps back to the runner (longjmp): the vertex stops
// where it failed, as an IPU worker does, and nothing after it runs.
#pragma once

#include <setjmp.h>
#include <type_traits>

#include <poplar/Vertex.hpp>

namespace poplar_py {

struct ErrRecord {
  long vertex, code, field, index, size, line;
};

struct Context {
  ErrRecord *err;
  const char *states; // the batch's records, stride bytes apart: a failing lane names its own
  long stride;
  jmp_buf jump;
};

enum : long { RETURNED_FALSE = 1, OUT_OF_BOUNDS = 2, ASSERTION = 3, TRAP = 4, DIVIDE = 5 };
constexpr unsigned long BUFFER_ENTRY = 1ul << 63;
constexpr long VERTEX_OVERHEAD = 10;
constexpr long LANES = 2; // as poplar_py/cxx/lanes.py

template <typename V> constexpr bool is_multi = std::is_base_of_v<poplar::MultiVertex, V>;
template <typename V> constexpr bool is_supervisor = std::is_base_of_v<poplar::SupervisorVertex, V>;

// compute() of one vertex (or one worker of a MultiVertex): 0, or RETURNED_FALSE
template <typename V> __attribute__((always_inline)) inline long compute(V *v, long worker) {
  if constexpr (is_multi<V>) {
    static_assert(std::is_invocable_v<decltype(&V::compute), V *, unsigned>,
                  "a MultiVertex needs bool compute(unsigned workerId)");
    if constexpr (std::is_void_v<decltype(v->compute(0u))>) {
      v->compute(static_cast<unsigned>(worker));
      return 0;
    } else {
      return v->compute(static_cast<unsigned>(worker)) ? 0 : RETURNED_FALSE;
    }
  } else {
    static_assert(std::is_invocable_v<decltype(&V::compute), V *>, "a vertex needs bool compute()");
    if constexpr (std::is_void_v<decltype(v->compute())>) {
      v->compute();
      return 0;
    } else {
      return v->compute() ? 0 : RETURNED_FALSE;
    }
  }
}

using Entry = long (*)(void *, long, Context *, long long *, long, long);

// Whether LANES records from first agree on the bytes mask marks 0xff (sizes, state scalars),
// compared eight bytes at a time
template <typename V> inline bool agree(const char *first, const char *mask) {
  constexpr unsigned long words = (sizeof(V) + 7) / 8;
  for (long k = 1; k < LANES; ++k) {
    for (unsigned long w = 0; w < words; ++w) {
      unsigned long long a = 0, b = 0, m = 0;
      unsigned long n = sizeof(V) - w * 8 < 8 ? sizeof(V) - w * 8 : 8;
      __builtin_memcpy(&a, first + w * 8, n);
      __builtin_memcpy(&b, first + k * (long)sizeof(V) + w * 8, n);
      __builtin_memcpy(&m, mask + w * 8, n);
      if ((a ^ b) & m)
        return false;
    }
  }
  return true;
}

// entry runs one vertex; lanes (or null) LANES vertices whose records agree on mask's bytes.
template <typename V>
inline long run(Entry entry, Entry lanes, const char *mask, char *states, long n, const long *slots,
                long *sums, ErrRecord *err, long offset, long buffers) {
  // a MultiVertex runs its workers in turn and takes 6 x its slowest (tile cycles), as a
  // supervisor vertex takes 6 x its own
  constexpr long workers = is_multi<V> ? 6 : 1;
  constexpr long scale = is_multi<V> || is_supervisor<V> ? 6 : 1;
  Context context;
  context.err = err;
  context.states = states;
  context.stride = sizeof(V);
  if (_setjmp(context.jump) != 0)
    return err->code;
  for (long i = 0; i < n; ++i) {
    err->vertex = i;
    if (lanes != nullptr && i + LANES <= n && agree<V>(states + i * (long)sizeof(V), mask)) {
      long long cycles = 0;
      long code = lanes(states + i * (long)sizeof(V), 0, &context, &cycles, offset, buffers);
      if (code != 0) {
        err->code = code;
        err->field = err->index = err->size = err->line = -1;
        return code;
      }
      for (long k = 0; k < LANES; ++k)
        if (slots != nullptr && slots[i + k] >= 0)
          sums[slots[i + k]] += cycles * scale;
      i += LANES - 1;
      continue;
    }
    long long slowest = 0;
    for (long w = 0; w < workers; ++w) {
      long long cycles = 0;
      long code = entry(states + i * (long)sizeof(V), w, &context, &cycles, offset, buffers);
      if (code != 0) {
        err->code = code;
        err->field = err->index = err->size = err->line = -1;
        return code;
      }
      slowest = cycles > slowest ? cycles : slowest;
    }
    if (slots != nullptr && slots[i] >= 0)
      sums[slots[i]] += slowest * scale;
  }
  return 0;
}

} // namespace poplar_py

// What the compiler's rewritten hooks call (see poplar_py/hooks.h).
extern "C" {
[[noreturn]] __attribute__((used, noinline, cold)) static void
__poplar_py_failed(poplar_py::Context *ctx, long code, const char *state, const char *field, long index,
                   long size, long line) {
  poplar_py::ErrRecord *e = ctx->err;
  e->vertex = (state - ctx->states) / ctx->stride;
  e->code = code;
  e->field = field != nullptr ? field - state : -1;
  e->index = index;
  e->size = size;
  e->line = line;
  longjmp(ctx->jump, 1);
}

// within: the loop the check is in never passes the size (LLVM unswitches the loop on it)
__attribute__((used, always_inline)) static inline void
__poplar_py_checked(poplar_py::Context *ctx, const char *state, const char *field, unsigned long index,
                    unsigned long size, long line, long within) {
  if (!within && __builtin_expect(index >= size, 0))
    __poplar_py_failed(ctx, poplar_py::OUT_OF_BOUNDS, state, field, (long)index, (long)size, line);
}

__attribute__((used, always_inline)) static inline void
__poplar_py_divide_checked(poplar_py::Context *ctx, const char *state, long bad, long line) {
  if (__builtin_expect(bad != 0, 0))
    __poplar_py_failed(ctx, poplar_py::DIVIDE, state, nullptr, -1, -1, line);
}

__attribute__((used, always_inline)) static inline void *
__poplar_py_row_at(unsigned long entry, long offset, long buffers) {
  return (char *)((entry & poplar_py::BUFFER_ENTRY) ? (entry & ~poplar_py::BUFFER_ENTRY) + buffers
                                                    : entry + offset);
}
}

// symbol_lanes and symbol_has_lanes are defined by poplar-py's compiler (poplar_py/cxx/lanes.py);
// mask: the bytes of a record lanes must agree on
#define POPLAR_PY_VERTEX(symbol, mask, ...)                                                         \
  extern "C" long symbol##_entry(void *state, long worker, poplar_py::Context *context,             \
                                 long long *cycles, long offset, long buffers) {                     \
    return poplar_py::compute<__VA_ARGS__>(static_cast<__VA_ARGS__ *>(state), worker);               \
  }                                                                                                  \
  extern "C" long symbol##_lanes(void *, long, poplar_py::Context *, long long *, long, long);      \
  extern "C" const char symbol##_has_lanes;                                                          \
  extern "C" long symbol(char *states, long n, const long *slots, long *sums,                        \
                         poplar_py::ErrRecord *err, long offset, long buffers) {                     \
    return poplar_py::run<__VA_ARGS__>(symbol##_entry, symbol##_has_lanes ? symbol##_lanes : nullptr, \
                                       mask, states, n, slots, sums, err, offset, buffers);          \
  }
