"""Poplar's ``DeviceManager`` (poplar/DeviceManager.hpp): the devices of a simulated IPU-POD64,
costed with the hardware's calibration (:mod:`poplar_py.cycles.calibration`)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace

from .checks.arguments import checked_int
from .cycles.calibration import HARDWARE
from .errors import InvalidArgumentError, PoplarError
from .target import Device, IPUModel, Target, TargetType

#: IPUs in the simulated machine that DeviceManager lists: one IPU-POD64.
SYSTEM_IPUS = 64


class DeviceManager:
    """The devices of a simulated IPU-POD64 of Mk2 IPUs, numbered as Poplar numbers a Pod's: ids
    0-63 are the IPUs one by one, 64-95 pairs of them, 96-111 fours, then eights, sixteens,
    thirty-twos, and 126 all 64. Each device is what ``IPUModel()`` describes (so ``poplar-py run
    --tiles/--arch`` apply) with its number of IPUs, reporting ``TargetType.IPU``: the hardware
    path, whose cycle model is calibrated against hardware measurements (host I/O, syncs, no
    ``setPerfEstimate``; :mod:`poplar_py.cycles.calibration`)."""

    @staticmethod
    def createDeviceManager() -> DeviceManager:
        return DeviceManager()

    def getNumDevices(self) -> int:
        return 2 * SYSTEM_IPUS - 1

    def getDevices(self, targetType: TargetType | Mapping | None = None, requiredNumIPUs: int = 1,
                   options: Mapping | None = None) -> list[Device]:
        """Every device (no arguments, or only options), or those of ``requiredNumIPUs`` IPUs: a
        power of two up to 64, else none, as on a Pod. ``TargetType.IPU_MODEL`` gives one
        ``IPUModel()`` device of that many IPUs; ``CPU`` none."""
        if targetType is None or isinstance(targetType, Mapping):
            return [self.getDevice(i) for i in range(self.getNumDevices())]
        if not isinstance(targetType, TargetType):
            raise InvalidArgumentError(f"getDevices: targetType must be a poplar.TargetType, got "
                                       f"{type(targetType).__name__} {targetType!r:.40}")
        n = checked_int(requiredNumIPUs, "getDevices: requiredNumIPUs", 1)
        if targetType is TargetType.IPU_MODEL:
            m = IPUModel()
            m.numIPUs = n
            return [m.createDevice()]
        if targetType is TargetType.CPU or n > SYSTEM_IPUS or n & (n - 1):
            return []
        first = sum(SYSTEM_IPUS // s for s in _sizes() if s < n)
        return [self.getDevice(first + k) for k in range(SYSTEM_IPUS // n)]

    def tryAcquireAvailableDevice(self, numIPUs: int, tilesPerIPU: int = 0,
                                  options: Mapping | None = None) -> Device | None:
        """An attached device of ``numIPUs`` IPUs (``tilesPerIPU`` > 0: a virtual device of that
        many tiles an IPU), or None when the Pod has none of that size. A simulated Pod's devices
        are never busy, so the first of that size is taken."""
        devices = self.getDevices(TargetType.IPU, numIPUs, options)
        if not devices:
            return None
        tiles = checked_int(tilesPerIPU, "acquireAvailableDevice: tilesPerIPU")
        device = devices[0].createVirtualDevice(tiles) if tiles else devices[0]
        device.attach()
        return device

    def acquireAvailableDevice(self, numIPUs: int, tilesPerIPU: int = 0,
                               options: Mapping | None = None) -> Device:
        """As :meth:`tryAcquireAvailableDevice`, raising PoplarError when there is no such device."""
        device = self.tryAcquireAvailableDevice(numIPUs, tilesPerIPU, options)
        if device is None:
            raise PoplarError(f"acquireAvailableDevice: the simulated IPU-POD{SYSTEM_IPUS} has no device of "
                              f"{numIPUs} IPUs (a power of two up to {SYSTEM_IPUS})")
        return device

    def acquireDeviceById(self, deviceManagerId: int, options: Mapping | None = None) -> Device:
        """The device with id ``deviceManagerId``, attached."""
        device = self.getDevice(deviceManagerId, options)
        device.attach()
        return device

    def getDevice(self, deviceManagerId: int, options: Mapping | None = None) -> Device:
        """The device with id ``deviceManagerId`` (see the class)."""
        did = checked_int(deviceManagerId, "getDevice: deviceManagerId")
        if did >= self.getNumDevices():
            raise InvalidArgumentError(f"getDevice: no device {did}: the simulated IPU-POD{SYSTEM_IPUS} has "
                                       f"devices 0..{self.getNumDevices() - 1}")
        size, index = _group_of(did)
        m = IPUModel()
        m.numIPUs = size
        return Device(replace(Target._from_model(m), targetType=TargetType.IPU, calibration=HARDWARE), did,
                      list(range(index * size, (index + 1) * size)))


def _sizes() -> list[int]:
    """The numbers of IPUs a device of the simulated Pod can have: 1, 2, 4, ... SYSTEM_IPUS."""
    return [1 << k for k in range(SYSTEM_IPUS.bit_length())]


def _group_of(deviceId: int) -> tuple[int, int]:
    """(IPUs, index among the devices of that many IPUs) of a simulated Pod's device: ids run
    through the devices of 1 IPU, then of 2, ..."""
    index = deviceId
    for size in _sizes():
        if index < SYSTEM_IPUS // size:
            break
        index -= SYSTEM_IPUS // size
    return size, index
