"""C++ codelet tests compile into a temporary kernel cache, not ~/.cache."""

from support import isolated_cache  # noqa: F401 - an autouse fixture
