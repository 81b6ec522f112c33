"""The graph compiler: frozen graph IR + programs -> executable, as the list of passes in
``graph_compiler.py``; the steps it emits (``steps.py``) are data that :mod:`poplar_py.runtime`
runs. Codelets are compiled by :mod:`poplar_py.codelet` (Python) and :mod:`poplar_py.cxx` (C++)."""
