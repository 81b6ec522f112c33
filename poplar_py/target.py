"""The simulated device: IPUModel, Target and Device (poplar/IPUModel.hpp, Target.hpp, Device.hpp).

An :class:`IPUModel` describes the IPU the program runs on (tile count, memory per
tile, worker threads, clock, exchange bandwidth). ``createDevice()`` freezes those
figures into a :class:`Target` that graphs are built for; each IPU version starts from its
architecture's figures (:mod:`poplar_py.cycles.architectures`). :mod:`poplar_py.device_manager`
lists the devices of a simulated Pod.
"""

from __future__ import annotations

import enum
import math
from dataclasses import dataclass, replace

import numpy as np

from .checks.arguments import checked_int
from .codelet.repeat import RPT_MAX_COUNT
from .cycles.architectures import (
    AMP_COMMON,
    AMP_CYCLES_PER_FIELD_POSITION,
    AMP_FIELDS,
    AMP_PRESETS,
    PRESETS,
    STREAMING_MEMORY_BANDWIDTH,
    STREAMING_MEMORY_LATENCY,
    STREAMING_PRESETS,
)
from .cycles.calibration import IPU_MODEL, Calibration
from .errors import InvalidArgumentError, InvalidMachineModelError
from .types import Type, asType
from .version import __version__


class RelativeSyncDelayType(enum.Enum):
    AUTO = "AUTO"
    NO_DELAY = "NO_DELAY"


class TargetType(enum.Enum):
    IPU = "IPU"
    IPU_MODEL = "IPU_MODEL"
    CPU = "CPU"


# Defaults that `poplar-py run --tiles/--ipus/--arch` installs for IPUModel() calls.
_cli_defaults: dict[str, object] = {}


def setModelDefaults(**fields: object) -> None:
    """Set defaults that every later ``IPUModel()`` starts from (used by the CLI)."""
    _cli_defaults.clear()
    _cli_defaults.update({k: v for k, v in fields.items() if v is not None})


