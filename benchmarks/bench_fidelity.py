"""Simulated matMul and convolution throughput on Mk1 and Mk2 against the devices' peaks.

    python benchmarks/bench_fidelity.py [--quick]

Each case builds the operands with ``poplin.createMatMulInputLHS/RHS`` (the convolution with
``createInput``/``createWeights``), runs the product once on the full-size IPUModel (compiled
even if a tile runs out of memory, which the row then says) and reads the profile's FLOPs: the
throughput over the tile average compute cycles (the compute phase) and over all cycles
(exchange and sync included), each with its share of the peak of the units the product runs on
(``Target.getPeakFlopsPerCycle``: Mk1 124.5 TFLOPS half, 31.1 float; Mk2 250 FP16.16, 125
FP16.32 and 62.5 FP32). Half products use PopLibs' default float partials (FP16.32) unless the
row says ``partials half`` (FP16.16). ``--quick``
runs the Mk2 2048^3 products and the convolution only.
"""

from __future__ import annotations

import sys
import time

import poplar_py as poplar
from poplar_py import program as prog
from poplibs_py import poplin, popops

#: square sizes, then skewed ones: BERT-base's FFN and its weight gradient, a tiny output, and others
SHAPES = [(512, 512, 512), (1024, 1024, 1024), (2048, 2048, 2048), (128, 3072, 768), (3072, 128, 768),
          (16, 4096, 16), (8192, 256, 1024), (64, 4096, 4096), (4096, 64, 4096)]
#: the profile's FLOPs kinds in Graphcore's names for the AMP's modes
MODES = {"half": "FP16.16", "half.float": "FP16.32", "float": "FP32"}
#: the issue's convolution: 3x3, 64 channels in and out, a 56x56 field, batch 8, padding 1
CONV = dict(batch=8, field=56, channels=64, kernel=3)


def run(arch: str, build) -> tuple[dict, float, bool]:
    """Build and run one program on a full-size ``arch`` IPUModel: its profile's FLOPs, the
    seconds it took and whether a tile ran out of memory (compiled anyway)."""
    device = poplar.IPUModel(arch).createDevice()
    graph = poplar.Graph(device)
    popops.addCodelets(graph)
    poplin.addCodelets(graph)
    seq = prog.Sequence()
    start = time.perf_counter()
    build(graph, seq)
    engine = poplar.Engine(graph, seq, {"debug.allowOutOfMemory": "true"})
    engine.load(device)
    engine.run()
    profile = engine.getProfile()
    full = any(tile["memory"]["outOfMemory"] for tile in profile["compilation"]["tiles"])
    return profile["execution"]["flops"], time.perf_counter() - start, full


def matmul(m: int, k: int, n: int, type_: poplar.Type, options: dict | None):
    def build(graph: poplar.Graph, seq: prog.Sequence) -> None:
        a = poplin.createMatMulInputLHS(graph, type_, [m, k], [k, n], "A", options=options)
        b = poplin.createMatMulInputRHS(graph, type_, [m, k], [k, n], "B", options=options)
        poplin.matMul(graph, a, b, seq, options=options)
    return build


def convolution(type_: poplar.Type):
    c = CONV
    params = poplin.ConvParams(type_, c["batch"], [c["field"]] * 2, [c["kernel"]] * 2, c["channels"],
                               c["channels"], paddingLower=1, paddingUpper=1)

    def build(graph: poplar.Graph, seq: prog.Sequence) -> None:
        x = poplin.createInput(graph, params, "in")
        w = poplin.createWeights(graph, params, "weights")
        poplin.convolution(graph, x, w, params, False, seq, "conv")
    return build


def row(label: str, result: tuple[dict, float, bool]) -> str:
    flops, seconds, full = result
    comp, whole = flops["compute"], flops["all"]
    label += " (out of memory)" if full else ""
    kinds = ", ".join(MODES.get(kind, kind) for kind in flops["flopsByType"])
    peak = comp["throughput"] / comp["peakShare"]
    return (f"| {label} | {kinds}, {peak / 1e12:.1f} TFLOPS | {comp['throughput'] / 1e12:.1f} TFLOPS | "
            f"{100 * comp['peakShare']:.1f}% | {whole['throughput'] / 1e12:.1f} TFLOPS | "
            f"{100 * whole['peakShare']:.1f}% |  ({seconds:.0f} s)")


def main() -> None:
    quick = "--quick" in sys.argv
    print("| case | units and their peak | compute phase | share of peak | all cycles | share of peak |")
    print("|---|---|---|---|---|---|")
    for arch in ("ipu2",) if quick else ("ipu1", "ipu2"):
        for m, k, n in [(2048, 2048, 2048)] if quick else SHAPES:
            for type_, options in ((poplar.HALF, None), (poplar.HALF, {"partialsType": "half"}),
                                   (poplar.FLOAT, None)):
                partials = ", partials half" if options else ""
                result = run(arch, matmul(m, k, n, type_, options))
                print(row(f"{arch} matMul {m}x{k}x{n} {type_}{partials}", result), flush=True)
    c = CONV
    for type_ in (poplar.HALF, poplar.FLOAT):
        result = run("ipu2", convolution(type_))
        label = (f"ipu2 conv {c['kernel']}x{c['kernel']}, {c['channels']} channels, "
                 f"{c['field']}x{c['field']}, batch {c['batch']}, {type_}")
        print(row(label, result), flush=True)


if __name__ == "__main__":
    main()
