"""poprand codelets (loaded by ``poplibs_py.poprand.addCodelets``).

Every generator vertex draws from its worker's xoroshiro128+ state in tile memory and writes it
back advanced; ``SetSeed`` sets a tile's states from a seed tensor with splitmix64; see
``random.py``.
"""
