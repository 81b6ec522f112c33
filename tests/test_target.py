"""IPUModel presets and fields, Target getters, Device and DeviceManager."""

from __future__ import annotations

import numpy as np
import pytest

import poplar_py as poplar


@pytest.mark.parametrize("version,tiles,memory", [(None, 1472, 638_976), ("ipu2", 1472, 638_976),
                                                  ("ipu1", 1216, 262_144)])
def test_presets(version, tiles, memory):
    m = poplar.IPUModel() if version is None else poplar.IPUModel(version)
    assert m.tilesPerIPU == tiles and m.memoryBytesPerTile == memory and m.numIPUs == 1
    target = m.createDevice().getTarget()
    assert target.getNumTiles() == tiles
    assert target.getTilesPerIPU() == tiles
    assert target.getNumIPUs() == 1
    assert target.getBytesPerTile() == memory
    assert target.getMemoryBytes() == memory * tiles
    assert target.getNumWorkerContexts() == 6
    assert target.getExchangeBytesPerCycle() == 4
    assert target.getTileClockFrequency() > 1e9
    assert target.getTargetArchString() == (version or "ipu2")
    assert target.getTargetType() == poplar.TargetType.IPU_MODEL


def test_clock_frequencies():
    assert poplar.IPUModel("ipu1").createDevice().getTarget().getTileClockFrequency() == 1.6e9
    assert poplar.IPUModel("ipu2").createDevice().getTarget().getTileClockFrequency() == 1.33e9


@pytest.mark.parametrize("field,value,getter", [
    ("tilesPerIPU", 4, "getTilesPerIPU"),
    ("tilesPerIPU", 1, "getNumTiles"),
    ("numIPUs", 2, "getNumIPUs"),
    ("memoryBytesPerTile", 1024, "getBytesPerTile"),
    ("numWorkerContexts", 4, "getNumWorkerContexts"),
    ("tileClockFrequency", 2.0e9, "getTileClockFrequency"),
    ("exchangeBytesPerCycle", 8, "getExchangeBytesPerCycle"),
])
def test_settable_fields(field, value, getter):
    m = poplar.IPUModel()
    setattr(m, field, value)
    target = m.createDevice().getTarget()
    assert getattr(target, getter)() == value


def test_num_tiles_is_ipus_times_tiles():
    m = poplar.IPUModel("ipu1")
    m.numIPUs = 3
    m.tilesPerIPU = 4
    target = m.createDevice().getTarget()
    assert target.getNumTiles() == 12 and target.getTilesPerIPU() == 4 and target.getNumIPUs() == 3
    assert target.getMemoryBytes() == 12 * 262_144


def test_sync_fields_are_settable():
    m = poplar.IPUModel()
    m.minIPUSyncDelay = 5
    m.relativeSyncDelay = poplar.IPUModel.RelativeSyncDelayType.AUTO
    m.createDevice()


def test_model_changes_after_create_device_do_not_affect_target():
    m = poplar.IPUModel()
    m.tilesPerIPU = 4
    target = m.createDevice().getTarget()
    m.tilesPerIPU = 8
    assert target.getNumTiles() == 4
    assert m.createDevice().getTarget().getNumTiles() == 8


@pytest.mark.parametrize("type_,size,width", [
    (poplar.FLOAT, 4, 2), (poplar.HALF, 2, 4), (poplar.INT, 4, 2), (poplar.UNSIGNED_INT, 4, 2),
    (poplar.SHORT, 2, 4), (poplar.UNSIGNED_SHORT, 2, 4), (poplar.CHAR, 1, 8), (poplar.SIGNED_CHAR, 1, 8),
    (poplar.UNSIGNED_CHAR, 1, 8), (poplar.BOOL, 1, 8),
])
def test_type_size_and_vector_width(type_, size, width):
    target = poplar.IPUModel().createDevice().getTarget()
    assert target.getTypeSize(type_) == size
    assert target.getVectorWidth(type_) == width
    assert type_.size == size


def test_vector_width_helpers():
    target = poplar.IPUModel().createDevice().getTarget()
    assert target.getFloatVectorWidth() == 2 and target.getHalfVectorWidth() == 4
    assert target.getDataPathWidth() == 64
    assert target.getAtomicStoreGranularity() == 4
    assert target.getTypeSize("float") == 4 and target.getTypeSize(np.float16) == 2


