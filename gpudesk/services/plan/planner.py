"""Ranks catalog offers by what finishing the job would cost on each.

Each offer is sized with *its own* GPU count (data parallel over every GPU of
the instance, the per-GPU batch unchanged), so ZeRO sharding and DDP buffers
are counted for the machine that would actually run.
"""

from __future__ import annotations

import csv
import io
import json
import math
from collections.abc import Iterable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Literal

from gpudesk.calc import sizing
from gpudesk.i18n_marks import QT_TRANSLATE_NOOP
from gpudesk.services.cloud.catalog import Catalog, GpuSpec, Offer
from gpudesk.services.cloud.spot_rates import SpotRate, rate_for
from gpudesk.services.plan.expected_cost import SpotAssumptions, SpotRisk, spot_outlook

SortKey = Literal["cost", "price", "headroom", "hours"]

REASON_FITS = QT_TRANSLATE_NOOP(
    "Planner", "fits: {used} of {capacity} per GPU ({headroom} free)")
REASON_TOO_BIG = QT_TRANSLATE_NOOP(
    "Planner", "needs {used} per GPU but the {gpu} has {capacity}"
)
REASON_NO_PRECISION = QT_TRANSLATE_NOOP(
    "Planner", "the {gpu} has no {precision} support")
REASON_NO_SPOT = QT_TRANSLATE_NOOP(
    "Planner", "no spot price known for this offer")
ERR_NOT_PLAN = QT_TRANSLATE_NOOP(
    "SizingError", "this file is not a gpudesk plan")
ERR_DAMAGED = QT_TRANSLATE_NOOP(
    "SizingError", "the plan file is damaged ({detail})")


def format_bytes(n: float) -> str:
    """Binary units, as nvidia-smi and torch report memory."""
    value = float(n)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(value) < 1024 or unit == "TiB":
            return f"{value:.0f} {unit}" if unit in ("B", "KiB") else f"{value:.1f} {unit}"
        value /= 1024
    return f"{value:.1f} TiB"


@dataclass(frozen=True)
class RankedOffer:
    """One offer judged against one job; ``reason`` is a translatable template.

    An offer without a known price has ``price_per_hour`` and ``cost`` infinite: never a
    cost to finish, ranked by cost or price after every priced offer (its hours and
    headroom still hold and sort as they are).
    """

    offer: Offer
    spot: bool
    fits: bool
    reason: str
    reason_values: dict[str, str]
    estimate: sizing.Estimate | None
    price_per_hour: float
    hours: float
    cost: float
    headroom_bytes: int
    risk: SpotRisk | None = None  # spot offers: the expected cost under the cloud's rate

    @property
    def expected_cost(self) -> float:
        """What ranking by cost uses: the expected cost where the interruption rate is
        known, else the cost as if never interrupted (the least it can cost)."""
        if self.risk is not None and self.risk.outlook is not None:
            return self.risk.outlook.expected_cost
        return self.cost

    @property
    def reason_text(self) -> str:
        return self.reason.format(**self.reason_values)

    @property
    def priced(self) -> bool:
        return math.isfinite(self.price_per_hour)

    def to_json(self) -> dict[str, Any]:
        o = self.offer
        return {
            "provider": o.provider, "instance_type": o.instance_type, "region": o.region,
            "gpu": o.gpu.name, "gpu_count": o.gpu_count, "gpu_memory_bytes": o.gpu.usable_bytes,
            "market": "spot" if self.spot else "on-demand",
            "price_per_hour": self.price_per_hour if self.priced else None,
            "price_source": o.price_status,
            "price_note": o.price_source, "spot_price": o.spot_price,
            "price_date": o.price_date.isoformat(), "fits": self.fits,
            "reason": self.reason_text,
            "per_gpu_total_bytes": self.estimate.total_bytes if self.estimate else None,
            "headroom_bytes": self.headroom_bytes,
            "hours": None if math.isinf(self.hours) else self.hours,
            "cost_to_finish": None if math.isinf(self.cost) else self.cost,
            **self._risk_json(),
        }

    def _risk_json(self) -> dict[str, Any]:
        if self.risk is not None and self.fits:
            return self.risk.to_json()
        on_demand = not self.spot and self.fits and self.priced
        return {"interruption_rate": None,
                "rate_source": "on-demand: not interrupted" if not self.spot else None,
                "expected_cost": (None if math.isinf(self.cost) else self.cost)
                if on_demand else None,
                "expected_hours": (None if math.isinf(self.hours) else self.hours)
                if on_demand else None}


