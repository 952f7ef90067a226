"""The `@benchmark` decorator: records what to run per module, without importing torch."""

from __future__ import annotations

import inspect
import itertools
import math
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar, overload

from perfgate.results import ParamValue, make_key

F = TypeVar("F", bound=Callable[..., Any])

ItemsSpec = int | Callable[..., int]

# Benchmarks registered per module (by `__module__`); discovery pops the entry of each module it
# imports, so a module imported twice (or a helper module never discovered) cannot leak into a run.
_REGISTRY: dict[str, list[BenchmarkSpec]] = {}


@dataclass(frozen=True)
class BenchmarkSpec:
    """One decorated setup function and its options (not yet expanded into instances)."""

    name: str
    setup: Callable[..., Any]
    params: dict[str, tuple[ParamValue, ...]]
    items: ItemsSpec | None = None
    unit: str = "items"
    warmup: int | None = None
    min_samples: int | None = None
    max_time: float | None = None
    tags: tuple[str, ...] = ()
    takes_device: bool = False
    # Keyword defaults of the setup that are not params: `items` callables still receive them.
    defaults: dict[str, Any] = field(default_factory=dict)

    @property
    def source(self) -> str:
        """The file that defines the setup (a worker process imports it again)."""
        try:
            return inspect.getfile(self.setup)
        except TypeError:
            return ""

    def instances(self) -> list[BenchmarkInstance]:
        """The cartesian product of `params`, in declaration order, one instance per combination."""
        names = list(self.params)
        out = []
        for combo in itertools.product(*(self.params[n] for n in names)):
            params = dict(zip(names, combo, strict=True))
            out.append(BenchmarkInstance(spec=self, params=params, key=make_key(self.name, params)))
        return out


@dataclass(frozen=True)
class BenchmarkInstance:
    """One benchmark with one combination of params: what gets timed and reported."""

    spec: BenchmarkSpec
    params: dict[str, ParamValue]
    key: str

    def call_setup(self, device: Any) -> Any:
        """Run the setup; `device` is passed only when the setup declares it."""
        kwargs: dict[str, Any] = dict(self.params)
        if self.spec.takes_device:
            kwargs["device"] = device
        return self.spec.setup(**kwargs)

    def item_count(self) -> float | None:
        """Items processed per call (for throughput), or None when the benchmark has no `items`."""
        items = self.spec.items
        if items is None:
            return None
        if callable(items):
            count = items(**_accepted_kwargs(items, {**self.spec.defaults, **self.params}))
        else:
            count = items
        if isinstance(count, bool) or not isinstance(count, int | float) or not count > 0:
            raise ValueError(f"items must be a positive number, got {count!r}")
        return float(count)


def _accepted_kwargs(func: Callable[..., Any], values: Mapping[str, Any]) -> dict[str, Any]:
    # `items=lambda batch, seq: batch * seq` should not have to accept every param of the setup.
    sig = inspect.signature(func)
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in sig.parameters.values()):
        return dict(values)
    return {k: v for k, v in values.items() if k in sig.parameters}


@overload
def benchmark(func: F, /) -> F: ...


@overload
def benchmark(
    *,
    params: Mapping[str, Iterable[ParamValue]] | None = None,
    items: ItemsSpec | None = None,
    unit: str = "items",
    warmup: int | None = None,
    min_samples: int | None = None,
    max_time: float | None = None,
    tags: Iterable[str] = (),
    name: str | None = None,
) -> Callable[[F], F]: ...


