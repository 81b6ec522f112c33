"""Source lines of a C++ codelet's instructions, from the debug locations clang wrote
(``-gline-tables-only``): for an instruction inlined from a header, the line of the codelet
file it was inlined into, so errors name the line the user wrote."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass

_DBG = re.compile(r"!dbg !(\d+)")


@dataclass(frozen=True)
class Lines:
    """Source lines of instructions, from the module's debug locations: for an instruction inlined
    from a header, the line of the codelet file it was inlined into."""

    locations: dict[str, tuple[int, str, str | None]]  # !N -> (line, scope, inlinedAt)
    scope_files: dict[str, str]  # !N (a scope) -> its file's name
    file: str

    @classmethod
    def of(cls, ir_text: str, file: str) -> Lines:
        locations, scope_files, files = {}, {}, {}
        for m in re.finditer(r"^!(\d+) = (?:distinct )?!(\w+)\((.*)\)$", ir_text, re.MULTILINE):
            node, kind, body = m.groups()
            if kind == "DILocation":
                line = re.search(r"line: (\d+)", body)
                scope = re.search(r"scope: !(\d+)", body)
                inlined = re.search(r"inlinedAt: !(\d+)", body)
                locations[node] = (
                    int(line[1]) if line else 0,
                    scope[1] if scope else "",
                    inlined[1] if inlined else None,
                )
            elif kind == "DIFile":  # clang splits a path under its working folder's parent
                name = re.search(r'filename: "([^"]*)"', body)
                folder = re.search(r'directory: "([^"]*)"', body)
                path = os.path.join(folder[1] if folder else "", name[1] if name else "")
                files[node] = os.path.normpath(path)
            else:
                found = re.search(r"\bfile: !(\d+)", body)
                if found:
                    scope_files[node] = found[1]
        return cls(locations, {s: files.get(f, "") for s, f in scope_files.items()}, os.path.normpath(file))

    def line(self, instruction: str) -> int:
        """The codelet file's line of an instruction (0 when it has no location)."""
        found = _DBG.search(instruction)
        node, outermost = (found[1] if found else None), 0
        while node is not None and node in self.locations:
            line, scope, inlined = self.locations[node]
            if self.scope_files.get(scope) == self.file:
                return line
            outermost, node = line, inlined
        return outermost