@dataclass(frozen=True)
class Job:
    """What the user asked for: a model, how it runs, and how much work."""

    model: sizing.ModelSpec
    setup: sizing.Setup
    work: sizing.Workload


def judge(job: Job, offer: Offer, spot: bool = False) -> RankedOffer:
    """Size the job on ``offer`` and say, in words, why it fits or not."""
    gpu = offer.gpu
    price = offer.price(spot)
    setup = replace(job.setup, gpus=offer.gpu_count)
    values = {"gpu": gpu.name, "capacity": format_bytes(gpu.usable_bytes),
              "precision": setup.precision}
    if price is None:  # no spot quote (never a guessed fraction): ranked by on-demand
        price = offer.ondemand_price
    if price is None:  # no price at all (none bundled, none asked for yet): no cost
        price = math.inf
    if not gpu.supports(setup.precision):
        return RankedOffer(offer, spot, False, REASON_NO_PRECISION, values, None, price,
                           math.inf, math.inf, 0)
    est = sizing.estimate(job.model, setup)
    headroom = gpu.usable_bytes - est.total_bytes
    values |= {"used": format_bytes(est.total_bytes), "headroom": format_bytes(headroom)}
    flops = sizing.job_flops(job.model, setup, job.work)
    hours = sizing.hours_to_finish(flops, offer.gpu_count, gpu.peak_tflops(setup.precision),
                                   job.work.mfu)
    fits = headroom >= 0
    cost = hours * price if fits and math.isfinite(price) else math.inf
    return RankedOffer(offer, spot, fits, REASON_FITS if fits else REASON_TOO_BIG, values, est,
                       price, hours if fits else math.inf, cost, headroom)


def _sort_key(key: SortKey) -> Any:
    def by(r: RankedOffer) -> tuple[Any, ...]:
        primary = {"cost": r.expected_cost, "price": r.price_per_hour, "hours": r.hours,
                   "headroom": -r.headroom_bytes}[key]
        return (not r.fits, primary, r.cost, r.price_per_hour, r.offer.instance_type)
    return by


def with_risk(r: RankedOffer, rates: dict[tuple[str, str, str], SpotRate],
              assumptions: SpotAssumptions) -> RankedOffer:
    """A spot row with its expected cost under its cloud's interruption rate."""
    o = r.offer
    if not r.spot:
        return r
    rate = rate_for(o.provider, o.region, o.instance_type, rates)
    return replace(r, risk=spot_outlook(rate, r.hours, r.price_per_hour, assumptions))


def rank(job: Job, offers: Iterable[Offer], *, spot: bool = False,
         sort: SortKey = "cost",
         rates: dict[tuple[str, str, str], SpotRate] | None = None,
         assumptions: SpotAssumptions | None = None) -> list[RankedOffer]:
    """Every offer judged; those that fit first, cheapest to finish first (an offer with no
    price has no cost: by cost or price it comes after every priced one). Spot offers
    rank by their expected cost where their cloud's interruption rate is known."""
    sizing.validate(job.model, job.setup)
    judged = [judge(job, o, spot) for o in offers]
    if spot:
        judged = [with_risk(r, rates or {}, assumptions or SpotAssumptions()) for r in judged]
    return sorted(judged, key=_sort_key(sort))


def rank_catalog(job: Job, catalog: Catalog, *, provider: str | None = None,
                 region: str | None = None, spot: bool = False,
                 max_price: float | None = None, sort: SortKey = "cost",
                 rates: dict[tuple[str, str, str], SpotRate] | None = None,
                 assumptions: SpotAssumptions | None = None) -> list[RankedOffer]:
    offers = catalog.filter(provider=provider, region=region, spot=spot, max_price=max_price)
    return rank(job, offers, spot=spot, sort=sort, rates=rates, assumptions=assumptions)


# --------------------------------------------------------------------------- lighter methods

# Tried in this order when a full fine-tune does not fit: a 16-bit LoRA first
# (faster, no quantization error), then QLoRA as the QLoRA paper runs it.
LIGHTER_METHODS: tuple[tuple[str, str], ...] = (("lora", "none"), ("qlora", "nf4-dq"))


