// poplar-py's stand-in for <poplar/StackSizeDefs.hpp>: stack sizes of assembly codelets, which
// the simulator does not run, so the declarations are accepted and have no effect.
#pragma once
#define DEF_STACK_USAGE(size, name)
#define DEF_STACK_SIZE(name, size)
