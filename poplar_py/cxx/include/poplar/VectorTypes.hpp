// poplar-py's stand-in for <poplar/VectorTypes.hpp>: float2, half4 and the other short vectors.
#pragma once
#include <poplar/HalfFloat.hpp>
