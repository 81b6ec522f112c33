"""The IPU architectures' figures that ``IPUModel(version)`` starts from: tiles, memory, clocks,
Streaming Memory and the AMP units of a tile (docs/cycle_model.md)."""

from __future__ import annotations

# Tile counts, memory and clocks: docs/cycle_model.md. "ipu21" is a Bow IPU: the GC200 die of the
# Mk2 at the Bow-2000's 1.85 GHz.
PRESETS = {
    "ipu1": dict(tilesPerIPU=1216, memoryBytesPerTile=262_144, tileClockFrequency=1.6e9),
    "ipu2": dict(tilesPerIPU=1472, memoryBytesPerTile=638_976, tileClockFrequency=1.33e9),
    "ipu21": dict(tilesPerIPU=1472, memoryBytesPerTile=638_976, tileClockFrequency=1.85e9),
}

# Streaming Memory (docs/cycle_model.md, "Streaming Memory"): the DRAM an IPU-Machine's IPU-Gateway
# holds beside its 4 IPUs (IPU-M2000 and Bow-2000 datasheets: up to 256 GB), reached over the
# Gateway's PCIe Gen4 x8 link (IPU-M2000 BMC user guide), 15.75 GB/s each way, which the machine's
# IPUs share. The C2 card of Mk1 IPUs has none.
STREAMING_PRESETS = {
    "ipu1": dict(ipusPerMachine=2, streamingMemoryBytesPerMachine=0),
    "ipu2": dict(ipusPerMachine=4, streamingMemoryBytesPerMachine=256 * 2**30),
    "ipu21": dict(ipusPerMachine=4, streamingMemoryBytesPerMachine=256 * 2**30),
}
STREAMING_MEMORY_BANDWIDTH = 16e9 * 8 * 128 / 130 / 8  # PCIe Gen4 x8: 16 GT/s a lane, 128b/130b coding
STREAMING_MEMORY_LATENCY = 2e-6  # seconds a transfer takes to start (an assumption: PCIe and DRAM)

# The Accumulating Matrix Product (AMP) units of a tile, per architecture, under Poplar's IPUModel
# field names, read off PopLibs: its AMP vertices exist for half inputs with half partials on 8
# (Mk1) and 16 (Mk2) units, half with float partials on 8 (a float partial leaves at 64 bits a
# cycle, which caps the 16.32 units at pipeline depth x 2 = 8 on both), float on 8 and 16; inputs
# stream at 64 bits a cycle; Mk2 loads coefficients at 128 bits (ld128), Mk1 at 64. With PopLibs'
# AMP core loop (a field position's inputs take 4 cycles for half, 8 for float) these give the
# published peaks: Mk1 GC2 124.5 TFLOPS half and 31.1 float, Mk2 GC200 250 (FP16.16) and 62.5.
AMP_PRESETS = {
    "ipu1": dict(fp16InFp16OutConvUnitsPerTile=8, fp16InFp32OutConvUnitsPerTile=8,
                 fp32InFp32OutConvUnitsPerTile=8, convUnitCoeffLoadBytesPerCycle=8),
    "ipu2": dict(fp16InFp16OutConvUnitsPerTile=16, fp16InFp32OutConvUnitsPerTile=8,
                 fp32InFp32OutConvUnitsPerTile=16, convUnitCoeffLoadBytesPerCycle=16),
}
AMP_PRESETS["ipu21"] = AMP_PRESETS["ipu2"]  # the same GC200 tiles
AMP_COMMON = dict(fp16ConvUnitInputLoadElemsPerCycle=4, fp32ConvUnitInputLoadElemsPerCycle=2,
                   fp16ConvUnitMaxPipelineDepth=4, fp32ConvUnitMaxPipelineDepth=4)
#: cycles the AMP takes per field position of one pass (PopLibs' 1x1 core loop), by input type
AMP_CYCLES_PER_FIELD_POSITION = {"half": 4, "float": 8}
AMP_FIELDS = (*AMP_PRESETS["ipu2"], *AMP_COMMON)
