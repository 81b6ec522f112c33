// poplar-py's stand-in for <poplar/AvailableVTypes.h>: which vector layouts the target has.
// The simulator keeps every vector as a pointer and a size, so each layout is available.
#pragma once
#define VECTOR_AVAIL_SCALED_PTR32 1
#define VECTOR_AVAIL_SCALED_PTR64 1
#define VECTOR_AVAIL_SCALED_PTR128 1
#define VECTOR_AVAIL_SHORT_SPAN 1
#define VECTORLIST_AVAIL_DELTAN 1
