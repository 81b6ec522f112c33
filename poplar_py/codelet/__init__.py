"""The codelet language: Python vertex classes -> native kernels, as a visible list of passes
(``codelet_compiler.py``): frontend (``source``, ``frontend``), types (``type_rules``,
``inference``, ``expression_types``, ``typed_locals``, ``definite_assignment``), loop
transformations (``unroll``, ``versioning``, ``loop_versioning``, ``lanes``), LLVM code generation
(``codegen``, ``statements``, ``exprs``, ``ops``, ``fastmath``), code size (``code_size``), JIT and
cache (``jit``); ``interpreter`` runs the same codelets in Python for debugging."""
