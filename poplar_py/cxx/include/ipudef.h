// poplar-py's stand-in for the IPU's <ipudef.h>: the constants codelets use to ask which worker
// they run on (with __builtin_ipu_get from <ipu_builtins.h>).
#pragma once
#include <ipu_builtins.h>

#define CTXT_WORKERS 6
#define NUM_WORKERS CTXT_WORKERS
#define CSR_W_WSR__INDEX 0x40
#define CSR_W_WSR__CTXTID_M1__SHIFT 0
#define CSR_W_WSR__CTXTID_M1__MASK 0x7