def benchmark(
    func: F | None = None,
    /,
    *,
    params: Mapping[str, Iterable[ParamValue]] | None = None,
    items: ItemsSpec | None = None,
    unit: str = "items",
    warmup: int | None = None,
    min_samples: int | None = None,
    max_time: float | None = None,
    tags: Iterable[str] = (),
    name: str | None = None,
) -> F | Callable[[F], F]:
    """Mark a setup function as a benchmark (docs/architecture.md §2).

    The setup receives each param as a keyword (cartesian product of `params`) and `device` when it
    declares that argument, and returns the zero-argument callable that is timed. `items` (an int,
    or a callable given the params and the setup's keyword defaults) adds a `throughput` metric in
    `unit`/s. `warmup` is the number of calls made before anything is measured; `min_samples` and
    `max_time` (seconds per instance) override the sampling defaults.
    """

    def decorate(setup: F) -> F:
        spec = _make_spec(
            setup,
            params=params or {},
            items=items,
            unit=unit,
            warmup=warmup,
            min_samples=min_samples,
            max_time=max_time,
            tags=tuple(tags),
            name=name,
        )
        _REGISTRY.setdefault(getattr(setup, "__module__", "") or "", []).append(spec)
        setup.__perfgate_benchmark__ = spec  # type: ignore[attr-defined]
        return setup

    if func is not None:
        return decorate(func)
    return decorate


def collect(module_name: str) -> list[BenchmarkSpec]:
    """Take (and forget) the benchmarks registered by one module, in definition order."""
    return _REGISTRY.pop(module_name, [])


def _make_spec(
    setup: Callable[..., Any],
    *,
    params: Mapping[str, Iterable[ParamValue]],
    items: ItemsSpec | None,
    unit: str,
    warmup: int | None,
    min_samples: int | None,
    max_time: float | None,
    tags: tuple[str, ...],
    name: str | None,
) -> BenchmarkSpec:
    bench_name = name or getattr(setup, "__name__", "")
    where = f"benchmark {bench_name!r}"
    if not callable(setup) or not bench_name:
        raise TypeError("@benchmark decorates a named setup function")
    sig = inspect.signature(setup)
    declared = sig.parameters
    var_kw = any(p.kind is inspect.Parameter.VAR_KEYWORD for p in declared.values())
    if "device" in params:
        raise ValueError(f"{where}: 'device' is chosen by the runner (--device), not a param")

    values: dict[str, tuple[ParamValue, ...]] = {}
    for key, raw in params.items():
        if key not in declared and not var_kw:
            raise ValueError(f"{where}: param {key!r} is not an argument of {bench_name}()")
        choices = (raw,) if isinstance(raw, str) else tuple(raw)
        if not choices:
            raise ValueError(f"{where}: params[{key!r}] has no values")
        for value in choices:
            if not _is_param_value(value):
                raise TypeError(
                    f"{where}: params[{key!r}] value {value!r} is a {type(value).__name__}; params "
                    "must be str, int, float, bool or None (e.g. 'bfloat16' with getattr(torch, d))"
                )
        values[key] = choices

    defaults: dict[str, Any] = {}
    for arg in declared.values():
        if arg.kind in (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD):
            continue
        if arg.name in values or arg.name == "device":
            continue
        if arg.default is inspect.Parameter.empty:
            raise ValueError(
                f"{where}: argument {arg.name!r} has no value; "
                "list it in params or give it a default"
            )
        defaults[arg.name] = arg.default

    if isinstance(items, bool) or (isinstance(items, int) and items <= 0):
        raise ValueError(f"{where}: items must be a positive int or a callable")
    if warmup is not None and warmup < 0:
        raise ValueError(f"{where}: warmup must be >= 0 calls")
    if min_samples is not None and min_samples < 1:
        raise ValueError(f"{where}: min_samples must be >= 1")
    if max_time is not None and not max_time > 0:
        raise ValueError(f"{where}: max_time must be > 0 seconds")
    return BenchmarkSpec(
        name=bench_name,
        setup=setup,
        params=values,
        items=items,
        unit=unit,
        warmup=warmup,
        min_samples=min_samples,
        max_time=max_time,
        tags=tags,
        takes_device="device" in declared,
        defaults=defaults,
    )


def _is_param_value(value: object) -> bool:
    if value is None or isinstance(value, str | bool | int):
        return True
    return isinstance(value, float) and math.isfinite(value)