@pytest.mark.parametrize("version", ["ipu3", "IPU2", "", "mk2"])
def test_unknown_version(version):
    with pytest.raises(poplar.InvalidMachineModelError) as info:
        poplar.IPUModel(version).createDevice()
    assert repr(version) in str(info.value)


@pytest.mark.parametrize("field,value", [
    ("tilesPerIPU", 0), ("tilesPerIPU", -4), ("tilesPerIPU", 2.5), ("tilesPerIPU", "four"),
    ("tilesPerIPU", None), ("numIPUs", 0), ("memoryBytesPerTile", 0), ("memoryBytesPerTile", -1),
    ("numWorkerContexts", 0), ("exchangeBytesPerCycle", 0), ("tileClockFrequency", 0),
    ("tileClockFrequency", -1e9), ("tileClockFrequency", "fast"),
])
def test_invalid_model(field, value):
    m = poplar.IPUModel()
    setattr(m, field, value)
    with pytest.raises(poplar.InvalidMachineModelError) as info:
        m.createDevice()
    assert field in str(info.value)
    assert isinstance(info.value, poplar.PoplarError)


def test_integral_floats_are_accepted():
    m = poplar.IPUModel()
    m.tilesPerIPU = 4.0
    assert m.createDevice().getTarget().getNumTiles() == 4


def test_devices():
    device = poplar.IPUModel().createDevice()
    other = poplar.IPUModel().createDevice()
    assert device.getId() != other.getId()
    assert device.attach() is True
    device.detach()
    virtual = device.createVirtualDevice(16)
    assert virtual.getTarget().getNumTiles() == 16
    assert virtual.getTarget().getBytesPerTile() == device.getTarget().getBytesPerTile()
    cpu = poplar.Device.createCPUDevice()
    assert cpu.getTarget().getNumTiles() == 1 and cpu.getTarget().getTargetType() == poplar.TargetType.CPU


def test_device_manager_lists_a_simulated_pod64():
    manager = poplar.DeviceManager.createDeviceManager()
    assert manager.getNumDevices() == 127 and len(manager.getDevices()) == 127
    sizes = {1: range(0, 64), 2: range(64, 96), 4: range(96, 112), 8: range(112, 120), 16: range(120, 124),
             32: range(124, 126), 64: range(126, 127)}
    for n, ids in sizes.items():
        devices = manager.getDevices(poplar.TargetType.IPU, n)
        assert [d.getId() for d in devices] == list(ids)
        target = devices[0].getTarget()
        assert (target.getNumIPUs(), target.getTilesPerIPU(), target.getBytesPerTile()) == (n, 1472, 638_976)
        assert target.getTargetType() == poplar.TargetType.IPU and target.getTargetArchString() == "ipu2"
        assert devices[-1].attach() is True
        assert manager.getDevice(ids[-1]).getTarget().getNumIPUs() == n
    assert manager.getDevices(poplar.TargetType.IPU, 3) == []
    assert manager.getDevices(poplar.TargetType.IPU, 128) == []
    assert manager.getDevices(poplar.TargetType.CPU, 1) == []
    models = manager.getDevices(poplar.TargetType.IPU_MODEL, 2)
    assert len(models) == 1 and models[0].getTarget().getNumIPUs() == 2


def test_device_manager_devices_follow_the_cli_defaults():
    poplar.target.setModelDefaults(tilesPerIPU=4, IPUVersion="ipu1")
    try:
        target = poplar.DeviceManager().getDevices(poplar.TargetType.IPU, 2)[0].getTarget()
    finally:
        poplar.target.setModelDefaults()
    assert (target.getNumTiles(), target.getTargetArchString()) == (8, "ipu1")


@pytest.mark.parametrize("call,culprit", [
    (lambda m: m.getDevice(127), "no device 127"), (lambda m: m.getDevice("0"), "deviceManagerId"),
    (lambda m: m.getDevice(-1), "deviceManagerId"), (lambda m: m.getDevices("IPU", 1), "targetType"),
    (lambda m: m.getDevices(poplar.TargetType.IPU, 2.0), "requiredNumIPUs"),
    (lambda m: m.getDevices(poplar.TargetType.IPU, 0), "requiredNumIPUs")])
def test_device_manager_arguments(call, culprit):
    with pytest.raises(poplar.InvalidArgumentError, match=culprit):
        call(poplar.DeviceManager.createDeviceManager())