class IPUModel:
    """A simulated IPU. Every field may be changed before ``createDevice()``.

    ``IPUModel("ipu2")`` (the default): 1472 tiles of 638,976 bytes at 1.33 GHz, 4 to an IPU-M2000;
    ``IPUModel("ipu21")``: a Bow IPU, the same tiles at 1.85 GHz, 4 to a Bow-2000;
    ``IPUModel("ipu1")``: 1216 tiles of 262,144 bytes, 2 to a C2 card.

    Streaming Memory, the DRAM beside an IPU-Machine's IPUs that remote buffers live in:
    ``streamingMemoryBytesPerMachine`` (256 GiB; 0 on Mk1: no remote buffers), each IPU holding an
    equal share, reached at ``streamingMemoryBandwidth`` bytes/s (15.75 GB/s, the IPU-Gateway's link)
    that the ``ipusPerMachine`` IPUs of one machine share, after ``streamingMemoryLatency`` seconds
    per transfer.

    The AMP fields (Poplar's names) describe each tile's matrix units, which PopLibs' matMul and
    convolution vertices run on: ``fp16InFp16OutConvUnitsPerTile``, ``fp16InFp32OutConvUnitsPerTile``
    and ``fp32InFp32OutConvUnitsPerTile`` (Mk1 8, 8, 8; Mk2 16, 8, 16) conv units, each taking
    ``fp16ConvUnitInputLoadElemsPerCycle`` (4) halves or ``fp32ConvUnitInputLoadElemsPerCycle`` (2)
    floats a cycle through a pipeline of ``fp16ConvUnitMaxPipelineDepth`` /
    ``fp32ConvUnitMaxPipelineDepth`` (4) stages (so 16 half or 8 float weights per unit), whose
    weights load at ``convUnitCoeffLoadBytesPerCycle`` (Mk1 8, Mk2 16) bytes a cycle.

    ``dataPathWidth`` (64 bits on both) is what a worker loads or stores per cycle: PopLibs' popops
    and popnn vertices (and their cycle estimators) process vectors of ``getVectorWidth(type)``
    elements, 2 floats or 4 halves.
    """

    RelativeSyncDelayType = RelativeSyncDelayType

    def __init__(self, IPUVersion: str | None = None) -> None:
        version = IPUVersion if IPUVersion is not None else str(_cli_defaults.get("IPUVersion", "ipu2"))
        if not isinstance(version, str):
            raise InvalidArgumentError(f"IPUModel: the IPU version is a string such as 'ipu2', got "
                                       f"{type(version).__name__} {version!r:.40}")
        if version not in PRESETS:
            raise InvalidMachineModelError(
                f"IPUModel: unknown IPU version {version!r:.40}; valid versions: {', '.join(PRESETS)}")
        preset = PRESETS[version]
        self.IPUVersion = version
        self.numIPUs = int(_cli_defaults.get("numIPUs", 1))  # type: ignore[call-overload]
        self.tilesPerIPU = int(_cli_defaults.get("tilesPerIPU", preset["tilesPerIPU"]))  # type: ignore[call-overload]
        self.memoryBytesPerTile = int(preset["memoryBytesPerTile"])
        self.numWorkerContexts = 6
        self.tileClockFrequency = float(preset["tileClockFrequency"])
        self.exchangeBytesPerCycle = 4
        self.memcpyBytesPerCycle = 8
        self.dataPathWidth = 64  # bits a worker loads or stores per cycle
        self.hostExchangeBytesPerCycle = 6
        self.minIPUSyncDelay = 0
        self.relativeSyncDelay = RelativeSyncDelayType.NO_DELAY
        self.syncCycles = 150  # one internal barrier (an assumption: see docs/cycle_model.md)
        self.globalSyncCycles: int | None = None  # None: PopLibs' model, 2 x 15 ns x f x (1 + numIPUs // 4)
        self.ipuLinkBandwidth = 32e9  # bytes/s each way, per IPU-Link (Mk2: 10 links, 320 GB/s)
        self.ipuLinkTopology = "ladder"  # or "torus" (cycles/fabric.py)
        self.ipusPerMachine = STREAMING_PRESETS[version]["ipusPerMachine"]
        self.streamingMemoryBytesPerMachine = STREAMING_PRESETS[version]["streamingMemoryBytesPerMachine"]
        self.streamingMemoryBandwidth = STREAMING_MEMORY_BANDWIDTH  # bytes/s each way, per IPU-Machine
        self.streamingMemoryLatency = STREAMING_MEMORY_LATENCY  # seconds per transfer
        for name, value in {**AMP_PRESETS[version], **AMP_COMMON}.items():
            setattr(self, name, value)

    def createDevice(self, options: dict | None = None, accurateHalf: bool = False,
                     deviceManagerId: int | None = None) -> Device:
        """Freeze the model's figures into a Device whose Target graphs are built for."""
        return Device(Target._from_model(self))

    def __repr__(self) -> str:
        return (f"IPUModel({self.IPUVersion!r}, numIPUs={self.numIPUs}, "
                f"tilesPerIPU={self.tilesPerIPU})")


