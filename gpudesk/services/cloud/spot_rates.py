"""How often each cloud takes a spot machine back, from the cloud's own published figures.

Each rate keeps its source and date, like a price, and is cached between runs
(``spot-rates.json``); a cloud that publishes nothing gets a row saying so, never a guess.

- AWS: the EC2 Spot Instance Advisor's "frequency of interruption" bands (no account
  needed): ``spot-advisor-data.json``, read as ``spot_advisor[region]["Linux"][type]["r"]``
  indexing ``ranges[].label`` ("<5%", "5-10%", "10-15%", "15-20%", ">20%"), the share
  of capacity reclaimed in the trailing month. The bundle holds the band definitions
  only (``resources/spot/aws-spot-advisor-bands.json``: no snapshot of the data could
  be recorded offline); rows come from a downloaded file.
- Alibaba Cloud: ECS ``DescribeSpotAdvice`` (with an account), per zone and type:
  ``InterruptionRate`` (the average release rate of the last 30 days, in percent) and
  ``InterruptRateDesc`` (its band, "0-3%"). A region's rate is its worst zone's.
- Tencent Cloud: the CVM API publishes no interruption rate: "not published".
"""

from __future__ import annotations

import json
import logging
import math
import os
import re
from collections.abc import Callable
from collections.abc import Iterable
from dataclasses import asdict
from dataclasses import dataclass
from dataclasses import replace
from datetime import date
from pathlib import Path
from typing import IO
from typing import Any

from gpudesk.i18n_marks import QT_TRANSLATE_NOOP
from gpudesk.services.core.files import atomic_write_text
from gpudesk.services.core.files import read_json_object

log = logging.getLogger(__name__)

CACHE_FILE = "spot-rates.json"
PERIOD_HOURS = 30 * 24.0  # "the last 30 days" (ECS), "the trailing month" (AWS)
ADVISOR_URL = "https://spot-bid-advisor.s3.amazonaws.com/spot-advisor-data.json"
ADVISOR_ENV = "GPUDESK_SPOT_ADVISOR_URL"  # tests (and mirrors) serve the file elsewhere
ADVISOR_PAGE = "https://aws.amazon.com/ec2/spot/instance-advisor/"
BANDS_FILE = ("spot", "aws-spot-advisor-bands.json")
ADVISOR_FILE = ("spot", "spot-advisor-data.json")  # a downloaded snapshot, when present
ALIYUN_BATCH = 10  # DescribeSpotAdvice: "You can specify up to 10 instance types."
TIMEOUT_S = 20

NOT_PUBLISHED = QT_TRANSLATE_NOOP("SpotRates", "interruption rate: not published")
NOT_KNOWN = QT_TRANSLATE_NOOP("SpotRates", "interruption rate: not known yet")
WHY_TENCENT = QT_TRANSLATE_NOOP("SpotRates",
                                "Tencent Cloud's CVM API publishes no interruption rate")
WHY_AWS = QT_TRANSLATE_NOOP("SpotRates", "AWS Spot Instance Advisor: no row for this type here "
                            "(no snapshot bundled; refresh prices to read it)")
WHY_ALIYUN = QT_TRANSLATE_NOOP("SpotRates", "Alibaba Cloud DescribeSpotAdvice: not asked yet "
                               "(needs an account) or no answer for this type")
Opener = Callable[[str], IO[bytes]]


@dataclass(frozen=True)
class SpotRate:
    """Share of spot machines of one type taken back within a period, as a cloud states it.

    ``share`` is the figure used for the expected cost (a band's middle; an open band's
    lower bound) over ``period_hours`` (``calc.spot_risk.hourly_rate`` makes it a rate
    per hour), ``low``/``high`` the band (``high`` None: open-ended). All None when
    the cloud publishes nothing (``published`` False) or has not been asked yet.
    """

    provider: str
    region: str
    instance_type: str
    share: float | None
    low: float | None
    high: float | None
    label: str  # the cloud's own words: "<5%", "0-3%"; or NOT_PUBLISHED / NOT_KNOWN
    source: str  # where it came from, in words, with its date
    day: str  # ISO date the figure was read ("" when none)
    zone: str = ""
    published: bool = True
    period_hours: float = PERIOD_HOURS
    # AWS GetSpotPlacementScores (with an account): the best zone's 1-10 likelihood that a
    # spot request succeeds now. Shown beside the rate, never turned into one.
    placement_score: int | None = None
    placement_source: str = ""

    @property
    def known(self) -> bool:
        return self.share is not None

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def parse_band(label: str) -> tuple[float, float | None] | None:
    """A band label as a (low, high) share: "<5%" (0, .05), "5-10%" (.05, .10),
    ">20%" (.20, None), "0-3%" (0, .03); None when it is no band."""
    text = label.replace(" ", "").replace("%", "")
    if m := re.fullmatch(r"<(\d+(?:\.\d+)?)", text):
        return 0.0, float(m[1]) / 100
    if m := re.fullmatch(r">(\d+(?:\.\d+)?)", text):
        return float(m[1]) / 100, None
    if m := re.fullmatch(r"(\d+(?:\.\d+)?)-(\d+(?:\.\d+)?)", text):
        return float(m[1]) / 100, float(m[2]) / 100
    return None


