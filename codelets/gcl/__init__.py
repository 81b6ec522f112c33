"""gcl codelets (loaded by the collectives of ``poplibs_py.gcl`` when they first need them)."""
