"""The bundled GPU and offer catalog: what each GPU can do and what each instance costs.

Prices go stale, so every offer carries its source and date and the catalog
reports its age; the UI shows it rather than pretending list prices are live.
Where a cloud publishes no list price gpudesk can cite (Alibaba Cloud), the
offer carries none: its ``price_source`` starts with ``NO BUNDLED PRICE``, it
ranks after every priced offer and only a live answer gives it a price.
The CSVs live in ``resources/catalog/`` so they can be refreshed without code
changes; a bad row fails loudly with file, line and column instead of quietly
skewing a cost ranking.
"""

from __future__ import annotations

import csv
import functools
import math
from collections.abc import Callable
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import date
from pathlib import Path
from typing import TypeVar

from gpudesk.i18n_marks import QT_TRANSLATE_NOOP
from gpudesk.i18n_marks import name as translated_name

__all__ = [
    "PRECISIONS",
    "PROVIDERS",
    "Catalog",
    "CatalogError",
    "GpuSpec",
    "Offer",
    "load_catalog",
]

PRECISIONS: tuple[str, ...] = ("fp32", "amp-fp16", "amp-bf16", "fp16", "bf16", "int8", "int4")
PROVIDERS: tuple[str, ...] = ("aws", "tencent", "aliyun")
# An offers.csv row with an empty on-demand price must say why, starting with this.
NO_PRICE_MARK = "NO BUNDLED PRICE"
PROVIDER_TITLES = {"aws": "AWS", "tencent": QT_TRANSLATE_NOOP("Catalog", "Tencent Cloud"),
                   "aliyun": QT_TRANSLATE_NOOP("Catalog", "Alibaba Cloud")}


def provider_title(provider: str) -> str:
    """A cloud's name as people write it ("Alibaba Cloud"; in the window, in its language),
    or the key itself."""
    title = PROVIDER_TITLES.get(provider)
    return translated_name("Catalog", title) if title else provider


GPUS_FILE = "gpus.csv"
OFFERS_FILE = "offers.csv"

_MIB = 1024 * 1024

# Which datasheet column bounds each precision. fp32 is the non-tensor rate
# because PyTorch leaves TF32 matmuls off by default; int4 has no column of its
# own and is counted at the int8 rate (conservative: int4 kernels dequantize).
_PRECISION_FIELD: dict[str, str] = {
    "fp32": "fp32_tflops",
    "amp-fp16": "fp16_tflops",
    "fp16": "fp16_tflops",
    "amp-bf16": "bf16_tflops",
    "bf16": "bf16_tflops",
    "int8": "int8_tops",
    "int4": "int8_tops",
}

_GPU_COLUMNS = (
    "gpu", "memory_gib", "usable_mib", "fp32_tflops", "tf32_tflops", "fp16_tflops",
    "bf16_tflops", "int8_tops", "mem_bandwidth_gbs", "architecture", "source", "source_date",
)
_OFFER_COLUMNS = (
    "provider", "instance_type", "region", "gpu", "gpu_count", "vcpus", "ram_gib",
    "ondemand_usd_per_hour", "spot_usd_per_hour", "price_source", "price_date",
)


class CatalogError(ValueError):
    """A catalog file is missing or malformed; says where, so the CSV can be fixed."""

    def __init__(self, message: str, *, file: Path | None = None, line: int | None = None,
                 column: str | None = None) -> None:
        self.file = file
        self.line = line
        self.column = column
        where = []
        if file is not None:
            where.append(str(file))
        if line is not None:
            where.append(f"line {line}")
        if column is not None:
            where.append(f"column {column!r}")
        super().__init__(f"{', '.join(where)}: {message}" if where else message)


@dataclass(frozen=True)
class GpuSpec:
    """One GPU model's datasheet numbers (dense, not sparse) and usable memory.

    ``usable_bytes`` is what nvidia-smi reports as total, not the marketed size,
    because that is what a job can actually fill.
    """

    name: str
    memory_gib: float
    usable_bytes: int
    fp32_tflops: float
    tf32_tflops: float
    fp16_tflops: float
    bf16_tflops: float
    int8_tops: float
    bandwidth_gbs: float
    architecture: str
    source: str
    source_date: date

    def peak_tflops(self, precision: str) -> float:
        """Dense peak for ``precision`` (TOPS for int8/int4); 0.0 means no hardware support."""
        try:
            field = _PRECISION_FIELD[precision]
        except KeyError:
            raise ValueError(
                f"unknown precision {precision!r}; expected one of {', '.join(PRECISIONS)}"
            ) from None
        value: float = getattr(self, field)
        return value

    def supports(self, precision: str) -> bool:
        """Whether the GPU runs ``precision`` natively (e.g. T4 and V100 have no bf16)."""
        return self.peak_tflops(precision) > 0


