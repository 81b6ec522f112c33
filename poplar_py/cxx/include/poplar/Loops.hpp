// poplar-py's stand-in for <poplar/Loops.hpp>: the type of the IPU's hardware loop counts.
#pragma once

typedef unsigned rptsize_t;
