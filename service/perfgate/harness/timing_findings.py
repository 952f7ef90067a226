"""What a CUDA timer's per-block details say about the samples: host time, launch-bound
instances, work left on other streams, blocks the spin kernel did not hold, throttling."""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from perfgate.harness.entries import sampled_metric
from perfgate.results import Metric

#: Host launch time at least this share of `time`: the device waited on the host.
LAUNCH_BOUND_SHARE = 0.9
#: A device-wide synchronize after the end event that still waits this share of `time`: the
#: block left work on other streams that the events did not time.
OTHER_STREAMS_SHARE = 0.05


@dataclass
class Findings:
    """Metrics to add, sentences for `time.note`, warnings for the person running."""

    metrics: dict[str, Metric] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)


def _ms(seconds: float) -> str:
    return f"{seconds * 1e3:.3g} ms"


def timing_findings(
    samples: Sequence[float], details: Mapping[str, Sequence[float]], *, key: str
) -> Findings:
    """Read the timer's details (one value per sample) next to the samples."""
    found = Findings()
    if not samples:
        return found
    per_call = statistics.median(samples)
    host = details.get("host")
    if host:
        found.metrics["host_time"] = sampled_metric("s", host)
        host_median = statistics.median(host)
        if per_call > 0 and host_median >= LAUNCH_BOUND_SHARE * per_call:
            found.notes.append(
                f"launch-bound: launching takes {_ms(host_median)} of the {_ms(per_call)} "
                "per call (host_time); the device waits on the host"
            )
            found.warnings.append(
                f"{key}: launch-bound (host {_ms(host_median)} per call, time "
                f"{_ms(per_call)}): time measures launching; device_timing='queued' times the "
                "device alone"
            )
    other = details.get("other_streams")
    if other and per_call > 0:
        waited = statistics.median(other)
        if waited >= OTHER_STREAMS_SHARE * per_call:
            found.notes.append(
                f"work on other streams ran {_ms(waited)} per call past the timed stream "
                "and is not in time"
            )
            found.warnings.append(
                f"{key}: the code leaves {_ms(waited)} per call of work on other CUDA streams "
                "that time does not include (make the current stream wait for them, e.g. "
                "torch.cuda.current_stream().wait_stream(side))"
            )
    unheld = details.get("unheld")
    if unheld and any(unheld):
        count = sum(1 for value in unheld if value)
        found.notes.append(
            f"{count} of {len(unheld)} blocks outlasted the spin kernel and include launch time"
        )
    throttled = details.get("throttled")
    if throttled and any(throttled):
        count = sum(1 for value in throttled if value)
        found.notes.append(f"{count} of {len(throttled)} samples taken while the GPU throttled")
        found.warnings.append(
            f"{key}: {count} of {len(throttled)} samples were taken while the GPU throttled "
            "(clocks below their target: power, thermal or clock-limit reasons)"
        )
    return found
