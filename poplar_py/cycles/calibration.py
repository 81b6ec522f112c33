"""The two calibrations of the cycle model: Graphcore's IPU Model, and the hardware.

The same code costs every program; what differs between an ``IPUModel()`` device and a device
from ``DeviceManager`` (``TargetType.IPU``, the hardware path) is the figures below, frozen into
the :class:`~poplar_py.target.Target`. The IPU Model's figures reproduce Graphcore's IPU Model
(its published tutorial profiles); the hardware's are calibrated against published hardware
measurements, each figure's source in docs/cycle_model.md ("The hardware path").
"""

from __future__ import annotations

from dataclasses import dataclass

#: Graphcore's tutorial 6 (SDK 2.4+; tutorial 7 here) at 10000 x 1000 on a Mk2 IPU, from the
#: hardware profile its README prints: stream copies of 40,044,000 bytes in all (the matrix, the
#: vector, the result), their host exchange and StreamCopyBegin cycles, at the profile's clock.
_TUT6_BYTES = 40_044_000
_TUT6_CLOCK = 25_444_984 / 19_131.6e-6  # cycles over microseconds, as the summary prints them
_TUT6_HOST_EXCHANGE = 2_641_488.4  # tile average host exchange cycles
_TUT6_SYNC = 135_849.6  # tile average sync cycles
_TUT6_BEGIN = 25_444_984 - (28_300.3 + 8_743.1 + _TUT6_HOST_EXCHANGE + _TUT6_SYNC)  # total less the phases
_TUT6_STREAM_COPIES = 3


@dataclass(frozen=True)
class Calibration:
    """Figures of the cycle model that the hardware and Graphcore's IPU Model disagree on."""

    name: str
    #: bytes a second a replica's host link moves; None: the IPU Model's
    #: ``IPUModel.hostExchangeBytesPerCycle`` at the tile clock
    host_bandwidth: float | None
    #: seconds a stream copy's tiles spend synchronising with the host, every tile, as sync
    host_sync: float
    #: bytes a second the host prepares a stream copy's data at before it moves (the hardware
    #: profile's StreamCopyBegin, every tile waiting); None: no time, as the IPU Model
    host_prepare_bandwidth: float | None
    #: whether a tile's wait at a barrier for slower tiles is profiled as sync (the hardware's
    #: instrumentation times a tile from its arrival at the barrier), else as nothing
    wait_is_sync: bool
    #: whether ``Graph.setPerfEstimate`` values cost their vertices; on hardware they are not read
    #: (vertices take what their code takes: the kernels' count, or PopLibs' estimators)
    perf_estimates: bool
    #: seconds a message takes over each IPU-Link hop before its bytes stream (the global exchange
    #: pays it for its longest route)
    link_latency: float

    @property
    def hardware(self) -> bool:
        return self.name == "hardware"


IPU_MODEL = Calibration("IPU Model", host_bandwidth=None, host_sync=0.0, host_prepare_bandwidth=None,
                        wait_is_sync=False, perf_estimates=True, link_latency=0.0)

#: The host link's bandwidth on hardware: tutorial 6's stream copies over their host exchange time.
HOST_BANDWIDTH = _TUT6_BYTES / _TUT6_HOST_EXCHANGE * _TUT6_CLOCK
#: The host preparing stream data (StreamCopyBegin): tutorial 6's bytes over its StreamCopyBegin time.
HOST_PREPARE_BANDWIDTH = _TUT6_BYTES / _TUT6_BEGIN * _TUT6_CLOCK
#: A stream copy's host synchronisation: tutorial 6's sync cycles less the 1,336 its barriers and
#: the tiles' waits for slower tiles take on the hardware path, over its stream copies
#: (bench_hardware.py prints the sum).
HOST_SYNC = (_TUT6_SYNC - 1_336) / _TUT6_STREAM_COPIES / _TUT6_CLOCK

#: An IPU-Link hop's latency: Jia et al. measured IPU-Link latency 4.0 to 7.7 times longer under
#: full load (every tile of an IPU sending to the other IPU of a C2 card) than with no other
#: traffic; with 256-byte messages over the rung's links at 1.6 GHz the full load's bytes take
#: 3,891 cycles, so a hop of 851 cycles puts the ratio at 5.55, the middle of that range
#: (bench_hardware.py measures it).
LINK_LATENCY = 851 / 1.6e9

HARDWARE = Calibration("hardware", host_bandwidth=HOST_BANDWIDTH, host_sync=HOST_SYNC,
                       host_prepare_bandwidth=HOST_PREPARE_BANDWIDTH, wait_is_sync=True, perf_estimates=False,
                       link_latency=LINK_LATENCY)