@dataclass(frozen=True)
class Target:
    """The figures of the device a graph is compiled for (read with the getters)."""

    arch: str
    numIPUs: int
    tilesPerIPU: int
    bytesPerTile: int
    numWorkerContexts: int
    clockFrequency: float
    exchangeBytesPerCycle: int
    memcpyBytesPerCycle: int
    hostExchangeBytesPerCycle: int
    syncCycles: int
    globalSyncCycles: int
    relativeSyncDelay: bool = False
    minIPUSyncDelay: int = 0  # (included in syncCycles)
    targetType: TargetType = TargetType.IPU_MODEL
    ipuLinkBandwidth: float = 32e9
    ipuLinkTopology: str = "ladder"
    fp16InFp16OutConvUnitsPerTile: int = 16
    fp16InFp32OutConvUnitsPerTile: int = 8
    fp32InFp32OutConvUnitsPerTile: int = 16
    convUnitCoeffLoadBytesPerCycle: int = 16
    fp16ConvUnitInputLoadElemsPerCycle: int = 4
    fp32ConvUnitInputLoadElemsPerCycle: int = 2
    fp16ConvUnitMaxPipelineDepth: int = 4
    fp32ConvUnitMaxPipelineDepth: int = 4
    dataPathWidth: int = 64
    ipusPerMachine: int = 4
    streamingMemoryBytesPerMachine: int = 256 * 2**30
    streamingMemoryBandwidth: float = STREAMING_MEMORY_BANDWIDTH
    streamingMemoryLatency: float = STREAMING_MEMORY_LATENCY
    calibration: Calibration = IPU_MODEL  # the IPU Model's figures, or the hardware's (DeviceManager)

    @staticmethod
    def _from_model(m: IPUModel) -> Target:
        ints = dict(numIPUs=m.numIPUs, tilesPerIPU=m.tilesPerIPU, bytesPerTile=m.memoryBytesPerTile,
                    numWorkerContexts=m.numWorkerContexts, ipusPerMachine=m.ipusPerMachine,
                    exchangeBytesPerCycle=m.exchangeBytesPerCycle, dataPathWidth=m.dataPathWidth,
                    **{name: getattr(m, name) for name in AMP_FIELDS})
        for name, value in ints.items():
            if not _is_number(value) or int(value) != value or value < 1:
                raise InvalidMachineModelError(f"IPUModel.{_model_field(name)} must be a positive "
                                               f"integer, got {value!r}")
        for name in ("ipuLinkBandwidth", "streamingMemoryBandwidth"):
            value = getattr(m, name)
            if not _is_number(value) or value <= 0:
                raise InvalidMachineModelError(f"IPUModel.{name} must be positive, got {value!r}")
        for name in ("streamingMemoryBytesPerMachine", "streamingMemoryLatency"):
            value = getattr(m, name)
            if not _is_number(value) or value < 0 or (name.endswith("Machine") and int(value) != value):
                raise InvalidMachineModelError(f"IPUModel.{name} must be a non-negative "
                                               f"{'integer' if name.endswith('Machine') else 'number'}, "
                                               f"got {value!r}")
        if m.ipuLinkTopology not in ("ladder", "torus"):
            raise InvalidMachineModelError(f"IPUModel.ipuLinkTopology must be 'ladder' or 'torus', "
                                           f"got {m.ipuLinkTopology!r}")
        if not _is_number(m.tileClockFrequency) or m.tileClockFrequency <= 0:
            raise InvalidMachineModelError("IPUModel.tileClockFrequency must be positive, "
                                           f"got {m.tileClockFrequency!r}")
        return Target(
            arch=m.IPUVersion, numIPUs=int(m.numIPUs), tilesPerIPU=int(m.tilesPerIPU),
            bytesPerTile=int(m.memoryBytesPerTile), numWorkerContexts=int(m.numWorkerContexts),
            clockFrequency=float(m.tileClockFrequency),
            exchangeBytesPerCycle=int(m.exchangeBytesPerCycle),
            memcpyBytesPerCycle=int(m.memcpyBytesPerCycle),
            hostExchangeBytesPerCycle=int(m.hostExchangeBytesPerCycle),
            syncCycles=int(m.minIPUSyncDelay) + int(m.syncCycles),
            globalSyncCycles=_global_sync(m),
            ipuLinkBandwidth=float(m.ipuLinkBandwidth), ipuLinkTopology=m.ipuLinkTopology,
            relativeSyncDelay=m.relativeSyncDelay == RelativeSyncDelayType.AUTO,
            minIPUSyncDelay=int(m.minIPUSyncDelay),
            dataPathWidth=int(m.dataPathWidth), ipusPerMachine=int(m.ipusPerMachine),
            streamingMemoryBytesPerMachine=int(m.streamingMemoryBytesPerMachine),
            streamingMemoryBandwidth=float(m.streamingMemoryBandwidth),
            streamingMemoryLatency=float(m.streamingMemoryLatency),
            **{name: int(getattr(m, name)) for name in AMP_FIELDS})

    @staticmethod
    def createIPUTarget(numIPUs: int = 1, tilesPerIPU: int | None = None,
                        arch: str = "ipu2") -> Target:
        m = IPUModel(arch)
        m.numIPUs = checked_int(numIPUs, "createIPUTarget: numIPUs", 1)
        if tilesPerIPU is not None:
            m.tilesPerIPU = checked_int(tilesPerIPU, "createIPUTarget: tilesPerIPU", 1)
        return Target._from_model(m)

    @staticmethod
    def createCPUTarget(accurateHalf: bool = False, numIPUs: int = 1) -> Target:
        """Poplar's CPU target: one tile per IPU (``TargetType.CPU``), running as the IPU Model's
        tiles do here (``accurateHalf`` is accepted: halves are always IEEE binary16)."""
        m = IPUModel("ipu2")
        m.numIPUs = checked_int(numIPUs, "createCPUTarget: numIPUs", 1)
        m.tilesPerIPU = 1
        return replace(Target._from_model(m), targetType=TargetType.CPU)

    def hash(self) -> int:
        """A hash of every figure of the target (equal targets hash alike)."""
        return hash(self)

    def getNumTiles(self) -> int:
        return self.numIPUs * self.tilesPerIPU

    def getTilesPerIPU(self) -> int:
        return self.tilesPerIPU

    def getNumIPUs(self) -> int:
        return self.numIPUs

    def getBytesPerTile(self) -> int:
        return self.bytesPerTile

    def getMemoryBytes(self) -> int:
        return self.bytesPerTile * self.getNumTiles()

    def getNumWorkerContexts(self) -> int:
        return self.numWorkerContexts

    def getExchangeBytesPerCycle(self) -> int:
        return self.exchangeBytesPerCycle

    def getMemcpyBytesPerCycle(self) -> int:
        return self.memcpyBytesPerCycle

    def getTileClockFrequency(self) -> float:
        return self.clockFrequency

    def getTypeSize(self, t: Type | object) -> int:
        return asType(t).size

    def getDataPathWidth(self) -> int:
        """Bits a worker loads or stores per cycle (``IPUModel.dataPathWidth``, 64)."""
        return self.dataPathWidth

    def getVectorWidth(self, t: Type | object) -> int:
        """Elements per data path: FLOAT 2, HALF 4 on a 64-bit path."""
        return max(1, self.getDataPathWidth() // (8 * asType(t).size))

    def getFloatVectorWidth(self) -> int:
        return self.getVectorWidth("float")

    def getHalfVectorWidth(self) -> int:
        return self.getVectorWidth("half")

    def getAtomicStoreGranularity(self) -> int:
        return 4

    # ---- the AMP (Poplar's Target getters) ----------------------------------------------------
    def getFp16InFp16OutConvUnitsPerTile(self) -> int:
        return self.fp16InFp16OutConvUnitsPerTile

    def getFp16InFp32OutConvUnitsPerTile(self) -> int:
        return self.fp16InFp32OutConvUnitsPerTile

    def getFp32InFp32OutConvUnitsPerTile(self) -> int:
        return self.fp32InFp32OutConvUnitsPerTile

    def getNumConvUnits(self, inputType: Type | object, partialsType: Type | object) -> int:
        """Conv units a tile's AMP runs for these input and partials types (0: none, e.g. integers)."""
        in_type, partials = asType(inputType), asType(partialsType)
        if in_type.name == "float":
            return self.fp32InFp32OutConvUnitsPerTile
        if in_type.name == "half":
            return (self.fp16InFp32OutConvUnitsPerTile if partials.name == "float"
                    else self.fp16InFp16OutConvUnitsPerTile)
        return 0

    def getFp16ConvUnitInputLoadElemsPerCycle(self) -> int:
        return self.fp16ConvUnitInputLoadElemsPerCycle

    def getFp32ConvUnitInputLoadElemsPerCycle(self) -> int:
        return self.fp32ConvUnitInputLoadElemsPerCycle

    def getConvUnitInputLoadElemsPerCycle(self, inputType: Type | object) -> int:
        """Input elements each conv unit takes per cycle: 4 halves or 2 floats (0 for other types)."""
        name = asType(inputType).name
        return {"half": self.fp16ConvUnitInputLoadElemsPerCycle,
                "float": self.fp32ConvUnitInputLoadElemsPerCycle}.get(name, 0)

    def getConvUnitMaxPipelineDepth(self, partialsType: Type | object) -> int:
        """Stages of a conv unit's pipeline (input-load groups it holds weights for)."""
        return (self.fp16ConvUnitMaxPipelineDepth if asType(partialsType).name == "half"
                else self.fp32ConvUnitMaxPipelineDepth)

    def getWeightsPerConvUnit(self, inputType: Type | object) -> int:
        """Weights one conv unit holds: pipeline depth x input elements per cycle (16 half, 8 float)."""
        return self.getConvUnitMaxPipelineDepth(inputType) * self.getConvUnitInputLoadElemsPerCycle(inputType)

    def getConvUnitCoeffLoadBytesPerCycle(self) -> int:
        return self.convUnitCoeffLoadBytesPerCycle

    def getPeakFlopsPerCycle(self, inputType: Type | object,
                             partialsType: Type | object | None = None) -> int:
        """FLOPs the whole device's AMPs can do per cycle on ``inputType`` (a multiply-add is 2; 0
        for types the AMP does not take): tiles x the conv units for the types x the weights each
        holds x 2, over the cycles a field position takes (``AMP_CYCLES_PER_FIELD_POSITION``).
        With ``partialsType`` the peak of the units that type pair runs on (Mk2: half with float
        partials, FP16.32, has half the units of FP16.16); without it the type's headline peak."""
        in_type = asType(inputType)
        cycles = AMP_CYCLES_PER_FIELD_POSITION.get(in_type.name)
        if cycles is None:
            return 0
        units = (max(self.getNumConvUnits(in_type, in_type), self.getNumConvUnits(in_type, "float"))
                 if partialsType is None else self.getNumConvUnits(in_type, partialsType))
        return self.getNumTiles() * units * self.getWeightsPerConvUnit(in_type) * 2 // cycles

    def getTargetArchString(self) -> str:
        return self.arch

    # ---- Streaming Memory ---------------------------------------------------------------------
    def supportsRemoteBuffers(self) -> bool:
        """Whether the IPUs have Streaming Memory for remote buffers (Mk2 and Bow: yes; Mk1: no)."""
        return self.streamingMemoryBytesPerMachine > 0

    def getIPUsPerMachine(self) -> int:
        """IPUs in one IPU-Machine (4), which share its Streaming Memory and the link to it."""
        return self.ipusPerMachine

    def getStreamingMemoryBytesPerIPU(self) -> int:
        """Each IPU's share of its IPU-Machine's Streaming Memory, in bytes (64 GiB on Mk2 and Bow)."""
        return self.streamingMemoryBytesPerMachine // self.ipusPerMachine

    def getStreamingMemoryBandwidth(self) -> float:
        """Bytes per second each way between an IPU-Machine's Streaming Memory and its IPUs, shared
        by the IPUs that transfer at once."""
        return self.streamingMemoryBandwidth

    def getStreamingMemoryLatencyCycles(self) -> int:
        """Cycles a Streaming Memory transfer takes before its first bytes move."""
        return math.ceil(self.streamingMemoryLatency * self.clockFrequency)

    def getTargetType(self) -> TargetType:
        return self.targetType

    def getTargetSystemString(self) -> str:
        """The system the target describes: the simulated one, e.g. ``"ipu2 x 4 (poplar-py simulated
        IPU_MODEL)"``."""
        return f"{self.arch} x {self.numIPUs} (poplar-py simulated {self.targetType.value})"

    # ---- instruction set and synchronisation (the figures the simulator's cycle model uses) -----
    def getRptCountMax(self) -> int:
        """The largest count of a ``rpt`` loop (a 12-bit count register): 4095."""
        return RPT_MAX_COUNT

    def getNumStrideBits(self) -> int:
        """Bits of a load/store instruction's stride field (signed): 10, on every IPU version."""
        return 10

    def getTilesPerSharedExchangeBus(self) -> int:
        """Tiles sharing one exchange bus (a supertile's two). The simulated exchange gives each tile
        ``getExchangeBytesPerCycle`` bytes a cycle of its own."""
        return 2

    def getMinIPUSyncDelay(self) -> int:
        """Cycles the tile nearest the sync controller waits at a sync (``IPUModel.minIPUSyncDelay``)."""
        return self.minIPUSyncDelay

    def getMaxIPUSyncDelay(self) -> int:
        """Cycles the tile furthest from the sync controller waits: the minimum, plus, with
        ``IPUModel.relativeSyncDelay`` AUTO, one cycle per 32 tiles of distance."""
        return self.minIPUSyncDelay + ((self.tilesPerIPU - 1) // 32 if self.relativeSyncDelay else 0)

    def getGlobalSyncCycles(self) -> int:
        """Cycles a sync of every IPU takes (``IPUModel.globalSyncCycles``)."""
        return self.globalSyncCycles

    def getIpuLinkDomainSize(self) -> int:
        """IPUs joined by IPU-Links into one domain: every IPU of the target (the simulated fabric
        links them all, as a ladder or a torus)."""
        return self.numIPUs


def _global_sync(m: IPUModel) -> int:
    """A sync across IPUs: the model's field, else PopLibs' test model (poplibs_test/Util.cpp)."""
    if m.globalSyncCycles is not None:
        if not _is_number(m.globalSyncCycles) or m.globalSyncCycles < 0:
            raise InvalidMachineModelError(f"IPUModel.globalSyncCycles must be a non-negative number, "
                                           f"got {m.globalSyncCycles!r}")
        return int(m.globalSyncCycles)
    return math.ceil(2 * 15e-9 * m.tileClockFrequency * (1 + int(m.numIPUs) // 4))


def _is_number(value: object) -> bool:
    return isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(value, bool)


def _model_field(name: str) -> str:
    return {"bytesPerTile": "memoryBytesPerTile"}.get(name, name)


class Device:
    """A handle to a (simulated) device; ``attach()`` always succeeds: nothing else uses it."""

    _next_id = 0

    def __init__(self, target: Target, deviceId: int | None = None,
                 driverIDs: list[int] | None = None) -> None:
        self._target = target
        self._driver_ids = list(range(target.getNumIPUs())) if driverIDs is None else list(driverIDs)
        if deviceId is None:
            deviceId = Device._next_id
            Device._next_id += 1
        self._id = deviceId

    def getTarget(self) -> Target:
        return self._target

    def getId(self) -> int:
        return self._id

    def attach(self) -> bool:
        return True

    def detach(self) -> None:
        return None

    def getDriverIDs(self) -> list[int]:
        """The IPUs the device is made of, as the driver numbers them: a DeviceManager device's
        IPUs of the simulated Pod (device 64 is IPUs 0 and 1); a model's IPUs, from 0."""
        return list(self._driver_ids)

    def getDriverVersion(self) -> tuple[int, int, int]:
        """(major, minor, point) of the driver: there is none, so poplar-py's own version, which
        runs the device (C++ fills three out-parameters; Python returns them)."""
        major, minor, point = (int(x) for x in __version__.split(".")[:3])
        return major, minor, point

    def getAttributes(self) -> dict[str, str]:
        """The device's attributes, as Poplar's (name to value): what a simulated device has."""
        t = self._target
        return {"type": t.targetType.value, "IPU version": t.arch, "numIPUs": str(t.getNumIPUs()),
                "tilesPerIPU": str(t.getTilesPerIPU()), "driver IDs": ",".join(map(str, self.getDriverIDs())),
                "driver": f"poplar-py {__version__} (simulated)"}

    def getAttribute(self, name: str) -> str:
        """One of :meth:`getAttributes` by name."""
        attributes = self.getAttributes()
        if not isinstance(name, str) or name not in attributes:
            raise InvalidArgumentError(f"Device.getAttribute: no attribute {name!r:.40} (the device has: "
                                       f"{', '.join(attributes)})")
        return attributes[name]

    def reset(self) -> None:
        """Reset the device: a simulated device holds no state of its own (an engine's ``load``
        writes its tile memories afresh), so nothing changes."""

    def supportsRemoteBuffers(self) -> bool:
        """Whether the device has Streaming Memory for remote buffers (IPU-M2000 and Bow-2000 IPUs:
        yes; Mk1 C2 cards: no)."""
        return self._target.supportsRemoteBuffers()

    def createVirtualDevice(self, tilesPerIPU: int) -> Device:
        tiles = checked_int(tilesPerIPU, "createVirtualDevice: tilesPerIPU", 1)
        return Device(replace(self._target, tilesPerIPU=tiles), driverIDs=self._driver_ids)

    @staticmethod
    def createCPUDevice(numIPUs: int = 1) -> Device:
        """One tile per IPU, as Poplar's CPU device (:meth:`Target.createCPUTarget`)."""
        return Device(Target.createCPUTarget(numIPUs=numIPUs))