@dataclass(frozen=True)
class MethodSuggestion:
    """A fine-tuning method that fits one GPU where the job as asked does not."""

    setup: sizing.Setup
    estimate: sizing.Estimate
    offer: Offer | None = None  # the cheapest one-GPU offer it fits, when asked for one


def lighter_method(job: Job, gpu: GpuSpec) -> MethodSuggestion | None:
    """LoRA, then QLoRA, on one ``gpu`` with the same batch and sequence.

    None when the job is not a full fine-tune of a transformer, already fits
    one such GPU, or the GPU cannot run its precision (the offers table rules
    that GPU out, so suggesting it would contradict the page).
    """
    setup = job.setup
    if setup.mode != "train" or setup.finetune != "full" or not job.model.is_transformer:
        return None
    if not gpu.supports(setup.precision):
        return None
    single = replace(setup, gpus=1, zero=0, fsdp="none", offload=False)
    if sizing.estimate(job.model, single).total_bytes <= gpu.usable_bytes:
        return None
    for method, quant in LIGHTER_METHODS:
        trial = replace(single, finetune=method, quantize=quant)  # type: ignore[arg-type]
        try:
            est = sizing.estimate(job.model, trial)
        except sizing.SizingError:
            continue
        if est.total_bytes <= gpu.usable_bytes:
            return MethodSuggestion(trial, est)
    return None


def lighter_offer(job: Job, offers: Iterable[Offer], spot: bool = False
                  ) -> MethodSuggestion | None:
    """The cheapest one-GPU offer on which LoRA or QLoRA fits (see :func:`lighter_method`)."""
    best: tuple[float, MethodSuggestion] | None = None
    for o in offers:
        price = o.price(spot)
        if o.gpu_count != 1 or price is None or (best is not None and price >= best[0]):
            continue
        found = lighter_method(job, o.gpu)
        if found is not None:
            best = (price, replace(found, offer=o))
    return best[1] if best else None


# --------------------------------------------------------------------------- export


def plan_json(job: Job, chosen: RankedOffer | None, ranked: list[RankedOffer]) -> dict[str, Any]:
    """A saved plan: enough to rebuild the job and see why the offer was chosen."""
    from dataclasses import asdict

    data: dict[str, Any] = {
        "format": "gpudesk-plan", "version": 1,
        "model": asdict(job.model), "setup": asdict(job.setup), "work": asdict(job.work),
        "estimate_single_gpu": sizing.estimate(job.model, job.setup).to_json(),
        "chosen": chosen.to_json() if chosen else None,
        "offers": [r.to_json() for r in ranked],
    }
    return data


def plan_from_json(data: dict[str, Any]) -> Job:
    """Rebuild a Job from :func:`plan_json` output; raises SizingError on bad data."""
    if not isinstance(data, dict) or data.get("format") != "gpudesk-plan":
        raise sizing.SizingError("plan", ERR_NOT_PLAN)
    try:
        model = sizing.ModelSpec(**data["model"])
        setup = sizing.Setup(**data["setup"])
        work = sizing.Workload(**data["work"])
    except (KeyError, TypeError) as exc:
        raise sizing.SizingError("plan", ERR_DAMAGED, detail=str(exc)) from None
    sizing.validate(model, setup)
    return Job(model, setup, work)


def read_plan_file(path: Path) -> dict[str, Any]:
    """Read and check a saved plan (blocking I/O: call it off the GUI thread)."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise sizing.SizingError("plan", ERR_DAMAGED, detail=str(exc)) from None
    plan_from_json(data)  # raises SizingError with a readable reason
    return data  # type: ignore[no-any-return]


CSV_COLUMNS = ("provider", "instance_type", "region", "gpu", "gpu_count", "market",
               "price_per_hour", "fits", "per_gpu_total_bytes", "headroom_bytes", "hours",
               "cost_to_finish", "reason", "price_source", "price_date")


def offers_csv(ranked: list[RankedOffer]) -> str:
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=CSV_COLUMNS, extrasaction="ignore",
                            lineterminator="\n")
    writer.writeheader()
    for r in ranked:
        writer.writerow(r.to_json())
    return buf.getvalue()


def dumps_plan(data: dict[str, Any]) -> str:
    return json.dumps(data, indent=2, sort_keys=False, allow_nan=False)
