"""A stand-in for `torch.cuda` on machines without a GPU: a simulated device with a host clock,
stream timelines, timing events, a caching allocator's counters and sticky fatal errors.

The model is the part of CUDA's semantics the harness relies on:

* launching costs the host `launch_s` and queues the kernel on a stream; the kernel starts when
  the host has launched it and the stream's earlier work is done (one stream runs one kernel at
  a time; streams run side by side);
* an event recorded on a stream completes when the work queued before it on that stream has
  finished (at once on an idle stream); `elapsed_time` is in milliseconds;
* `synchronize()` moves the host clock to when every stream is idle; `Event.synchronize()` to
  when that event completed;
* after a sticky error (illegal address, device assert) every later call raises, as in CUDA.

Install with `install(monkeypatch)`: it replaces `torch.cuda` for the test.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any


class FakeCudaError(RuntimeError):
    pass


@dataclass
class FakeStream:
    device: FakeCuda
    name: str
    free_at: float = 0.0

    def synchronize(self) -> None:
        self.device._check()
        self.device.host = max(self.device.host, self.free_at)

    def wait_stream(self, other: FakeStream) -> None:
        self.free_at = max(self.free_at, other.free_at)


class FakeEvent:
    def __init__(self, device: FakeCuda, enable_timing: bool = False) -> None:
        self.device = device
        self.enable_timing = enable_timing
        self.stamp: float | None = None

    def record(self, stream: FakeStream | None = None) -> None:
        device = self.device
        device._check()
        stream = stream or device.current
        device.host += device.record_s
        # Completes once the stream's queued work is done, or at once on an idle stream.
        self.stamp = max(device.host, stream.free_at)
        stream.free_at = self.stamp

    def query(self) -> bool:
        return self.stamp is not None and self.stamp <= self.device.host

    def synchronize(self) -> None:
        self.device._check()
        assert self.stamp is not None, "synchronize on an event never recorded"
        self.device.host = max(self.device.host, self.stamp)

    def elapsed_time(self, end: FakeEvent) -> float:
        self.device._check()
        assert self.enable_timing and end.enable_timing
        assert self.stamp is not None and end.stamp is not None
        assert end.query(), "elapsed_time before the end event completed"
        return (end.stamp - self.stamp) * 1e3


@dataclass
class FakeCuda:
    """The `torch.cuda` surface the harness uses, over a simulated device."""

    launch_s: float = 5e-6
    record_s: float = 1e-6
    devices: int = 1
    #: Cycles per second of the `_sleep` spin kernel.
    clock_hz: float = 1.5e9
    l2_bytes: int = 50 * 1024 * 1024
    host: float = 0.0
    allocated: int = 0
    reserved: int = 0
    peak_allocated: int = 0
    peak_reserved: int = 0
    #: Bytes handed out since the start, as the allocator's "allocated_bytes.all.allocated".
    allocated_total: int = 0
    poisoned: str | None = None
    kernels: list[str] = field(default_factory=list)
    current_index: int = 0
    synchronize_calls: int = 0
    seed: int | None = None

    def __post_init__(self) -> None:
        self.default = FakeStream(self, "default")
        self.current = self.default
        self.streams = [self.default]

    # --- what benchmarks in tests do ---------------------------------------------------------

    def clock(self) -> float:
        """The host clock, for timers that measure host time."""
        return self.host

    def host_work(self, seconds: float) -> None:
        """Python or CPU work on the host: time passes, nothing is queued."""
        self.host += seconds

    def launch(
        self, seconds: float, name: str = "kernel", stream: FakeStream | None = None
    ) -> None:
        self._check()
        stream = stream or self.current
        self.host += self.launch_s
        start = max(self.host, stream.free_at)
        stream.free_at = start + seconds
        self.kernels.append(name)

    def alloc(self, size: int) -> None:
        self.allocated += size
        self.allocated_total += size
        self.reserved = max(self.reserved, self.allocated)
        self.peak_allocated = max(self.peak_allocated, self.allocated)
        self.peak_reserved = max(self.peak_reserved, self.reserved)

    def free(self, size: int) -> None:
        self.allocated -= size

    def poison(self, message: str = "an illegal memory access was encountered") -> None:
        """A kernel faulted: this call and every later one raises."""
        self.poisoned = message
        self._check()

    def _check(self) -> None:
        if self.poisoned is not None:
            raise FakeCudaError(f"CUDA error: {self.poisoned}")

    # --- torch.cuda ---------------------------------------------------------------------------

    def is_available(self) -> bool:
        return True

    def is_initialized(self) -> bool:
        return True

    def _is_in_bad_fork(self) -> bool:
        return False

    def manual_seed_all(self, seed: int) -> None:
        self.seed = seed

    def device_count(self) -> int:
        return self.devices

    def current_device(self) -> int:
        return self.current_index

    def set_device(self, device: Any) -> None:
        self.current_index = int(getattr(device, "index", None) or 0)

    def get_device_name(self, device: Any = None) -> str:
        return "Fake GPU"

    def get_device_properties(self, device: Any = None) -> Any:
        return SimpleNamespace(
            name="Fake GPU",
            major=9,
            minor=0,
            multi_processor_count=132,
            total_memory=80 << 30,
            L2_cache_size=self.l2_bytes,
            uuid="GPU-00000000-fake",
        )

    def synchronize(self, device: Any = None) -> None:
        self._check()
        self.synchronize_calls += 1
        self.host = max([self.host] + [s.free_at for s in self.streams])

    def Event(self, enable_timing: bool = False, **_: Any) -> FakeEvent:  # noqa: N802
        return FakeEvent(self, enable_timing)

    def Stream(self, device: Any = None, **_: Any) -> FakeStream:  # noqa: N802
        stream = FakeStream(self, f"side{len(self.streams)}", free_at=self.host)
        self.streams.append(stream)
        return stream

    def current_stream(self, device: Any = None) -> FakeStream:
        return self.current

    def default_stream(self, device: Any = None) -> FakeStream:
        return self.default

    @contextmanager
    def stream(self, stream: FakeStream) -> Iterator[None]:
        previous, self.current = self.current, stream
        try:
            yield
        finally:
            self.current = previous

    def _sleep(self, cycles: int) -> None:
        self.launch(cycles / self.clock_hz, name="spin")

    def memory_allocated(self, device: Any = None) -> int:
        return self.allocated

    def max_memory_allocated(self, device: Any = None) -> int:
        return self.peak_allocated

    def memory_reserved(self, device: Any = None) -> int:
        return self.reserved

    def max_memory_reserved(self, device: Any = None) -> int:
        return self.peak_reserved

    def memory_stats(self, device: Any = None) -> dict[str, int]:
        # The cumulative counters are never reset by reset_peak_memory_stats (as in torch).
        return {
            "allocated_bytes.all.allocated": self.allocated_total,
            "allocated_bytes.all.current": self.allocated,
            "allocated_bytes.all.peak": self.peak_allocated,
        }

    def reset_peak_memory_stats(self, device: Any = None) -> None:
        self.peak_allocated = self.allocated
        self.peak_reserved = self.reserved

    def empty_cache(self) -> None:
        self.reserved = self.allocated


def install(monkeypatch: Any, **options: Any) -> FakeCuda:
    """Replace `torch.cuda` with a FakeCuda for one test; returns it."""
    import torch

    fake = FakeCuda(**options)
    monkeypatch.setattr(torch, "cuda", fake)
    return fake


class RecordedProfile:
    """Builds real `torch.profiler` FunctionEvent objects linked the way the profiler links them.

    Host events nest by time on one thread; a runtime call (`cudaLaunchKernel`) and the kernel it
    launched are linked to the innermost host op or range (`linked=`); a linked kernel's time is
    added to that op's self device time, as `_parse_kineto_results` does. `events()` returns an
    EventList with parents and children filled in, as `prof.events()` does.
    """

    def __init__(self) -> None:
        self._events: list[Any] = []
        self._next_id = 1

    def _make(self, name: str, start: float, end: float, **fields: Any) -> Any:
        from torch.autograd import DeviceType
        from torch.autograd.profiler_util import FunctionEvent

        event = FunctionEvent(
            id=self._next_id,
            name=name,
            thread=1,
            start_us=start,
            end_us=end,
            use_device="cuda",
            device_type=fields.pop("device_type", DeviceType.CPU),
            **fields,
        )
        self._next_id += 1
        self._events.append(event)
        return event

    def op(self, name: str, start: float, end: float, *, annotation: bool = False) -> Any:
        """A host op or `record_function` range."""
        return self._make(name, start, end, is_user_annotation=annotation)

    def runtime(self, name: str, start: float, end: float, *, linked: Any = None) -> Any:
        """A CUDA runtime call on the host (`cudaLaunchKernel`, `cudaDeviceSynchronize`)."""
        return self._make(
            name, start, end, linked_correlation_id=linked.id if linked is not None else 0
        )

    def kernel(
        self, name: str, start: float, end: float, *, linked: Any = None, annotation: bool = False
    ) -> Any:
        """A device event: a kernel, or the device mirror of an annotation (`annotation=True`)."""
        from torch.autograd import DeviceType

        event = self._make(
            name,
            start,
            end,
            device_type=DeviceType.CUDA,
            is_user_annotation=annotation,
            linked_correlation_id=linked.id if linked is not None else 0,
        )
        if linked is not None and not annotation:
            linked.append_kernel(name, 0, end - start)
        return event

    def events(self) -> Any:
        from torch.autograd.profiler_util import EventList

        events = EventList(self._events, use_device="cuda")
        events._build_tree()
        return events


class FakeNvml:
    """A stand-in for the `pynvml` module: one GPU whose clock and throttle reasons a test sets."""

    NVML_CLOCK_SM = 1

    def __init__(self, uuid: str = "GPU-00000000-fake") -> None:
        self.uuid = uuid
        self.sm_clock = 1980
        self.reasons = 0
        self.samples = 0

    def nvmlInit(self) -> None:  # noqa: N802
        return None

    def nvmlDeviceGetHandleByUUID(self, uuid: str) -> str:  # noqa: N802
        if uuid != self.uuid:
            raise RuntimeError("NVML_ERROR_NOT_FOUND")
        return "handle"

    def nvmlDeviceGetClockInfo(self, handle: str, clock: int) -> int:  # noqa: N802
        self.samples += 1
        return self.sm_clock

    def nvmlDeviceGetCurrentClocksEventReasons(self, handle: str) -> int:  # noqa: N802
        return self.reasons

    def nvmlDeviceGetMaxClockInfo(self, handle: str, clock: int) -> int:  # noqa: N802
        return 1980

    def nvmlDeviceGetApplicationsClock(self, handle: str, clock: int) -> int:  # noqa: N802
        raise RuntimeError("NVML_ERROR_NOT_SUPPORTED")

    def nvmlDeviceGetEnforcedPowerLimit(self, handle: str) -> int:  # noqa: N802
        return 700_000

    def nvmlDeviceGetMigMode(self, handle: str) -> list[int]:  # noqa: N802
        return [0, 0]

    def nvmlDeviceGetCurrentEccMode(self, handle: str) -> int:  # noqa: N802
        return 1


def install_nvml(monkeypatch: Any) -> FakeNvml:
    """Make `import pynvml` find a FakeNvml for one test."""
    import sys

    from perfgate.harness import gpu_state

    fake = FakeNvml()
    monkeypatch.setitem(sys.modules, "pynvml", fake)
    monkeypatch.setattr(gpu_state, "_opened", {})
    return fake