def _middle(band: tuple[float, float | None]) -> float:
    low, high = band
    return low if high is None else (low + high) / 2


def advisor_rates(data: dict[str, Any], source: str, day: str,
                  os_name: str = "Linux") -> dict[tuple[str, str], SpotRate]:
    """(region, type) -> its band, from the Spot Instance Advisor's data file."""
    labels = {int(r["index"]): str(r["label"]) for r in data.get("ranges") or []
              if isinstance(r, dict) and "index" in r and "label" in r}
    rates: dict[tuple[str, str], SpotRate] = {}
    for region, systems in (data.get("spot_advisor") or {}).items():
        for itype, row in ((systems or {}).get(os_name) or {}).items():
            label = labels.get(int(row.get("r", -1))) if isinstance(row, dict) else None
            band = parse_band(label) if label else None
            if label is None or band is None:
                continue
            rates[(region, itype)] = SpotRate(
                "aws", region, itype, _middle(band), band[0], band[1], label, source, day)
    return rates


def _resource(parts: tuple[str, str]) -> Path:
    from gpudesk.resources import resources_root  # noqa: PLC0415

    return resources_root().joinpath(*parts)


def bundled_advisor() -> dict[tuple[str, str], SpotRate]:
    """The Advisor rows of a snapshot bundled beside the band definitions, if any ({})."""
    path = _resource(ADVISOR_FILE)
    try:
        data = json.loads(path.read_text("utf-8"))
    except (OSError, ValueError):
        return {}
    day = str(data.get("snapshot_date") or "")
    return advisor_rates(data, f"AWS Spot Instance Advisor ({ADVISOR_URL}), snapshot {day}",
                         day)


def fetch_advisor(today: date, opener: Opener | None = None
                  ) -> dict[tuple[str, str], SpotRate]:
    """The Advisor's current data (public, no account); raises OSError/ValueError."""
    def _open(url: str) -> IO[bytes]:
        import urllib.request  # here, not at start-up: http.client and email are ~15 ms

        return urllib.request.urlopen(url, timeout=TIMEOUT_S)  # type: ignore[no-any-return]  # noqa: S310

    url = os.environ.get(ADVISOR_ENV, "").strip() or ADVISOR_URL
    with (opener or _open)(url) as answer:
        data = json.loads(answer.read().decode("utf-8"))
    day = today.isoformat()
    return advisor_rates(data, f"AWS Spot Instance Advisor ({ADVISOR_URL}), read {day}", day)


def aliyun_rates(advice: Iterable[dict[str, Any]], region: str, day: str
                 ) -> dict[tuple[str, str], SpotRate]:
    """(region, type) -> its worst zone's DescribeSpotAdvice rate (``advice``: the
    provider's ``spot_advice`` rows)."""
    rates: dict[tuple[str, str], SpotRate] = {}
    for row in advice:
        percent = row.get("interruption_rate")
        if not isinstance(percent, int | float) or not 0 <= percent < 100:
            continue
        desc = str(row.get("description") or "")
        band = parse_band(desc) if desc else None
        share = float(percent) / 100
        key = (region, str(row["instance_type"]))
        known = rates.get(key)
        if known is not None and known.share is not None and known.share >= share:
            continue
        rates[key] = SpotRate(
            "aliyun", region, key[1], share, band[0] if band else share,
            band[1] if band else share, desc or f"{percent}%",
            f"Alibaba Cloud ECS DescribeSpotAdvice ({row.get('zone', '')}, last 30 days), "
            f"read {day}", day, zone=str(row.get("zone") or ""))
    return rates


def rate_for(provider: str, region: str, instance_type: str,
             rates: dict[tuple[str, str, str], SpotRate]) -> SpotRate:
    """The known rate of one offer, or a row saying why there is none."""
    found = rates.get((provider, region, instance_type))
    if found is not None:
        return found
    if provider == "tencent":
        return SpotRate(provider, region, instance_type, None, None, None, NOT_PUBLISHED,
                        WHY_TENCENT, "", published=False)
    how = {"aws": WHY_AWS, "aliyun": WHY_ALIYUN}.get(provider, "no source")
    return SpotRate(provider, region, instance_type, None, None, None, NOT_KNOWN, how, "")


# --------------------------------------------------------------------------- cache


def save_rates(directory: Path, rates: Iterable[SpotRate]) -> None:
    """Keep every known rate (with its date) for the next run; older entries stay."""
    path = directory / CACHE_FILE
    kept = read_json_object(path)
    for r in rates:
        if r.known or r.placement_score is not None:
            kept[f"{r.provider} {r.instance_type} {r.region}"] = r.to_json()
    atomic_write_text(path, json.dumps(kept, indent=1, sort_keys=True))


