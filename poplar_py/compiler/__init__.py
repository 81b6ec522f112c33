"""The graph compiler: frozen graph IR + programs -> executable, as the list of passes in
``pipeline.py``, and the steps and machine that run it. Codelets are compiled by
:mod:`poplar_py.codelet` (Python) and :mod:`poplar_py.cxx` (C++)."""