def test_create_ipu_target():
    target = poplar.Target.createIPUTarget(2, 8, "ipu1")
    assert target.getNumTiles() == 16 and target.getBytesPerTile() == 262_144
    assert target.getTargetArchString() == "ipu1"
    assert poplar.Target.createIPUTarget().getNumTiles() == 1472


@pytest.mark.parametrize("arch,units,coeff", [("ipu1", (8, 8, 8), 8), ("ipu2", (16, 8, 16), 16)])
def test_amp_figures(arch, units, coeff):
    t = poplar.IPUModel(arch).createDevice().getTarget()
    assert (t.getFp16InFp16OutConvUnitsPerTile(), t.getFp16InFp32OutConvUnitsPerTile(),
            t.getFp32InFp32OutConvUnitsPerTile()) == units
    assert t.getNumConvUnits(poplar.HALF, poplar.HALF) == units[0]
    assert t.getNumConvUnits(poplar.HALF, poplar.FLOAT) == units[1]
    assert t.getNumConvUnits(poplar.FLOAT, poplar.FLOAT) == units[2]
    assert t.getNumConvUnits(poplar.INT, poplar.INT) == 0
    assert t.getConvUnitInputLoadElemsPerCycle(poplar.HALF) == t.getFp16ConvUnitInputLoadElemsPerCycle() == 4
    assert t.getConvUnitInputLoadElemsPerCycle(poplar.FLOAT) == t.getFp32ConvUnitInputLoadElemsPerCycle() == 2
    assert t.getConvUnitMaxPipelineDepth(poplar.FLOAT) == t.getConvUnitMaxPipelineDepth(poplar.HALF) == 4
    assert t.getWeightsPerConvUnit(poplar.HALF) == 16 and t.getWeightsPerConvUnit(poplar.FLOAT) == 8
    assert t.getConvUnitCoeffLoadBytesPerCycle() == coeff


@pytest.mark.parametrize("arch,half,flt", [("ipu1", 124.5e12, 31.1e12), ("ipu2", 250e12, 62.5e12)])
def test_peak_flops_are_the_published_ones(arch, half, flt):
    t = poplar.IPUModel(arch).createDevice().getTarget()
    clock = t.getTileClockFrequency()
    assert t.getPeakFlopsPerCycle(poplar.HALF) * clock == pytest.approx(half, rel=0.005)
    assert t.getPeakFlopsPerCycle("float") * clock == pytest.approx(flt, rel=0.005)
    assert t.getPeakFlopsPerCycle(poplar.INT) == 0
    # half accumulated in float (FP16.32): Mk1 runs it on all its units, Mk2 on half of them
    fp16_32 = t.getPeakFlopsPerCycle(poplar.HALF, poplar.FLOAT) * clock
    assert fp16_32 == pytest.approx(half if arch == "ipu1" else half / 2, rel=0.005)
    assert t.getPeakFlopsPerCycle(poplar.HALF, poplar.HALF) * clock == pytest.approx(half, rel=0.005)


def test_amp_fields_are_settable_and_checked():
    m = poplar.IPUModel()
    m.fp16InFp16OutConvUnitsPerTile = 32
    m.tilesPerIPU = 2
    t = m.createDevice().getTarget()
    assert t.getNumConvUnits(poplar.HALF, poplar.HALF) == 32
    assert t.getPeakFlopsPerCycle(poplar.HALF) == 2 * 32 * 16 * 2 // 4
    m.fp32ConvUnitInputLoadElemsPerCycle = 0
    with pytest.raises(poplar.InvalidMachineModelError, match="fp32ConvUnitInputLoadElemsPerCycle"):
        m.createDevice()


def test_device_manager_acquires_devices():
    dm = poplar.DeviceManager.createDeviceManager()
    four = dm.acquireAvailableDevice(4)
    assert four.getTarget().getNumIPUs() == 4 and four.getTarget().getTargetType() is poplar.TargetType.IPU
    assert dm.acquireAvailableDevice(1, 16).getTarget().getTilesPerIPU() == 16
    assert dm.acquireDeviceById(64).getTarget().getNumIPUs() == 2
    assert dm.tryAcquireAvailableDevice(3) is None
    with pytest.raises(poplar.PoplarError, match="has no device of 3 IPUs"):
        dm.acquireAvailableDevice(3)