@dataclass(frozen=True)
class Offer:
    """One rentable instance type in one region, with its list prices and their provenance."""

    provider: str
    instance_type: str
    region: str
    gpu: GpuSpec
    gpu_count: int
    vcpus: int
    ram_gib: float
    # USD/hour; None: no bundled price (no published one to cite) until a live answer.
    ondemand_price: float | None
    spot_price: float | None
    price_source: str
    price_date: date
    # Where the price comes from now: "bundled" (this file), "cached" (a live answer kept
    # from an earlier refresh, dated), "live" (asked for in this run) or "unpriced" (this
    # file has none). A spot price is only ever a quote (bundled rows carry none): without
    # one there is "no spot price".
    price_kind: str = "bundled"

    def price(self, spot: bool) -> float | None:
        """USD per hour in the chosen market; ``None`` when no such price is known."""
        return self.spot_price if spot else self.ondemand_price

    @property
    def priced(self) -> bool:
        """Whether an on-demand price is known (bundled, cached or live)."""
        return self.ondemand_price is not None

    @property
    def price_status(self) -> str:
        """``live``, ``cached <date>``, ``bundled <date>``, ``estimate <date>`` (a bundled
        number with no published source: Tencent rows) or, without a price, what gets
        one: what the table and JSON say."""
        if self.price_kind == "live":
            return "live"
        if self.ondemand_price is None:
            return (f"no bundled price: refresh prices with your "
                    f"{provider_title(self.provider)} account")
        return f"{self.price_kind} {self.price_date.isoformat()}"


@dataclass(frozen=True)
class Catalog:
    """GPUs by name plus every offer, in file order."""

    gpus: dict[str, GpuSpec]
    offers: tuple[Offer, ...]

    @property
    def oldest_price_date(self) -> date:
        """The stalest price in the catalog: the honest age to show next to any ranking.

        An offer without a price has no age to count (its date is when none was found).
        """
        if not self.offers:
            raise CatalogError("the catalog has no offers")
        priced = [o for o in self.offers if o.priced] or list(self.offers)
        return min(o.price_date for o in priced)

    def age_days(self, today: date | None = None) -> int:
        """Days since ``oldest_price_date`` (never negative, even with a clock set back)."""
        today = date.today() if today is None else today
        return max(0, (today - self.oldest_price_date).days)

    def filter(self, *, provider: str | None = None, region: str | None = None,
               spot: bool = False, max_price: float | None = None,
               gpu: str | None = None) -> list[Offer]:
        """Offers matching every given criterion, in catalog order.

        ``max_price`` (USD/hour, inclusive) is compared with the price in the chosen
        market; with ``spot=True`` an offer without a spot quote stays, compared (and
        later ranked) by its on-demand price: spot prices are never guessed. An offer
        with no price at all cannot be shown to be under ``max_price`` and is left out.
        """
        result = []
        for o in self.offers:
            if provider is not None and o.provider != provider:
                continue
            if region is not None and o.region != region:
                continue
            if gpu is not None and o.gpu.name != gpu:
                continue
            price = o.price(spot)
            if price is None:
                price = o.ondemand_price
            if max_price is not None and (price is None or price > max_price):
                continue
            result.append(o)
        return result

    def regions(self, provider: str | None = None) -> list[str]:
        """Sorted distinct regions, optionally of one provider."""
        return sorted({o.region for o in self.offers if provider in (None, o.provider)})

    def providers(self) -> list[str]:
        """Sorted distinct providers."""
        return sorted({o.provider for o in self.offers})


def load_catalog(directory: Path | None = None) -> Catalog:
    """Read ``gpus.csv`` and ``offers.csv`` from ``directory`` (default: the bundled catalog).

    The bundled catalog is parsed once per process; an explicit directory is
    always re-read, so tests and refresh tools see their own files.
    """
    if directory is None:
        return _load_bundled()
    return _load(Path(directory))


@functools.lru_cache(maxsize=1)
def _load_bundled() -> Catalog:
    from gpudesk.resources import resource_path

    return _load(resource_path("catalog"))


