"""Engine options: Poplar-style string flags, with POPLAR_ENGINE_OPTIONS (JSON) added on top."""

from __future__ import annotations

import difflib
import json
import os
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from .errors import InvalidOptionError, OptionTypeError

_BOOL = {"true": True, "false": False}

# name -> (default, kind); a kind is one of KINDS or a tuple of the allowed values
_KNOWN: dict[str, tuple[str, Any]] = {
    "debug.allowOutOfMemory": ("false", "bool"),
    "debug.retainDebugInformation": ("true", "bool"),
    "debug.instrument": ("false", "bool"),
    "debug.instrumentCompute": ("false", "bool"),
    "debug.instrumentControlFlow": ("false", "bool"),
    "debug.instrumentExternalExchange": ("false", "bool"),
    "debug.computeInstrumentationLevel": ("tile", ("vertex", "tile", "ipu", "device")),
    # the tiles' floating-point control words at load (csr_functions.py)
    "debug.floatPointOpException": ("false", "bool"),
    "debug.divideByZeroException": ("false", "bool"),
    "debug.nanOverflowException": ("false", "bool"),
    "tileMapping.strict": ("false", "bool"),
    "codelets.mode": ("native", ("native", "interpreter")),
    "codelets.checkBounds": ("true", "bool"),
    "codelets.fastMath": ("false", "bool"),
    # checked kernels: the cycles one vertex may count before it fails with VertexError (a loop
    # that never ends fails in seconds; no real vertex counts this many: codelet/budget.py)
    "codelets.cycleBudget": ("10000000000", "int"),
    "autoReport.all": ("false", "bool"),
    "autoReport.directory": (".", "str"),
    "autoReport.outputGraphProfile": ("false", "bool"),
    "autoReport.outputExecutionProfile": ("false", "bool"),
    "autoReport.outputDebugInfo": ("false", "bool"),
    "autoReport.executionProfileProgramRunCount": ("1000", "int"),
    "profiler.format": ("json", ("json", "v1", "v2", "v3", "experimental")),
    "exchange.enablePrefetch": ("true", "bool"),
    "exchange.streamBufferOverlap": ("hostRearrangeOnly", ("none", "hostRearrangeOnly", "any")),
    "random.seed": ("0", "int"),  # the tiles' generators at load (random_seed.py)
}


#: Poplar engine options (its documented list, and legacy ones that ported programs pass) that
#: mean nothing on a simulated IPU: accepted, their values checked, with no effect
#: (docs/reference/options.md lists them).
IGNORED: dict[str, Any] = {
    "autoReport.outputArchive": "bool",
    "autoReport.outputLoweredVars": "bool",
    "autoReport.outputSerializedGraph": "bool",
    "autoReport.streamAtEachRun": "bool",
    "debug.branchRecordTile": "int",
    "debug.cpuMultiThreadExecution": "bool",
    "debug.executionProfile": "str",
    "debug.graphReportDestination": "str",
    "debug.loweredVarDumpFile": "str",
    "debug.outputAllSymbols": "bool",
    "debug.profilingTile": "int",
    "debug.runtimeVerify": "bool",
    "debug.supportsFloatingPointExceptions": "bool",
    "debug.trace": "bool",
    "debug.verify": "bool",
    "opt.enableMultiAccessCopies": "bool",
    "opt.enableSwSyncs": "bool",
    "opt.internalExchangeOptimisationTarget": ("balanced", "cycles", "memory"),
    "opt.limitVertexStateToLower256K": "bool",
    "opt.maxCompilationThreads": "int",
    "opt.maxComputeSetsPerLoweredCopy": "int",
    "opt.maxCopyMergeSize": "int",
    "opt.maxLinkerThreads": "int",
    "opt.useAutoloader": "bool",
    "prng.enable": "bool",
    "prng.seed": "int",
    "profiler.includeCycleEstimates": "bool",
    "profiler.includeFlopEstimates": "bool",
    "profiler.perExecutionStreamCopyCycles": "bool",
    "profiler.replicaToProfile": "int",
    "profiler.useUnstableFormat": "bool",
    "streamCallbacks.maxLookahead": "int|unlimited",
    "streamCallbacks.multiThreadMode": ("singleThread", "collaborative", "dedicated"),
    "streamCallbacks.numWorkerThreads": "int|auto",
    "streamCallbacks.numaAware": "bool",
    "target.deterministicWorkers": ("true", "false", "portable"),
    "target.exceptionPollPeriodUs": "int",
    "target.extendedMemory": "bool",
    "target.gatewayMode": "bool",
    "target.gatewayWriteCombining": "bool",
    "target.hostSyncTimeout": "float",
    "target.maxStreamCallbackThreadsPerNumaNode": "int|auto",
    "target.saveArchive": "str",
    "target.supervisorStackSizeInBytes": "int",
    "target.syncMethod": ("polling", "hybrid", "default"),
    "target.syncPollPeriodUs": "int",
    "target.syncReplicasIndependently": "bool",
    "target.textSectionSizeInBytes": "int",
    "target.workerStackSizeInBytes": "int",
}

