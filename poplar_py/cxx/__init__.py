"""C++ codelets: Poplar's vertex code compiled unchanged by clang (the ziglang wheel) to LLVM IR,
counted and checked like the Python codelets, and run in the same JIT (see :mod:`.module`)."""
