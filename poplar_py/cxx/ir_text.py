"""The shapes of LLVM IR text lines that the C++ codelet passes read (clang's output after
inlining: one instruction a line, values and labels unquoted)."""

from __future__ import annotations

import re

#: a block's label line: ``12:`` or ``for.body:``
LABEL = re.compile(r"^([-\w.$]+|\"[^\"]+\"):")
#: an instruction with a result: (its name, the rest)
RESULT = re.compile(r"^\s*(%[-\w.$]+) = (.*)$")
#: a function definition's line: (its name)
DEFINE = re.compile(r"^define [^@]*@([-\w.$]+)\(")
