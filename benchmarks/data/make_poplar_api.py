"""Regenerates ``poplar_api.json``: the public Poplar, PopLibs and GCL names and how often
third-party C/C++ code uses each.  ``benchmarks/api_coverage.py`` reads only that JSON file.

Usage::

    python benchmarks/data/make_poplar_api.py MIRRORS [-o benchmarks/data/poplar_api.json]

``MIRRORS`` is a folder holding one git clone (bare is fine) per public repository, at
``MIRRORS/<owner>+<name>/repo`` (or ``MIRRORS/<owner>+<name>``); the repositories used are
listed in ``CORPUS`` below.  Everything is read with ``git`` from each clone's ``HEAD`` (or the
ref given in ``CORPUS``), so the clones need no work tree.

Sources of the names
--------------------
* PopLibs: the public headers of github.com/graphcore/poplibs (``include/popops``,
  ``include/poplin``, ``include/popnn``, ``include/poprand``, ``include/poputil``, with their
  ``experimental`` subfolders).  ``parse_header`` below strips comments, string literals and
  preprocessor lines, expands the few declaration macros the headers use (popops' expression
  classes ``POPLIBS_DEFINE_EXPR_*_OP(Name, ...)``, popnn's ``DEF_NONLINEARITY*(fn, ...)``) and
  walks the braces, keeping namespace-level functions, classes/structs, enums (and their
  enumerators), type aliases, and the public member functions of classes (constructors,
  destructors, operators and data members are left out).  Namespaces ``detail``, ``internal``,
  ``core`` and ``std`` are skipped.  Overloads count once.
* Poplar: its headers are not public, so its names are the curated list ``POPLAR_API`` below,
  written from Graphcore's Poplar API reference (docs.graphcore.ai/projects/poplar-api, the
  pages of Graph, Tensor, Engine, Executable, Target, Device, DeviceManager, IPUModel,
  Program, DataStream, Type, OptionFlags, Interval, DebugContext, GraphElements, Vertex,
  CSRFunctions, CycleCount, RandomSeed, HalfFloat, Quarter and the exceptions; each group's
  key names the header page it comes from, relative to ``DOCS``, a few small headers being
  grouped together) and checked against every ``poplar::`` qualified name the corpus uses:
  constructors, operators and data members are left out as for PopLibs.
* GCL: the curated list ``GCL_API`` from Graphcore's GCL API reference (``gcl/Collectives.hpp``
  and ``gcl/CollectiveBalancedReorder.hpp``), likewise checked against every ``gcl::`` name
  the corpus uses.

How uses are counted
--------------------
The corpus is every C/C++ file (``.cpp .cc .cxx .hpp .h .hh .inl``) of the repositories in
``CORPUS`` that includes a Poplar/PopLibs/GCL header or names one of their namespaces
(``poplar::``, ``popops::``, ...); in graphcore/poplibs only ``tests/`` and ``tools/`` count
(its ``lib/`` implements the API).  In each file, after removing comments and string literals
and expanding namespace aliases (``namespace pe = popops::expr;``):

1. every qualified reference ``a::b::Name`` counts once for each API name whose qualified
   name is, or ends with, that path (``program::Copy`` under ``using namespace poplar``,
   ``BinaryOpType::ADD``); a path matching several names is shared equally between them;
2. in a file with ``using namespace N;`` an unqualified ``Name`` (a function only when
   followed by ``(``) counts for the name ``N::Name``, when it is not preceded by ``.``,
   ``->`` or ``::``;
3. a method call ``.name(`` or ``->name(`` counts for ``Class::name``; a method name owned
   by several API classes (``numElements`` of Tensor, DataStream and RemoteBuffer) is shared
   between them in proportion to how often the file names each owning class by rules 1 and 2
   (equally when it names none of them), and names too generic to attribute (``STL_LIKE``: ``size``,
   ``begin``, ``get`` ...) count only when qualified.

Counts are therefore estimates: a same-named method of an unrelated class in a file that uses
Poplar is counted too, and a call through an unqualified name without ``using namespace`` is
missed.  The JSON keeps, per name, its library, C++ qualified name, kind and count (one
decimal), and the corpus (repository, commit, number of files).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
from collections import Counter, defaultdict

POPLIBS_LIBS = ("popops", "poplin", "popnn", "poprand", "poputil")

# Public repositories whose C/C++ code uses Poplar (found by searching public code for
# `#include <poplar/`); a value other than HEAD is the ref read (tutorials' main branch dropped
# its C++ code after SDK 3.0).
CORPUS = {
    "graphcore/poplibs": "HEAD",  # tests/ and tools/ only
    "graphcore/popart": "HEAD",
    "graphcore/tensorflow": "HEAD",
    "graphcore/examples": "HEAD",
    "graphcore/tutorials": "sdk-release-3.0",
    "graphcore/poptorch": "HEAD",
    "graphcore/poprithms": "HEAD",
    "graphcore/popxl-addons": "HEAD",
    "graphcore/PopTransformer": "HEAD",
    "graphcore/distributed-kge-poplar": "HEAD",
    "graphcore/NMS": "HEAD",
    "graphcore/PopRT": "HEAD",
    "graphcore-research/tessellate-ipu": "HEAD",
    "graphcore-research/pyscf-ipu": "HEAD",
    "graphcore-research/flash-attention-ipu": "HEAD",
    "graphcore-research/sparsity-benchmarks": "HEAD",
    "jrfinkbeiner/graphcore_snn": "HEAD",
    "thorbenlouw/lbm-graphcore": "HEAD",
    "markp-gc/poplar_explorer": "HEAD",
    "markp-gc/ipu_ray_lib": "HEAD",
    "markp-gc/ipu_path_trace": "HEAD",
}

DOCS = "https://docs.graphcore.ai/projects/poplar-api/en/latest/"

# Curated Poplar API.  Each group: a documentation page, then lines
#   "class C: m1 m2"  (a class and its public methods, static ones included),
#   "enum E: A B"     (an enum and its enumerators),
#   "function: f g", "constant: X Y", "type: T"  (namespace-level names),
#   "namespace program" switches the namespace of the following lines.
POPLAR_API = {
    "poplar/graph/Graph.html": """
        class Graph: getTarget addVariable addLinearlyMappedVariable addConstant addConstantHalf
            addReplicationIndexConstant clone cloneN addHostToDeviceFIFO addDeviceToHostFIFO
            addRemoteBuffer addHostFunction addVertex addComputeSet addFunction addFunctionBuffer
            connect setTileMapping getTileMapping getVariableTileMapping setInitialValue
            setInitialValueHalf setFieldSize getFieldSize getMaxFieldDim getMaxVertexFieldValue
            setPerfEstimate getPerfEstimate registerPerfEstimator addCodelets createVirtualGraph
            createReplicatedGraph getNonReplicatedTensor getReplicationFactor getTopLevelGraph
            getVariable isConstant getSortedContiguousRegions findUnbroadcastTensor
            outputVertexGraph outputComputeGraph serializeTensors deserializeTensors
            hasCodelet getNumVertices trace
        type: replication_factor
        """,
    "poplar/graph/Tensor.html": """
        class Tensor: elementType slice slices index flatten reshape reshapePartial dimShuffle
            dimShufflePartial dimRoll expand squeeze broadcast upsample subSample reverse
            transpose reinterpret numElements shape dim rank isContiguous isParallelWriteable
            isModifiable containsAliases containsConstant intersectsWith isSliceOf
            getContiguousRegions getVarRegions valid shortRepr dumpRegions
        function: concat append
        enum UpsampleMethod: REPEAT
        """,
    "poplar/graph/TensorCloneMethod.html": """
        enum TensorCloneMethod: PRESERVE_ORDER_AND_ALIASES CREATE_NEW_ORDER
            PRESERVE_ORDER_UNLESS_ALIASES GATHER_AND_PRESERVE_TILE_ORDER_AND_ALIASES
        enum TensorCloneDuplicationMethod: DUPLICATE_BY_OUTER_DIMENSION
            DUPLICATE_BY_TILE_CONTIGUOUS_REGION
        enum VariableMappingMethod: NONE LINEAR
        """,
    "poplar/graph/GraphElements.html": """
        class ComputeSet: getId
        class VertexRef: getId
        class FieldRef: isIndexed getIndex
        class Function: getId
        class FunctionBuffer: getId
        class HostFunction: handle
        enum FunctionBufferMappingType: REMOTE
        """,
    "poplar/graph/DataStream.html": """
        class DataStream: handle numElements replicationFactor replicatedMode elementType
        class RemoteBuffer: handle getIpuToHostStream getHostToIpuStream numElements getRepeats
            elementType isRearrangeOnHost isOptimisedForMemory
        enum ReplicatedStreamMode: REPLICATE BROADCAST
        enum DataStreamType: HostToDeviceFIFO DeviceToHostFIFO HostToDeviceBuffer
            DeviceToHostBuffer
        """,
    "poplar/graph/VariableRef.html": """
        class VariableRef:
        class VariableInterval:
        """,
    "poplar/graph/VertexIntrospector.html": """
        class VertexIntrospector: getFieldInfo getTarget
        class FieldData: rank size getSizeAtIndex getInitialValue getInitialValues
        class VertexPerfEstimate:
        """,
    "poplar/execution/Engine.html": """
        class Engine: load prepare deploy run loadAndRun connectStream connectStreamToCallback
            connectHostFunction copyFromRemoteBuffer copyToRemoteBuffer readTensor writeTensor
            getProfile printProfileSummary resetExecutionProfile getTileClockFrequency
            setPrintStream setPrintTensorStream getDevice listStreams disableExecutionProfiling
            enableExecutionProfiling setStopFlag
        function: compileGraph
        """,
    "poplar/execution/Executable.html": """
        class Executable: serialize deserialize
        """,
    "poplar/execution/StreamCallback.html": """
        class StreamCallback: prefetch fetch complete invalidatePrefetched
        class LegacyStreamCallback:
        class ResizableStreamCallback:
        """,
    "poplar/execution/RuntimeOptions.html": """
        class RuntimeOptions:
        """,
    "poplar/device/Target.html": """
        class Target: createIPUTarget createCPUTarget getTargetType getTargetArchString
            getTargetSystemString getNumIPUs getTilesPerIPU getNumTiles getDataPathWidth
            getBytesPerTile getNumWorkerContexts getVectorWidth getTypeSize
            getAtomicStoreGranularity getTileClockFrequency getWeightsPerConvUnit
            getConvUnitInputLoadElemsPerCycle getFp16InFp16OutConvUnitsPerTile
            getFp32InFp32OutConvUnitsPerTile getMaxIPUSyncDelay getExchangeBytesPerCycle
            getMemcpyBytesPerCycle getNumStrideBits getRptCountMax getMemoryElementOffsets
            getInterleavedMemoryElementIndex
        enum TargetType: IPU IPU_MODEL CPU
        """,
    "poplar/device/Device.html": """
        class Device: attach detach getTarget getId getDriverIDs supportsRemoteBuffers reset
            createCPUDevice createSimulatorDevice createVirtualDevice getAttribute
        """,
    "poplar/device/DeviceManager.html": """
        class DeviceManager: createDeviceManager getDevices getDevice getNumDevices
            getChildDeviceIds acquireAvailableDevice tryAcquireAvailableDevice acquireDeviceById
        """,
    "poplar/device/IPUModel.html": """
        class IPUModel: createDevice createTarget
        """,
    "poplar/Program.html": """
        namespace program
        class Program: isEmpty
        class Sequence: add
        class Execute:
        class Repeat:
        class RepeatWhileTrue:
        class RepeatWhileFalse:
        class If:
        class Switch: add
        class Copy:
        class CrossReplicaCopy:
        class Call:
        class PrintTensor:
        class ErrorProgram:
        class Abort:
        class AbortOnCondition:
        class WriteUndef:
        class Sync:
        class AssumeEqualAcrossReplicas:
        function: dumpProgram
        namespace
        enum SyncType: INTERNAL EXTERNAL GLOBAL
        """,
    "poplar/utility/Type.html": """
        class Type: toString
        class TypeTraits:
        class equivalent_device_type:
        constant: BOOL CHAR UNSIGNED_CHAR SIGNED_CHAR UNSIGNED_SHORT SHORT UNSIGNED_INT INT
            UNSIGNED_LONG LONG UNSIGNED_LONGLONG LONGLONG HALF FLOAT DOUBLE QUARTER
        """,
    "poplar/utility/Quarter.html": """
        class QuarterMetadata: getFormat getScale
        enum QuarterMetadata::Format: F143 F152
        function: createVariableMetadataTensor createConstantMetadataTensor
            convertToDeviceType convertFromDeviceType
        """,
    "poplar/utility/OptionFlags.html": """
        class OptionFlags: set get clear remove begin end
        function: readJSON readJSONFromEnv
        """,
    "poplar/utility/Interval.html": """
        class Interval: begin end size lower upper
        class ArrayRef:
        class StringRef:
        """,
    "poplar/utility/DebugContext.html": """
        class DebugContext:
        class DebugNameAndId: getPathName getId
        class DebugInfo: setValue initializeStreamer closeStreamer
        class SourceLocation: Current
        enum DebugSerializationFormat: JSON CBOR
        """,
    "poplar/utility/HalfFloat.html": """
        function: copyDeviceHalfToFloat copyFloatToDeviceHalf copyDeviceHalfToDouble
            copyDoubleToDeviceHalf
        """,
    "poplar/utility/CSRFunctions.html": """
        class FloatingPointBehaviour:
        function: setFloatingPointBehaviour getAndModifyFloatingPointBehaviour
            restoreFloatingPointBehaviour setStochasticRounding
        """,
    "poplar/utility/CycleCount.html": """
        function: cycleCount cycleStamp
        """,
    "poplar/utility/RandomSeed.html": """
        function: getHwSeeds setHwSeeds
        """,
    "poplar/utility/Version.html": """
        function: versionString packageHash
        """,
    "poplar/utility/ProfileValue.html": """
        class ProfileValue:
        class PrintTensorFmt:
        """,
    "poplar/utility/CodeletFileType.html": """
        enum CodeletFileType: PreprocessedAsmSource AsmSource PreprocessedCSource CSource
            PreprocessedCppSource CppSource Object Auto
        enum SerializationFormat: Binary JSON
        """,
    "poplar/vertex/Vertex.html": """
        class Vertex:
        class MultiVertex: numWorkers
        class SupervisorVertex:
        class Input:
        class Output:
        class InOut:
        class Vector:
        class VectorList:
        class constraint:
        enum VectorLayout: ONE_PTR SPAN COMPACT_PTR
        enum VectorListLayout: DELTANELEMENTS COMPACT_DELTAN ONE_PTR
        """,
    "poplar/utility/exceptions.html": """
        class poplar_error:
        class runtime_error:
        class application_runtime_error:
        class recoverable_runtime_error:
        class unrecoverable_runtime_error:
        class unknown_runtime_error:
        class system_runtime_error:
        class graph_memory_allocation_error:
        class graph_connection_error:
        class graph_cycle_error:
        class graph_program_compilation_error:
        class graph_replication_error:
        class index_error:
        class invalid_machine_model:
        class invalid_option:
        class invalid_tile_mapping:
        class link_error:
        class missing_cycle_estimate:
        class parse_error:
        class stream_connection_error:
        class stream_memory_allocation_error:
        class tensor_creation_error:
        class type_error:
        class unknown_field:
        class unknown_vertex_type:
        enum RecoveryAction: IPU_RESET LINK_RESET PARTITION_RESET FULL_RESET
        """,
}

GCL_API = {
    "gcl/Collectives.html": """
        function: allReduceCrossReplica allReduceInPlaceCrossReplica
            allReduceToDestinationCrossReplica reduceScatterCrossReplica
            reduceScatterToDestinationCrossReplica allGatherCrossReplica
            allGatherToDestinationCrossReplica allToAllCrossReplica broadcastCrossReplica
            allReduceWithinReplica reduceScatterWithinReplica allGatherWithinReplica
            perIPUTiles getMinIoTiles
        class CommGroup: size replicaGroupSize type
        enum CommGroupType: ALL CONSECUTIVE ORTHOGONAL
        enum CollectiveOperator: ADD MEAN MUL MIN MAX LOGICAL_AND LOGICAL_OR SQUARE_ADD LOCAL
        class Chunk:
        class Chunks:
        class CollectiveBalancedReorder: createCollectivesTensor createReplicaSlice
            undoRearrangeForCollective rearrangeForCollective getNumRearrangedTensorElems
        class CollectiveBalancedHostRearrangement: rearrangeForCollective
            undoRearrangeForCollective
        """,
}

# Method names too generic to attribute from `.name(` alone (standard-library members and
# the like): these count only when written qualified, `Class::name`.
STL_LIKE = frozenset(("size", "begin", "end", "empty", "get", "clear", "insert", "erase", "find",
    "count", "at", "data", "front", "back", "push_back", "emplace_back", "store", "swap", "str",
    "c_str", "first", "second", "value", "release", "lock", "unlock", "wait", "join", "type",
    "remove", "reset", "lower", "upper", "complete", "fetch", "name", "print", "getImpl"))

SKIP_NAMESPACES = {"detail", "internal", "core", "std"}


# ------------------------------------------------------------------------------------------
# Curated lists


def parse_curated(spec: dict[str, str], root: str) -> list[tuple[str, str]]:
    """[(qualified name, kind)] of a curated spec, read as words: `class C:` and `enum E:`
    open a class or enum whose methods or enumerators follow, `function:`, `constant:` and
    `type:` open a list of namespace-level names, `namespace [N]` sets the namespace."""
    out: list[tuple[str, str]] = []
    keywords = {"class", "enum", "function:", "constant:", "type:", "namespace"}
    for body in spec.values():
        ns, owner, kind = root, None, None
        words = body.split()
        i = 0
        while i < len(words):
            w = words[i]
            if w == "namespace":
                if i + 1 < len(words) and words[i + 1] not in keywords:
                    ns = f"{root}::{words[i + 1]}"
                    i += 1
                else:
                    ns = root
                owner = kind = None
            elif w in ("class", "enum"):
                owner = f"{ns}::{words[i + 1].rstrip(':')}"
                kind = "method" if w == "class" else "enumerator"
                out.append((owner, w))
                i += 1
            elif w in keywords:
                owner, kind = ns, w.rstrip(":")
            elif kind is None:
                raise ValueError(f"curated word outside a group: {w!r}")
            else:
                out.append((f"{owner}::{w}", kind))
            i += 1
    return out


# ------------------------------------------------------------------------------------------
# C++ text helpers


def strip_code(text: str, keep_preproc: bool = False) -> str:
    """Comments and string/char literals removed (literals become ""), line breaks kept."""
    out = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c == "/" and i + 1 < n and text[i + 1] == "/":
            j = text.find("\n", i)
            i = n if j < 0 else j
        elif c == "/" and i + 1 < n and text[i + 1] == "*":
            j = text.find("*/", i + 2)
            seg = text[i:n if j < 0 else j + 2]
            out.append("\n" * seg.count("\n") or " ")
            i = n if j < 0 else j + 2
        elif c == '"' or c == "'":
            if c == '"' and i > 0 and text[i - 1] == "R":  # raw string R"x(...)x"
                m = re.match(r'"([^(]*)\(', text[i:])
                if m:
                    end = text.find(")" + m.group(1) + '"', i)
                    i = n if end < 0 else end + len(m.group(1)) + 2
                    out.append('""')
                    continue
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            out.append('""')
            i = j + 1
        else:
            out.append(c)
            i += 1
    s = "".join(out)
    if not keep_preproc:
        s = re.sub(r"(?m)^\s*#(?:[^\n]*\\\n)*[^\n]*", "", s)
    return s


def match_angle(s: str, i: int) -> int:
    """Index after the '>' closing the '<' at s[i]."""
    depth = 0
    for j in range(i, len(s)):
        if s[j] == "<":
            depth += 1
        elif s[j] == ">":
            depth -= 1
            if depth == 0:
                return j + 1
        elif s[j] in ";{":
            break
    return len(s)


def strip_templates_prefix(stmt: str) -> str:
    stmt = stmt.strip()
    while stmt.startswith("template"):
        k = stmt.find("<")
        if k < 0:
            break
        stmt = stmt[match_angle(stmt, k):].strip()
    stmt = re.sub(r"\[\[[^\]]*\]\]", " ", stmt)
    return re.sub(r"\b(POPLIBS_DEPRECATED|__attribute__)\s*\(\([^)]*\)\)|\bPOPLIBS_DEPRECATED\b", " ", stmt)


def function_name(stmt: str) -> str | None:
    """Name of the function a declaration declares, or None (operators, data, calls)."""
    s = strip_templates_prefix(stmt)
    if re.match(r"(friend|using|typedef|static_assert|return|extern\s+template)\b", s):
        return None
    # the first '(' outside <...>
    depth = 0
    for j, c in enumerate(s):
        if c == "<":
            depth += 1
        elif c == ">":
            depth = max(0, depth - 1)
        elif c == "=" and depth == 0:
            return None  # an initialised variable
        elif c == "(" and depth == 0:
            head = s[:j].rstrip()
            if re.search(r"\boperator\b", head):
                return None
            m = re.search(r"(~?\w+)$", head)
            if not m or m.group(1) in ("decltype", "sizeof", "alignas", "noexcept"):
                return None
            if not re.search(r"\w[\w:<>,*&\s]*\s[*&]*~?\w+$|^\w+$", head):
                return None
            return m.group(1)
    return None


# ------------------------------------------------------------------------------------------
# PopLibs headers


MACRO_DECLS = [
    (re.compile(r"\bPOPLIBS_DEFINE_EXPR_\w+\(\s*(\w+)\s*,[^)]*\)"), r"class \1 {};"),
    (re.compile(r"\bDEF_NONLINEARITY\(\s*(\w+)\s*,[^)]*\)"), r"void \1(); void \1InPlace();"),
    (re.compile(r"\bDEF_NONLINEARITY_INPLACE\(\s*(\w+)\s*,[^)]*\)"), r"void \1InPlace();"),
    (re.compile(r"\bDEF_NONLINEARITY_\(\s*(\w+)\s*,[^)]*\)"), r"void \1();"),
]


def parse_header(text: str) -> list[tuple[str, str, bool]]:
    """[(qualified name, kind, scoped)] declared by one header; scoped is False for the
    enumerators of a plain (unscoped) enum."""
    s = strip_code(text)
    for rx, rep in MACRO_DECLS:
        s = rx.sub(rep, s)
    found: list[tuple[str, str, bool]] = []
    # stack of (kind, qualified name, public?, scoped-enum?)
    stack: list[list] = [["ns", "", True, True]]
    buf: list[str] = []

    def visible() -> bool:
        return all(fr[2] for fr in stack) and not any(
            fr[0] == "ns" and fr[1].rsplit("::", 1)[-1] in SKIP_NAMESPACES for fr in stack)

    def qual(name: str) -> str:
        base = stack[-1][1]
        return f"{base}::{name}" if base else name

    def declare(stmt: str) -> None:
        top = stack[-1]
        if top[0] not in ("ns", "class") or not visible():
            return
        st = strip_templates_prefix(stmt)
        m = re.match(r"(?:using\s+(\w+)\s*=|typedef\b.*?\b(\w+)\s*$)", st, re.S)
        if m and top[0] == "ns":
            found.append((qual(m.group(1) or m.group(2)), "type", True))
            return
        if re.match(r"(class|struct|enum|union|namespace|using|typedef)\b", st):
            return
        name = function_name(st)
        if not name or name.startswith(("~", "_")):
            return
        if top[0] == "class":
            if name == top[1].rsplit("::", 1)[-1]:
                return  # constructor
            found.append((qual(name), "method", True))
        else:
            found.append((qual(name), "function", True))

    i, n = 0, len(s)
    while i < n:
        c = s[i]
        if c == "{":
            stmt = "".join(buf).strip()
            buf = []
            top = stack[-1]
            st = strip_templates_prefix(stmt)
            if top[0] in ("skip", "enum"):
                stack.append(["skip", top[1], True, True])
            elif m := re.match(r"(?:inline\s+)?namespace\s*([\w:]*)\s*$", st):
                name = m.group(1)
                stack.append(["ns", qual(name) if name else top[1], True, True])
            elif m := re.match(r"(class|struct|union)\s+(?:alignas\([^)]*\)\s*)?(\w+)\s*(?:final\s*)?"
                               r"(?::[^{]*)?$", st, re.S):
                if visible() and not m.group(2).startswith("_"):
                    found.append((qual(m.group(2)), "class", True))
                stack.append(["class", qual(m.group(2)), m.group(1) != "class", True])
            elif m := re.match(r"enum\s+(class\s+|struct\s+)?(\w+)\s*(?::[\w:\s]+)?$", st):
                if visible():
                    found.append((qual(m.group(2)), "enum", True))
                stack.append(["enum", qual(m.group(2)), True, bool(m.group(1))])
            elif top[0] in ("ns", "class") and "(" in st and not re.match(r"extern\b", st):
                declare(st + ";")
                stack.append(["skip", top[1], True, True])
            elif re.match(r'extern\s*""\s*$', st):
                stack.append(["ns", top[1], True, True])
            else:
                stack.append(["skip", top[1], True, True])
            i += 1
            continue
        if c == "}":
            fr = stack.pop() if len(stack) > 1 else stack[0]
            if fr[0] == "enum" and all(f[2] for f in stack) and visible():
                for item in "".join(buf).split(","):
                    m = re.match(r"\s*(\w+)", item)
                    if m:
                        found.append((f"{fr[1]}::{m.group(1)}", "enumerator", fr[3]))
            buf = []
            i += 1
            continue
        if c == ";":
            if stack[-1][0] in ("ns", "class"):
                declare("".join(buf))
            buf = [] if stack[-1][0] != "enum" else buf + [c]
            i += 1
            continue
        if c == ":" and stack[-1][0] == "class" and s[i + 1:i + 2] != ":" and s[i - 1:i] != ":":
            word = "".join(buf).strip()
            if word in ("public", "private", "protected"):
                stack[-1][2] = word == "public"
                buf = []
                i += 1
                continue
        buf.append(c)
        i += 1
    return found


# ------------------------------------------------------------------------------------------
# Git access


def repo_dir(mirrors: str, repo: str) -> str:
    base = os.path.join(mirrors, repo.replace("/", "+"))
    return os.path.join(base, "repo") if os.path.isdir(os.path.join(base, "repo")) else base


def git(repo: str, *args: str) -> str:
    return subprocess.run(["git", "-C", repo, *args], check=True, capture_output=True,
                          text=True, errors="replace").stdout


def read_blobs(repo: str, ref: str, paths: list[str]) -> dict[str, str]:
    """The text of each path at ref, read through one `git cat-file --batch`."""
    proc = subprocess.run(["git", "-C", repo, "cat-file", "--batch"],
                          input="".join(f"{ref}:{p}\n" for p in paths).encode(),
                          capture_output=True, check=True)
    out, data, pos = {}, proc.stdout, 0
    for p in paths:
        nl = data.index(b"\n", pos)
        header = data[pos:nl].split()
        pos = nl + 1
        if len(header) < 3 or header[1] != b"blob":
            continue
        size = int(header[2])
        out[p] = data[pos:pos + size].decode("utf-8", "replace")
        pos += size + 1
    return out


# ------------------------------------------------------------------------------------------
# Counting


CXX_EXT = (".cpp", ".cc", ".cxx", ".hpp", ".h", ".hh", ".inl", ".ipp")
USES_POPLAR = re.compile(r"\b(poplar|popops|poplin|popnn|poputil|poprand|gcl)::"
                         r"|#\s*include\s*[<\"](poplar|popops|poplin|popnn|poputil|poprand|gcl)/")


def count_uses(names: list[dict], texts: list[str]) -> list[float]:
    qual = [n["q"] for n in names]
    by_suffix: dict[str, list[int]] = defaultdict(list)  # every '::' suffix of a name
    for k, q in enumerate(qual):
        parts = q.split("::")
        for j in range(len(parts) - 1):
            by_suffix["::".join(parts[j:])].append(k)
    for k, n in enumerate(names):  # plain enums' enumerators are also named ns::ENUMERATOR
        if n.get("alias"):
            parts = n["alias"].split("::")
            for j in range(len(parts) - 1):
                by_suffix["::".join(parts[j:])].append(k)
    unqualified: dict[tuple[str, str], list[int]] = defaultdict(list)  # (namespace, name)
    methods: dict[str, list[int]] = defaultdict(list)
    for k, n in enumerate(names):
        ns, _, last = n["q"].rpartition("::")
        if n["kind"] == "method":
            if last not in STL_LIKE:
                methods[last].append(k)
        elif n["kind"] in ("function", "class", "enum", "constant", "type"):
            unqualified[(ns, last)].append(k)
    index = {n["q"]: k for k, n in enumerate(names)}
    owner_of = {k: index.get(names[k]["q"].rsplit("::", 1)[0]) for ks in methods.values() for k in ks}
    counts = [0.0] * len(names)
    namespaces = {ns for ns, _ in unqualified}
    rx_qual = re.compile(r"(?<![\w:])((?:\w+::)+\w+)")
    rx_alias = re.compile(r"\bnamespace\s+(\w+)\s*=\s*:?:?([\w:]+)\s*;")
    rx_using = re.compile(r"\busing\s+namespace\s+:?:?([\w:]+)\s*;")
    rx_method = re.compile(r"(?:\.|->)\s*(\w+)\s*(?:<[^;(){}]*>)?\s*\(")
    rx_word = re.compile(r"(?<![\w.:>])(\w+)(\s*\()?")
    for raw in texts:
        t = strip_code(raw, keep_preproc=True)
        for alias, target in rx_alias.findall(t):
            t = re.sub(rf"(?<![\w:]){alias}::", target + "::", t)
        local = [0.0] * len(names)  # this file's counts, before method calls
        for m in rx_qual.finditer(t):
            hits = by_suffix.get(m.group(1))
            if hits:
                for k in hits:
                    local[k] += 1 / len(hits)
        used = [u for u in rx_using.findall(t) if u in namespaces]
        if used:
            for m in rx_word.finditer(t):
                word, call = m.group(1), m.group(2)
                start = m.start()
                if t[max(0, start - 2):start] == "->":
                    continue
                hits = [k for u in used for k in unqualified.get((u, word), ())
                        if call or names[k]["kind"] != "function"]
                for k in hits:
                    local[k] += 1 / len(hits)
        for m in rx_method.finditer(t):
            hits = methods.get(m.group(1))
            if not hits:
                continue
            # a name several classes own: shared in proportion to how often this file
            # names each owning class, equally when it names none of them
            weights = [local[owner_of[k]] if owner_of[k] is not None else 0.0 for k in hits]
            total = sum(weights)
            for k, w in zip(hits, weights):
                counts[k] += w / total if total else 1 / len(hits)
        for k, c in enumerate(local):
            counts[k] += c
    return counts


# ------------------------------------------------------------------------------------------


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("mirrors", help="folder of git clones, MIRRORS/<owner>+<name>[/repo]")
    ap.add_argument("-o", "--output", default=os.path.join(os.path.dirname(__file__), "poplar_api.json"))
    args = ap.parse_args()

    names: list[dict] = []
    seen: set[str] = set()

    def add(lib: str, q: str, kind: str, alias: str | None = None) -> None:
        if q in seen:
            return
        seen.add(q)
        entry = {"lib": lib, "q": q, "kind": kind}
        if alias:
            entry["alias"] = alias
        names.append(entry)

    poplibs = repo_dir(args.mirrors, "graphcore/poplibs")
    headers = [p for p in git(poplibs, "ls-tree", "-r", "--name-only", "HEAD", "include").split()
               if p.split("/")[1] in POPLIBS_LIBS and p.endswith(".hpp")]
    for path, text in sorted(read_blobs(poplibs, "HEAD", headers).items()):
        lib = path.split("/")[1]
        for q, kind, scoped in parse_header(text):
            if q.split("::")[0] != lib:
                continue
            alias = None
            if kind == "enumerator" and not scoped:
                parts = q.split("::")
                alias = "::".join(parts[:-2] + parts[-1:])
            add(lib, q, kind, alias)
    for q, kind in parse_curated(POPLAR_API, "poplar"):
        add("poplar", q, kind)
    for q, kind in parse_curated(GCL_API, "gcl"):
        add("gcl", q, kind)

    texts: list[str] = []
    corpus = []
    for repo, ref in CORPUS.items():
        d = repo_dir(args.mirrors, repo)
        if not os.path.isdir(d):
            print(f"skipped (no clone): {repo}", file=sys.stderr)
            continue
        paths = [p for p in git(d, "ls-tree", "-r", "--name-only", ref).splitlines()
                 if p.endswith(CXX_EXT)]
        if repo == "graphcore/poplibs":
            paths = [p for p in paths if p.startswith(("tests/", "tools/"))]
        blobs = read_blobs(d, ref, paths)
        files = [t for t in blobs.values() if USES_POPLAR.search(t)]
        texts.extend(files)
        corpus.append([repo, git(d, "rev-parse", ref).strip(), len(files)])
        print(f"{repo}: {len(files)} files", file=sys.stderr)

    counts = count_uses(names, texts)
    libs: dict[str, list] = {}
    for n, c in zip(names, counts):
        libs.setdefault(n["lib"], []).append([n["q"], n["kind"], round(c, 1)])
    data = {
        "about": "Public Poplar, PopLibs and GCL names with their use counts in third-party C/C++ "
                 "code; made by make_poplar_api.py (see its docstring for the sources and rules).",
        "poplibs_commit": git(poplibs, "rev-parse", "HEAD").strip(),
        "poplar_docs": DOCS,
        "corpus": corpus,
        "files": sum(c[2] for c in corpus),
        "libs": libs,
    }
    with open(args.output, "w") as f:
        json.dump(data, f, separators=(",", ":"))
        f.write("\n")
    tally = Counter(n["lib"] for n in names)
    print(f"{len(names)} names {dict(tally)}; {data['files']} files in {len(corpus)} repositories",
          file=sys.stderr)


if __name__ == "__main__":
    main()
