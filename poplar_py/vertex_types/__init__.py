"""The vertex types a graph knows and how they compile: finding codelet classes (:mod:`.loading`),
the registry of codelets and template instances (:mod:`.registry`), codelets written in the
program's ``__main__`` (:mod:`.inline`), and the back ends behind one interface, Python classes and
C++ (:mod:`.backends`)."""
