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
from dataclasses import dataclass
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING
from typing import Any
from typing import Literal

from gpudesk.calc import sizing
from gpudesk.i18n_marks import QT_TRANSLATE_NOOP
from gpudesk.services.cloud.catalog import Catalog
from gpudesk.services.cloud.catalog import GpuSpec
from gpudesk.services.cloud.catalog import Offer

if TYPE_CHECKING:  # spot judgement is imported when offers are ranked as spot, not at start
    from gpudesk.services.cloud.spot_rates import SpotRate
    from gpudesk.services.plan.expected_cost import SpotAssumptions
    from gpudesk.services.plan.expected_cost import SpotRisk

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
    """Binary units, as nvidia-smi and torch report memory; they scale up to EiB and
    beyond that the figure is written in scientific notation, so that a figure is never
    a long row of digits a label cuts off (issue 31: "Communication buffers: 1000.0 …")."""
    value = float(n)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"):
        if abs(value) < 1024:
            return f"{value:.0f} {unit}" if unit in ("B", "KiB") else f"{value:.1f} {unit}"
        value /= 1024
    return f"{float(n):.2e} B"


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
    from gpudesk.services.cloud.spot_rates import rate_for
    from gpudesk.services.plan.expected_cost import spot_outlook

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
        from gpudesk.services.plan.expected_cost import SpotAssumptions

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


# --------------------------------------------------------------------------- nothing fits

# The largest model ever reported: BaGuaLu, 174 trillion parameters, trained on the
# Sunway supercomputer (Ma et al., PPoPP 2022). Openly released models stop near
# 1.6 trillion (Switch Transformer C-2048, Fedus et al. 2021). Above this, the count is
# almost surely a typo (an exponent too many), said before any sizing is trusted.
LARGEST_REPORTED_PARAMS = 174e12
# Fewest GPUs searched for the "more GPUs" answer: beyond any cluster that exists, so a
# plan that needs more is told as "no number of GPUs", not as a count to rent.
MAX_GPUS_SEARCHED = 1 << 17

MSG_IMPLAUSIBLE = QT_TRANSLATE_NOOP(
    "Planner", "No model this size exists: {params} parameters. The largest ever reported "
    "has 174 trillion (1.74e14, BaGuaLu, 2022) and openly released ones about 1.6 trillion; "
    "its 16-bit weights alone would take {weights}. Check the number (an exponent too "
    "many?).")
MSG_NOTHING_FITS = QT_TRANSLATE_NOOP(
    "Planner", "Nothing fits: none of the {n} offers shown can hold this job as it is set "
    "up. What would:")
MSG_FITS_WITH = QT_TRANSLATE_NOOP(
    "Planner", "• {change}: fits on {machine} ({count} × {gpu}, {provider}), {used} of "
    "{capacity} per GPU.")
MSG_MORE_GPUS = QT_TRANSLATE_NOOP(
    "Planner", "• More GPUs: {count} × {gpu} (the largest GPU offered) with {strategy}, "
    "{used} per GPU.")
MSG_MORE_MACHINES = QT_TRANSLATE_NOOP(
    "Planner", "  That is more than the {most} GPUs of the largest offer: {machines} "
    "machines in one multi-node run.")
MSG_NO_COUNT = QT_TRANSLATE_NOOP(
    "Planner", "• More GPUs: not even {count} × {gpu} (the largest GPU offered) can hold "
    "it.")
MSG_TRIED = QT_TRANSLATE_NOOP(
    "Planner", "Tried, fits no offer shown: {changes}.")
MSG_NONE_FITS_ANY = QT_TRANSLATE_NOOP(
    "Planner", "• No change gpudesk knows makes it fit an offer shown: a smaller model, "
    "batch or sequence.")

CHANGE_NAMES: dict[str, str] = {
    "checkpointing": QT_TRANSLATE_NOOP("Planner", "Gradient checkpointing"),
    "zero1": QT_TRANSLATE_NOOP("Planner", "ZeRO-1"),
    "zero2": QT_TRANSLATE_NOOP("Planner", "ZeRO-2"),
    "zero3": QT_TRANSLATE_NOOP("Planner", "ZeRO-3"),
    "zero3-offload": QT_TRANSLATE_NOOP("Planner", "ZeRO-3 with CPU offload"),
    "fsdp-grad-op": QT_TRANSLATE_NOOP("Planner", "FSDP shard grad+optimizer"),
    "fsdp-full": QT_TRANSLATE_NOOP("Planner", "FSDP full shard"),
    "fsdp-full-offload": QT_TRANSLATE_NOOP("Planner", "FSDP full shard with CPU offload"),
    "lora": QT_TRANSLATE_NOOP("Planner", "LoRA"),
    "qlora": QT_TRANSLATE_NOOP("Planner", "QLoRA (4-bit NF4 base)"),
    "int8": QT_TRANSLATE_NOOP("Planner", "8-bit weights"),
    "nf4": QT_TRANSLATE_NOOP("Planner", "4-bit NF4 weights"),
    "data-parallel": QT_TRANSLATE_NOOP("Planner", "plain data parallel"),
    "tensor-parallel": QT_TRANSLATE_NOOP("Planner", "tensor parallel"),
}