def load_rates(directory: Path | None = None) -> dict[tuple[str, str, str], SpotRate]:
    """(provider, region, type) -> rate: the bundled Advisor rows under the cached ones."""
    if directory is None:
        from gpudesk.services.core.paths import cache_dir  # noqa: PLC0415

        directory = cache_dir()
    rates = {("aws", region, itype): r for (region, itype), r in bundled_advisor().items()}
    for entry in read_json_object(directory / CACHE_FILE).values():
        try:
            rate = SpotRate(**entry)
        except TypeError:
            continue
        if (rate.share is not None and math.isfinite(rate.share) and 0 <= rate.share < 1
                or rate.share is None and rate.placement_score is not None):
            rates[(rate.provider, rate.region, rate.instance_type)] = rate
    return rates


def placement(rate: SpotRate | None, provider: str, region: str, itype: str,
              scores: dict[str, int], day: str) -> SpotRate:
    """``rate`` (or a row with no rate) with the best zone's placement score added."""
    best = max(scores.values())
    zones = ", ".join(z for z, v in sorted(scores.items()) if v == best)
    source = f"AWS GetSpotPlacementScores (one machine; best zone {zones}), read {day}"
    base = rate or SpotRate(provider, region, itype, None, None, None, NOT_KNOWN, "", "")
    return replace(base, placement_score=best, placement_source=source)


def refresh_rates(regions: dict[str, list[str]], types: dict[str, set[str]],
                  aliyun: Any | None, today: date, *, opener: Opener | None = None,
                  cache: Path | None = None, aws: Any | None = None
                  ) -> tuple[list[SpotRate], dict[str, str]]:
    """Read the Advisor (public), with an AWS provider GetSpotPlacementScores, and with an
    Alibaba Cloud provider DescribeSpotAdvice for each of its regions; blocking.
    (rates read, source -> why it failed)."""
    found: list[SpotRate] = []
    errors: dict[str, str] = {}
    if regions.get("aws"):
        try:
            advisor = fetch_advisor(today, opener)
            found += [r for (region, itype), r in advisor.items()
                      if region in regions["aws"] and itype in types.get("aws", set())]
        except (OSError, ValueError) as exc:
            log.warning("spot advisor: %s", type(exc).__name__)
            errors["aws spot advisor"] = type(exc).__name__
    if aws is not None:
        by_key = {(r.region, r.instance_type): r for r in found}
        for region in regions.get("aws", []):
            try:
                for itype in sorted(types.get("aws", set())):
                    scores = aws.spot_placement_scores(region, itype)
                    if scores:
                        by_key[(region, itype)] = placement(
                            by_key.get((region, itype)), "aws", region, itype, scores,
                            today.isoformat())
            except Exception as exc:  # noqa: BLE001 - a score is a refinement
                log.warning("spot placement scores %s: %s", region, exc)
                errors[f"aws placement {region}"] = str(exc)
        found = list(by_key.values())
    if aliyun is not None:
        wanted = sorted(types.get("aliyun", set()))
        for region in regions.get("aliyun", []):
            try:
                rows: list[dict[str, Any]] = []
                for i in range(0, len(wanted), ALIYUN_BATCH):
                    rows += aliyun.spot_advice(region, wanted[i:i + ALIYUN_BATCH])
                found += aliyun_rates(rows, region, today.isoformat()).values()
            except Exception as exc:  # noqa: BLE001 - a rate is a refinement: keep the others
                log.warning("spot advice %s: %s", region, exc)
                errors[f"aliyun {region}"] = str(exc)
    if cache is not None and found:
        save_rates(cache, found)
    return found, errors


def rates_for_ranking(catalog: Any, *, refresh: bool, today: date | None = None,
                      cache: Path | None = None, opener: Opener | None = None,
                      providers: Any = None) -> tuple[dict[tuple[str, str, str], SpotRate],
                                                      dict[str, str]]:
    """The rates to rank with: cached ones (and the bundle), or, with ``refresh``, fresh
    ones first (the Advisor; DescribeSpotAdvice where Alibaba Cloud keys are in the
    keyring). (rates, source -> why it failed)."""
    from gpudesk.services.core.paths import cache_dir  # noqa: PLC0415

    directory = cache if cache is not None else cache_dir()
    errors: dict[str, str] = {}
    if refresh:
        from gpudesk.services.cloud.accounts import provider_from_keyring  # noqa: PLC0415
        from gpudesk.services.cloud.credentials import CredentialError  # noqa: PLC0415
        from gpudesk.services.cloud.credentials import load_credentials  # noqa: PLC0415

        made: dict[str, Any] = {}
        for name in ("aws", "aliyun"):
            try:
                if load_credentials(name) is not None:
                    made[name] = (providers or provider_from_keyring)(name)
            except (CredentialError, RuntimeError) as exc:
                errors[name] = str(exc)
        regions = {p: catalog.regions(p) for p in ("aws", "aliyun")}
        types = {p: {o.instance_type for o in catalog.offers if o.provider == p}
                 for p in ("aws", "aliyun")}
        _, more = refresh_rates(regions, types, made.get("aliyun"), today or date.today(),
                                opener=opener, cache=directory, aws=made.get("aws"))
        errors.update(more)
    return load_rates(directory), errors