def _load(directory: Path) -> Catalog:
    gpus: dict[str, GpuSpec] = {}
    gpus_path = directory / GPUS_FILE
    for row in _rows(gpus_path, _GPU_COLUMNS):
        name = row.text("gpu")
        if name in gpus:
            raise row.error("gpu", f"duplicate GPU {name!r}")
        gpus[name] = GpuSpec(
            name=name,
            memory_gib=row.number("memory_gib", positive=True),
            usable_bytes=row.integer("usable_mib", minimum=1) * _MIB,
            fp32_tflops=row.number("fp32_tflops", positive=True),
            tf32_tflops=row.number("tf32_tflops"),
            fp16_tflops=row.number("fp16_tflops"),
            bf16_tflops=row.number("bf16_tflops"),
            int8_tops=row.number("int8_tops"),
            bandwidth_gbs=row.number("mem_bandwidth_gbs", positive=True),
            architecture=row.text("architecture"),
            source=row.text("source"),
            source_date=row.iso_date("source_date"),
        )
    if not gpus:
        raise CatalogError("no GPU rows", file=gpus_path)

    offers: list[Offer] = []
    seen: set[tuple[str, str, str]] = set()
    offers_path = directory / OFFERS_FILE
    for row in _rows(offers_path, _OFFER_COLUMNS):
        provider = row.text("provider")
        if provider not in PROVIDERS:
            raise row.error("provider", f"unknown provider {provider!r}; expected one of "
                                        f"{', '.join(PROVIDERS)}")
        gpu_name = row.text("gpu")
        if gpu_name not in gpus:
            raise row.error("gpu", f"GPU {gpu_name!r} is not in {GPUS_FILE}")
        key = (provider, row.text("instance_type"), row.text("region"))
        if key in seen:
            raise row.error("instance_type", f"duplicate offer {key[1]} in {key[2]}")
        seen.add(key)
        spot_text = row.raw("spot_usd_per_hour")
        source = row.text("price_source")
        unpriced = source.startswith(NO_PRICE_MARK)
        if unpriced and row.raw("ondemand_usd_per_hour"):
            raise row.error("ondemand_usd_per_hour",
                            f"a row marked {NO_PRICE_MARK!r} carries no price")
        offers.append(Offer(
            provider=provider,
            instance_type=key[1],
            region=key[2],
            gpu=gpus[gpu_name],
            gpu_count=row.integer("gpu_count", minimum=1),
            vcpus=row.integer("vcpus", minimum=1),
            ram_gib=row.number("ram_gib", positive=True),
            # empty only where the source says why (NO_PRICE_MARK): never a silent gap
            ondemand_price=None if unpriced
            else row.number("ondemand_usd_per_hour", positive=True),
            spot_price=row.number("spot_usd_per_hour", positive=True) if spot_text else None,
            price_source=source,
            price_date=row.iso_date("price_date"),
            # a row the catalog could not source says so wherever its price shows
            price_kind="unpriced" if unpriced else "estimate" if source.startswith("ESTIMATE")
            else "bundled",
        ))
    if not offers:
        raise CatalogError("no offer rows", file=offers_path)
    return Catalog(gpus=gpus, offers=tuple(offers))


_T = TypeVar("_T")


class _Row:
    """One CSV record with typed accessors that report file, line and column on failure."""

    def __init__(self, path: Path, line: int, values: dict[str, str | None]) -> None:
        self.path = path
        self.line = line
        self.values = values

    def error(self, column: str, message: str) -> CatalogError:
        return CatalogError(message, file=self.path, line=self.line, column=column)

    def raw(self, column: str) -> str:
        return (self.values.get(column) or "").strip()  # a short row leaves None

    def text(self, column: str) -> str:
        value = self.raw(column)
        if not value:
            raise self.error(column, "value is missing")
        return value

    def _convert(self, column: str, convert: Callable[[str], _T], kind: str) -> _T:
        value = self.text(column)
        try:
            return convert(value)
        except ValueError:
            raise self.error(column, f"{value!r} is not {kind}") from None

    def number(self, column: str, *, positive: bool = False) -> float:
        value = self._convert(column, float, "a number")
        if not math.isfinite(value):
            raise self.error(column, f"{value!r} is not a finite number")
        if value < 0 or (positive and value == 0):
            raise self.error(column, f"{value!r} must be {'positive' if positive else '>= 0'}")
        return value

    def integer(self, column: str, *, minimum: int = 0) -> int:
        value = self._convert(column, int, "an integer")
        if value < minimum:
            raise self.error(column, f"{value} must be at least {minimum}")
        return value

    def iso_date(self, column: str) -> date:
        return self._convert(column, date.fromisoformat, "a YYYY-MM-DD date")


def _rows(path: Path, columns: tuple[str, ...]) -> Iterator[_Row]:
    try:
        handle = path.open(encoding="utf-8-sig", newline="")
    except OSError as exc:
        raise CatalogError(f"cannot read: {exc.strerror or exc}", file=path) from exc
    with handle:
        reader = csv.DictReader(handle)
        header = reader.fieldnames or []
        for column in columns:
            if column not in header:
                raise CatalogError("header lacks this column", file=path, line=1, column=column)
        try:
            for values in reader:
                extra = values.pop(None, None)
                if extra is not None:
                    raise CatalogError(f"{len(header) + len(extra)} fields but the header has "
                                       f"{len(header)}", file=path, line=reader.line_num)
                yield _Row(path, reader.line_num, values)
        except csv.Error as exc:
            raise CatalogError(f"bad CSV: {exc}", file=path, line=reader.line_num) from exc
