"""Where profile reports go and when they are written: ``poplar-py run --profile FILE``
(``POPLAR_PY_PROFILE_FILE``) or the ``autoReport`` options; an engine's report is written when it
is built and again when it goes away (or at exit, or when ``poplar-py run --profile-html`` asks)."""

from __future__ import annotations

import json
import os
import weakref

from ..errors import InvalidOptionError
from ..options import EngineOptions
from .report import Profile


def report_path(options: EngineOptions, name: str) -> str | None:
    """Where the JSON report goes: `poplar-py run --profile FILE`, else autoReport.directory.
    A directory that names an existing file is an InvalidOptionError, raised when the Engine is built."""
    path = os.environ.get("POPLAR_PY_PROFILE_FILE")
    if path is None and (options.flag("autoReport.all") or options.flag("autoReport.outputGraphProfile")
                         or options.flag("autoReport.outputExecutionProfile")):
        directory = os.path.join(options["autoReport.directory"], name) if name else \
            options["autoReport.directory"]
        for parent in (options["autoReport.directory"], directory):
            if os.path.exists(parent) and not os.path.isdir(parent):
                raise InvalidOptionError(f"autoReport.directory: '{parent}' is a file, not a directory")
        path = os.path.join(directory, "profile.json")
    return path


_REPORTS: list[weakref.finalize] = []  # each live engine's report writer, in the order built


def write_profile_reports() -> None:
    """Write the JSON report of every live engine that writes one, now (they are written again
    when the engines go away): ``poplar-py run --profile-html`` renders them after the program."""
    for writer in _REPORTS:
        pending = writer.peek()
        if pending is not None:
            pending[1](*pending[2])


def keep_report(engine: object, profile: Profile, path: str) -> None:
    """Write ``profile``'s JSON report to ``path`` now (compilation), and again when ``engine`` goes
    away or the program exits, with everything that ran."""
    _write_report(profile, path)
    _REPORTS[:] = [f for f in _REPORTS if f.alive]
    _REPORTS.append(weakref.finalize(engine, _write_report, profile, path))


def _write_report(profile: Profile, path: str) -> None:
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    with open(path, "w") as f:
        f.write(json.dumps(profile.report()))  # dumps: the C encoder (dump streams in Python)