def _identity(context: str, text: str) -> str:
    return text


Translate = Any  # (context, source) -> translated text: QCoreApplication.translate or none


@dataclass(frozen=True)
class Alternative:
    """One change to the job (a key of CHANGE_NAMES) and the cheapest offer it fits."""

    change: str
    setup: sizing.Setup
    ranked: RankedOffer | None  # None: it fits no offer shown


@dataclass(frozen=True)
class WhatWouldFit:
    """Why nothing fits, in numbers the calculator gave: each change tried against the
    offers shown, and how many of the largest GPU offered would hold the job as set up."""

    offers: int
    alternatives: tuple[Alternative, ...]
    biggest: GpuSpec | None  # the offered GPU with the most memory that runs the precision
    biggest_plan: sizing.ParallelPlan | None  # fewest of them (then lowest stage) that fit
    most_gpus: int  # the most GPUs one offer has

    @property
    def fitting(self) -> tuple[Alternative, ...]:
        return tuple(a for a in self.alternatives if a.ranked is not None)


def _changes(job: Job) -> list[tuple[str, sizing.Setup]]:
    """The changes worth trying, in the order a researcher would (cheapest in speed first)."""
    s, model = job.setup, job.model
    out: list[tuple[str, sizing.Setup]] = []
    if s.mode == "inference":
        if s.weight_quantization == "none" and s.precision not in ("int8", "int4") \
                and model.kind != "cnn":
            out += [("int8", replace(s, quantize="int8")), ("nf4", replace(s, quantize="nf4"))]
        return out
    if not s.grad_checkpointing:
        out.append(("checkpointing", replace(s, grad_checkpointing=True)))
    if s.fsdp == "none":
        out += [(f"zero{z}", replace(s, zero=z, offload=False)) for z in (1, 2, 3) if z > s.zero]
        if not s.offload:
            out.append(("zero3-offload", replace(s, zero=3, offload=True)))
    else:
        if s.fsdp == "grad-op":  # only stronger sharding than chosen
            out.append(("fsdp-full", replace(s, fsdp="full", offload=False)))
        if not s.offload:
            out.append(("fsdp-full-offload", replace(s, fsdp="full", offload=True)))
    if s.finetune == "full" and model.is_transformer:
        base = replace(s, zero=0, fsdp="none", offload=False)
        out += [("lora", replace(base, finetune="lora", quantize="none")),
                ("qlora", replace(base, finetune="qlora", quantize="nf4-dq"))]
    return out


def what_would_fit(job: Job, offers: Iterable[Offer], spot: bool = False
                   ) -> WhatWouldFit | None:
    """None when an offer shown fits the job as set up; else each change tried with the
    cheapest offer it fits (computed, never guessed) and the fewest of the largest GPU."""
    offers = list(offers)
    if any(r.fits for r in (judge(job, o, spot) for o in offers)):
        return None
    alternatives = []
    for change, setup in _changes(job):
        trial = Job(job.model, setup, job.work)
        try:
            sizing.validate(trial.model, trial.setup)
            ranked = rank(trial, offers, spot=spot)
        except sizing.SizingError:
            continue
        best = next((r for r in ranked if r.fits), None)
        alternatives.append(Alternative(change, setup, best))
    runnable = [o for o in offers if o.gpu.supports(job.setup.precision)]
    biggest = max((o.gpu for o in runnable), key=lambda g: g.usable_bytes, default=None)
    plan = _fewest_gpus(job, biggest) if biggest is not None else None
    return WhatWouldFit(len(offers), tuple(_distinct(alternatives)), biggest, plan,
                        max((o.gpu_count for o in offers), default=0))


