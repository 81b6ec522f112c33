"""Checks of what comes from outside: the arguments user programs pass (:mod:`.arguments`), and
whether a loaded object tree is what its annotations say (:mod:`.annotations`)."""