_INT = re.compile(r"(0[xX][0-9a-fA-F]+|[0-9]+)")
_FLOAT = re.compile(r"[0-9]+(\.[0-9]*)?([eE][-+]?[0-9]+)?|\.[0-9]+([eE][-+]?[0-9]+)?")

#: kind -> (does a value (lower-cased) fit, what the message says it must be). Integers may be
#: hexadecimal (``0x400``), as Poplar's.
KINDS: dict[str, tuple[Callable[[str], bool], str]] = {
    "bool": (lambda v: v in _BOOL, "'true' or 'false'"),
    "int": (lambda v: _INT.fullmatch(v) is not None, "a non-negative integer (decimal or 0x hexadecimal)"),
    "float": (lambda v: _FLOAT.fullmatch(v) is not None, "a non-negative number"),
    "str": (lambda v: True, "a string"),
    "int|auto": (lambda v: v == "auto" or _INT.fullmatch(v) is not None, "a non-negative integer or 'auto'"),
    "int|unlimited": (lambda v: v == "unlimited" or _INT.fullmatch(v) is not None,
                      "a non-negative integer or 'unlimited'"),
}


@dataclass(frozen=True)
class EngineOptions:
    values: Mapping[str, str]

    def flag(self, name: str) -> bool:
        return _BOOL[self.values[name]]

    def __getitem__(self, name: str) -> str:
        return self.values[name]

    def integer(self, name: str) -> int:
        """An "int" option's value (decimal or 0x hexadecimal)."""
        return int(self.values[name], 16 if self.values[name].lower().startswith("0x") else 10)


def _normalise(name: str, value: Any) -> str:
    if not isinstance(name, str):
        raise OptionTypeError(f"engine option names are strings, got {type(name).__name__} {name!r:.40}")
    kind = _KNOWN[name][1] if name in _KNOWN else IGNORED.get(name)
    if kind is None:
        close = difflib.get_close_matches(name, [*_KNOWN, *IGNORED], n=1, cutoff=0.6) \
            or [k for k in _KNOWN if k.split(".")[-1].lower() == name.split(".")[-1].lower()]
        hint = f"; did you mean '{close[0]}'?" if close else ""
        raise InvalidOptionError(f"unknown engine option '{name}'{hint}")
    if not isinstance(value, (str, bool, int, float)):
        raise OptionTypeError(f"engine option '{name}' takes a string, got {type(value).__name__} "
                              f"{value!r:.40}")
    text = str(value).lower() if isinstance(value, bool) else str(value)
    if isinstance(kind, tuple):  # any case, stored in lower case
        if text.lower() not in {k.lower() for k in kind}:
            raise InvalidOptionError(f"engine option '{name}' must be one of {', '.join(kind)}, "
                                     f"got {value!r}")
        return text.lower()
    fits, what = KINDS[kind]
    if not fits(text if kind == "str" else text.lower()):
        raise InvalidOptionError(f"engine option '{name}' must be {what}, got {value!r}")
    return text.lower() if kind == "bool" else text


def parseEngineOptions(options: Mapping[str, Any] | None) -> EngineOptions:
    """Validate options (a dict of strings); POPLAR_ENGINE_OPTIONS (JSON) overrides them."""
    values = {name: default for name, (default, _) in _KNOWN.items()}
    if options is not None and not isinstance(options, Mapping):
        raise OptionTypeError(f"engine options are a dict of option name to value, got "
                              f"{type(options).__name__} {options!r:.60}")
    for name, value in (options or {}).items():
        values[name] = _normalise(name, value)
    env = os.environ.get("POPLAR_ENGINE_OPTIONS")
    if env:
        try:
            extra = json.loads(env)
        except json.JSONDecodeError as exc:
            raise InvalidOptionError(f"POPLAR_ENGINE_OPTIONS is not valid JSON: {exc}") from None
        if not isinstance(extra, dict):
            raise InvalidOptionError("POPLAR_ENGINE_OPTIONS must be a JSON object")
        for name, value in extra.items():
            values[name] = _normalise(name, value)
    return EngineOptions(values)
