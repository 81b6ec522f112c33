"""Engine options: Poplar-style string flags, with POPLAR_ENGINE_OPTIONS (JSON) added on top."""

from __future__ import annotations

import difflib
import json
import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from .errors import InvalidOptionError, OptionTypeError

_BOOL = {"true": True, "false": False}

# name -> (default, kind); kind "bool", "str" or a tuple of allowed values
_KNOWN: dict[str, tuple[str, Any]] = {
    "debug.allowOutOfMemory": ("false", "bool"),
    "debug.retainDebugInformation": ("true", "bool"),
    "debug.instrument": ("false", "bool"),
    "debug.instrumentCompute": ("false", "bool"),
    "debug.instrumentControlFlow": ("false", "bool"),
    "debug.instrumentExternalExchange": ("false", "bool"),
    "debug.computeInstrumentationLevel": ("tile", ("vertex", "tile", "ipu", "device")),
    "tileMapping.strict": ("false", "bool"),
    "codelets.mode": ("native", ("native", "interpreter")),
    "codelets.checkBounds": ("true", "bool"),
    "codelets.fastMath": ("false", "bool"),
    "autoReport.all": ("false", "bool"),
    "autoReport.directory": (".", "str"),
    "autoReport.outputGraphProfile": ("false", "bool"),
    "autoReport.outputExecutionProfile": ("false", "bool"),
    "autoReport.outputDebugInfo": ("false", "bool"),
    "autoReport.executionProfileProgramRunCount": ("1000", "int"),
    "profiler.format": ("json", ("json",)),
    "exchange.enablePrefetch": ("true", "bool"),
    "exchange.streamBufferOverlap": ("hostRearrangeOnly", ("none", "hostrearrangeonly", "any")),
    "random.seed": ("0", "int"),  # the tiles' generators at load (random_seed.py)
}


#: Poplar engine options that mean nothing on a simulated IPU: accepted (and checked where
#: their values are simple), with no effect. README lists them.
IGNORED: dict[str, Any] = {
    "target.deterministicWorkers": ("true", "false", "portable"),
    "target.syncReplicasIndependently": "bool",
    "target.saveArchive": "str",
    "target.gatewayMode": "bool",
    "target.syncMethod": ("polling", "hybrid", "default"),
    "target.syncPollPeriodUs": "int",
    "target.exceptionPollPeriodUs": "int",
    "target.hostSyncTimeout": "str",
    "target.extendedMemory": "bool",
    "opt.internalExchangeOptimisationTarget": ("balanced", "cycles", "memory"),
    "opt.maxCopyMergeSize": "int",
    "opt.enableMultiAccessCopies": "bool",
    "opt.maxComputeSetsPerLoweredCopy": "int",
    "opt.useAutoloader": "bool",
    "opt.limitVertexStateToLower256K": "bool",
    "profiler.includeFlopEstimates": "bool",
    "profiler.perExecutionStreamCopyCycles": "bool",
    "profiler.replicaToProfile": "int",
    "autoReport.outputArchive": "bool",
    "autoReport.streamAtEachRun": "bool",
    "autoReport.outputLoweredVars": "bool",
    "autoReport.outputSerializedGraph": "bool",
    "debug.verify": "bool",
    "debug.runtimeVerify": "bool",
    "debug.supportsFloatingPointExceptions": "bool",
    "debug.floatPointOpException": "bool",
    "debug.nanOverflowException": "bool",
    "debug.divideByZeroException": "bool",
    "streamCallbacks.multiThreadMode": ("singlethread", "collaborative", "dedicated"),
    "streamCallbacks.numWorkerThreads": "str",
    "streamCallbacks.numaAware": "bool",
}


@dataclass(frozen=True)
class EngineOptions:
    values: Mapping[str, str]

    def flag(self, name: str) -> bool:
        return _BOOL[self.values[name]]

    def __getitem__(self, name: str) -> str:
        return self.values[name]


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
    if kind == "bool" and text.lower() not in _BOOL:
        raise InvalidOptionError(f"engine option '{name}' must be 'true' or 'false', got {value!r}")
    if kind == "bool":
        text = text.lower()
    if kind == "int" and not text.isdigit():
        raise InvalidOptionError(f"engine option '{name}' must be a non-negative integer, got {value!r}")
    if isinstance(kind, tuple) and text.lower() not in kind:
        raise InvalidOptionError(f"engine option '{name}' must be one of {', '.join(kind)}, got {value!r}")
    return text.lower() if isinstance(kind, tuple) else text


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