def _distinct(alternatives: list[Alternative]) -> list[Alternative]:
    """A higher ZeRO/FSDP stage only where it fits another (cheaper) offer than the
    lower stage before it: ZeRO-2 on the same machine as ZeRO-1 says nothing new."""
    out: list[Alternative] = []
    last_offer: Offer | None = None
    for a in alternatives:
        sharding = a.change.startswith(("zero", "fsdp"))
        if sharding and a.ranked is not None and last_offer is not None \
                and a.ranked.offer == last_offer:
            continue
        if sharding and a.ranked is not None:
            last_offer = a.ranked.offer
        out.append(a)
    return out


def _fewest_gpus(job: Job, gpu: GpuSpec) -> sizing.ParallelPlan | None:
    """Fewest of ``gpu`` that hold the job, sharding as needed but keeping the states on
    the GPUs (CPU offload is its own change); with offload only where nothing else fits."""
    plan = sizing.smallest_parallel_plan(
        job.model, replace(job.setup, offload=False), gpu.usable_bytes,
        max_gpus=MAX_GPUS_SEARCHED)
    if plan is not None and plan.offload:  # it tries offload at each count: search again
        n = plan.gpus
        while n <= MAX_GPUS_SEARCHED:
            for zero, fsdp in _stages(job.setup):
                trial = replace(job.setup, gpus=n, zero=zero, fsdp=fsdp, offload=False)
                est = sizing.estimate(job.model, trial)
                if est.total_bytes <= gpu.usable_bytes:
                    return sizing.ParallelPlan(n, zero, False, est, fsdp)
            n *= 2
    return plan


def _stages(setup: sizing.Setup) -> tuple[tuple[int, sizing.Fsdp], ...]:
    if setup.mode == "inference":
        return ((0, "none"),)
    if setup.fsdp != "none":
        return ((0, "none"), (0, "grad-op"), (0, "full"))
    return ((0, "none"), (1, "none"), (2, "none"), (3, "none"))


def _strategy_key(plan: sizing.ParallelPlan, mode: str) -> str:
    if mode == "inference":
        return "tensor-parallel" if plan.gpus > 1 else "data-parallel"
    if plan.fsdp != "none":
        return "fsdp-full-offload" if plan.offload else f"fsdp-{plan.fsdp}"
    if plan.zero == 0:
        return "data-parallel"
    return "zero3-offload" if plan.offload else f"zero{plan.zero}"


def what_would_fit_lines(w: WhatWouldFit, mode: str, tx: Translate = _identity
                         ) -> list[str]:
    """The same sentences in the window and the CLI; ``tx`` translates (window) or not."""
    from gpudesk.services.cloud.catalog import provider_title  # noqa: PLC0415

    def name(change: str) -> str:
        return str(tx("Planner", CHANGE_NAMES[change]))

    lines = [tx("Planner", MSG_NOTHING_FITS).format(n=w.offers)]
    for a in w.fitting:
        r = a.ranked
        assert r is not None and r.estimate is not None
        o = r.offer
        lines.append(tx("Planner", MSG_FITS_WITH).format(
            change=name(a.change), machine=o.instance_type, count=o.gpu_count, gpu=o.gpu.name,
            provider=provider_title(o.provider), used=format_bytes(r.estimate.total_bytes),
            capacity=format_bytes(o.gpu.usable_bytes)))
    if w.biggest is not None and w.biggest_plan is not None:
        p = w.biggest_plan
        lines.append(tx("Planner", MSG_MORE_GPUS).format(
            count=f"{p.gpus:,}", gpu=w.biggest.name, strategy=name(_strategy_key(p, mode)),
            used=format_bytes(p.estimate.total_bytes)))
        if w.most_gpus and p.gpus > w.most_gpus:
            lines.append(tx("Planner", MSG_MORE_MACHINES).format(
                most=w.most_gpus, machines=f"{-(-p.gpus // w.most_gpus):,}"))
    elif w.biggest is not None:
        lines.append(tx("Planner", MSG_NO_COUNT).format(
            count=f"{MAX_GPUS_SEARCHED:,}", gpu=w.biggest.name))
    if not w.fitting and w.biggest_plan is None:
        lines.append(tx("Planner", MSG_NONE_FITS_ANY))
    tried = [name(a.change) for a in w.alternatives if a.ranked is None]
    if tried:
        lines.append(tx("Planner", MSG_TRIED).format(changes=", ".join(tried)))
    return lines


def implausible_size(model: sizing.ModelSpec, tx: Translate = _identity) -> str:
    """A sanity word for a parameter count no model has ever had; "" for a real one."""
    params = model.parameter_count()
    if params <= LARGEST_REPORTED_PARAMS:
        return ""
    return str(tx("Planner", MSG_IMPLAUSIBLE).format(
        params=f"{params:.3g}", weights=format_bytes(2 * params)))


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
