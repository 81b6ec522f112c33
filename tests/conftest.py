"""The tests' defaults: every build checks its compiler passes' results (``POPLAR_PY_CHECK_PASSES``;
it adds about 2% to a run), unless the environment says otherwise."""

import os

os.environ.setdefault("POPLAR_PY_CHECK_PASSES", "1")
