// poplar-py's stand-in for the IPU compiler's builtins (<ipu_builtins.h>).
//
// A builtin with a meaning on the host is implemented: the worker's id from its status register,
// and the arithmetic ones. The others (the AMP and its accumulators, load-and-post-increment,
// control registers) have none on the simulator: using one is a compile error naming it.
#pragma once
#include <cmath>
#include <poplar/HalfFloat.hpp>
#include <poplar_py/hooks.h>

#define POPLAR_PY_NO_HOST_MEANING(what)                                                            \
  = delete("IPU builtin " what " has no meaning on the simulator: write the loop in C++")

// the worker id of a MultiVertex's worker (CSR_W_WSR, context id less one); 0 for other registers
inline unsigned __builtin_ipu_get(unsigned csr) { return csr == 0x40 ? __poplar_py_worker() : 0; }
inline void *__builtin_ipu_get_vertex_base() { return __poplar_py_vertex_base(); }
inline float __builtin_ipu_exp2(float x) { return exp2f(x); }
inline half __builtin_ipu_exp2(half x) { return (half)exp2f((float)x); }
inline float __builtin_ipu_rsqrt(float x) { return 1.0f / sqrtf(x); }
inline float __builtin_ipu_tanh(float x) { return tanhf(x); }
inline float __builtin_ipu_sigm(float x) { return 1.0f / (1.0f + expf(-x)); }
inline float __builtin_ipu_ln(float x) { return logf(x); }
inline float __builtin_ipu_max(float a, float b) { return fmaxf(a, b); }
inline float __builtin_ipu_min(float a, float b) { return fminf(a, b); }
inline float __builtin_ipu_absf(float x) { return fabsf(x); }
inline bool __builtin_ipu_isnan(float x) { return x != x; }
inline bool __builtin_ipu_isinf(float x) { return __builtin_isinf(x); }
inline bool __builtin_ipu_isfinite(float x) { return __builtin_isfinite(x); }
// comparisons give all ones (true) or zero in each lane, as the IPU's f32cmplt
inline float __builtin_ipu_cmplt(float a, float b) {
  unsigned r = a < b ? ~0u : 0u;
  return __builtin_bit_cast(float, r);
}
inline float2 __builtin_ipu_cmplt(float2 a, float2 b) { return __builtin_bit_cast(float2, a < b); }
// and-with-complement of the bit patterns
inline float __builtin_ipu_andc_f32(float a, float b) {
  return __builtin_bit_cast(float, __builtin_bit_cast(unsigned, a) & ~__builtin_bit_cast(unsigned, b));
}
inline float2 __builtin_ipu_f32v2axpy(float2, float2) POPLAR_PY_NO_HOST_MEANING("__builtin_ipu_f32v2axpy");
inline float2 __builtin_ipu_f32v2gina(float2, unsigned) POPLAR_PY_NO_HOST_MEANING("__builtin_ipu_f32v2gina");
inline float2 __builtin_ipu_f16v4sisoamp(half4, half4, unsigned)
    POPLAR_PY_NO_HOST_MEANING("__builtin_ipu_f16v4sisoamp");
inline void __builtin_ipu_put(unsigned, unsigned) POPLAR_PY_NO_HOST_MEANING("__builtin_ipu_put");
inline void __builtin_ipu_uput(unsigned, unsigned) POPLAR_PY_NO_HOST_MEANING("__builtin_ipu_uput");
inline unsigned __builtin_ipu_uget(unsigned) POPLAR_PY_NO_HOST_MEANING("__builtin_ipu_uget");
template <typename... A> void __builtin_ipu_ld64putcs(A...) POPLAR_PY_NO_HOST_MEANING("__builtin_ipu_ld64putcs");
template <typename... A> void __builtin_ipu_ld128putcs(A...) POPLAR_PY_NO_HOST_MEANING("__builtin_ipu_ld128putcs");
template <typename... A> void *__builtin_ipu_tapack(A...) POPLAR_PY_NO_HOST_MEANING("__builtin_ipu_tapack");
