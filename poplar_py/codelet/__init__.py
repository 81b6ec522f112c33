"""The codelet language: Python vertex classes -> native kernels, as a visible list of passes
(``pipeline.py``): frontend (``source``, ``frontend``), types (``types``, ``inference``,
``typed_locals``, ``assigned``), loop transformations (``unroll``, ``versioning``,
``loop_versioning``, ``lanes``), LLVM code generation (``codegen``, ``exprs``, ``ops``,
``fastmath``), code size (``size``), JIT and cache (``jit``); ``interpreter`` runs the same
codelets in Python for debugging."""
