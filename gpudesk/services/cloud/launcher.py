"""Launch one machine: key → security group → instance → running → SSH reachable.

The ledger is written before the cloud call (an intent with its client token)
and after it (the cloud id), so a crash anywhere leaves something the
reconciler can match. Capacity, quota and price refusals move on to the next
zone or region; every refusal is kept, in words, for the progress view.

Cancelling is safe: a cloud call already on its way is awaited (it cannot be
recalled), and a machine that exists by then is terminated and recorded, so a
cancelled launch never leaves a billing machine unseen.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import os
import signal
import time
from collections.abc import Awaitable
from collections.abc import Callable
from dataclasses import dataclass
from dataclasses import field
from dataclasses import replace
from typing import Literal

from gpudesk.i18n_marks import QT_TRANSLATE_NOOP
from gpudesk.services.cloud import aws_price_list
from gpudesk.services.cloud import cleanup
from gpudesk.services.cloud import credentials
from gpudesk.services.cloud import guard as guards
from gpudesk.services.cloud import instance_role
from gpudesk.services.cloud import keep_alive_launch
from gpudesk.services.cloud import spot_sanity
from gpudesk.services.cloud.accounts import ProviderFactory
from gpudesk.services.cloud.accounts import provider_from_keyring
from gpudesk.services.cloud.accounts import title
from gpudesk.services.cloud.catalog import load_catalog
from gpudesk.services.cloud.providers.base import STATE_RUNNING
from gpudesk.services.cloud.providers.base import STATE_TERMINATED
from gpudesk.services.cloud.providers.base import CloudInstance
from gpudesk.services.cloud.providers.base import LaunchRequest
from gpudesk.services.cloud.providers.base import Market
from gpudesk.services.cloud.providers.base import PricePoint
from gpudesk.services.cloud.providers.base import Provider
from gpudesk.services.cloud.providers.base import ProviderError
from gpudesk.services.cloud.providers.base import ProviderName
from gpudesk.services.cloud.providers.base import ZoneChoice
from gpudesk.services.cloud.providers.base import login_user_of
from gpudesk.services.cloud.providers.base import validate_request
from gpudesk.services.cloud.public_ip import detect_public_address
from gpudesk.services.core.paths import cache_dir
from gpudesk.services.money.ledger import STATE_FAILED
from gpudesk.services.money.ledger import STATE_INTENT
from gpudesk.services.money.ledger import Ledger
from gpudesk.services.money.ledger import Machine
from gpudesk.services.money.ledger import new_ledger_id

log = logging.getLogger(__name__)

Step = Literal["key", "security-group", "instance", "running", "ssh"]
STEPS: tuple[Step, ...] = ("key", "security-group", "instance", "running", "ssh")
STEP_TITLES: dict[Step, str] = {
    "key": QT_TRANSLATE_NOOP("Launcher", "SSH key"),
    "security-group": QT_TRANSLATE_NOOP("Launcher", "Firewall (SSH from your address only)"),
    "instance": QT_TRANSLATE_NOOP("Launcher", "Request the machine"),
    "running": QT_TRANSLATE_NOOP("Launcher", "Wait until it runs"),
    "ssh": QT_TRANSLATE_NOOP("Launcher", "Wait until SSH answers"),
}
MSG_NOT_RUNNING = QT_TRANSLATE_NOOP(
    "ProviderError", "The machine {cloud_id} was created but is still {state} after {minutes} "
    "minutes. It is listed on the Instances page; terminate it there if you no longer want it.")
MSG_NO_SSH = QT_TRANSLATE_NOOP(
    "ProviderError", "The machine {cloud_id} runs (and bills) but SSH on {address} did not "
    "answer within {minutes} minutes. It is listed on the Instances page.")
MSG_NOT_LAUNCHED = QT_TRANSLATE_NOOP(
    "ProviderError", "No launched machine '{ref}' in the ledger to wait for.")
MSG_GONE = QT_TRANSLATE_NOOP(
    "ProviderError", "The spot machine {cloud_id} ended while starting in {where}; spot "
    "capacity may have been reclaimed. The cloud said: {reason}")
MSG_LAUNCH_FAILED = QT_TRANSLATE_NOOP(
    "ProviderError", "The machine {cloud_id} could not be started in {where}. The cloud said: "
    "{reason}")
MSG_NO_REASON = QT_TRANSLATE_NOOP("ProviderError", "(no reason given)")
MSG_VANISHED = QT_TRANSLATE_NOOP(
    "ProviderError", "it vanished while starting and the cloud no longer lists it")
# An accepted machine the cloud stops listing while it starts (ECS releases one it could not
# create for lack of inventory) has failed: at once where the cloud says why
# (``creation_failure``), else after this long unlisted (room for eventual consistency).
# Only on a cloud that releases such machines (``_Run._may_vanish``).
GONE_AFTER_S = 45.0
# A machine still starting after this long: ask the cloud whether it gave up on it.
ASK_WHY_AFTER_S = 20.0
MSG_NO_QUOTE = QT_TRANSLATE_NOOP(
    "ProviderError", "The cloud gave no price for {instance_type} in {region} ({detail}), so "
    "nothing was started: gpudesk does not start a machine whose spend it cannot count. Try "
    "again in a moment, or choose an offer that shows a price.")
# Clouds whose quote is asked at every launch: they bill in their own currency and
# enforce the budget themselves (CVM ActionTimer, ECS AutoReleaseTime) from budget ÷ it.
QUOTED_AT_LAUNCH = ("tencent", "aliyun")
# How old a cached AWS price list may be and still quote a launch.
PRICE_LIST_MAX_AGE_S = 7 * 24 * 3600.0
MSG_ZONE_REFUSED = QT_TRANSLATE_NOOP(
    "ProviderError", "{provider} does not sell {instance_type} in {zone} now: {reason}")

# Test hook: the fault test kills the process (SIGKILL) at the named point.
FAULT_ENV = "GPUDESK_FAULT_KILL_AT"
FAULT_POINTS = ("intent", "key", "security-group", "image", "instance-requested",
                "instance-recorded", "running", "ssh")


def _fault(point: str) -> None:
    if os.environ.get(FAULT_ENV) == point:
        os.kill(os.getpid(), signal.SIGKILL)


@dataclass(frozen=True)
class LaunchPlan:
    """What the user chose (from an offer in the Plan page, or the CLI flags)."""

    provider: ProviderName
    instance_type: str
    region: str
    zone: str = ""
    market: Market = "on-demand"
    max_price: float | None = None
    image_id: str = ""
    disk_gb: int = 100
    allow_from: str = ""  # empty: detect the user's public address
    fallback_regions: tuple[str, ...] = ()
    gpu: str = ""
    gpus: int = 0
    # USD/hour, the catalog's (or the live). 0: ask the cloud. Tencent and Alibaba Cloud are
    # always asked at launch, and their quote replaces it (QUOTED_AT_LAUNCH).
    price_per_hour: float = 0.0
    ssh_user: str = ""  # "": the image's login user (the provider's login_user)
    wait_ssh: bool = True
    budget: float | None = None  # USD like price_per_hour (the ledger's currency); None: none
    # with no budget given: this many hours of the launch's price (after the cloud's quote)
    # become the budget (Preferences' default, issue 29); 0 with no budget: none, on purpose
    budget_hours: float = 0.0
    on_budget: str = "stop"  # "stop" or "terminate"
    cny_per_usd: float = 7.2  # to hand CNY-billing clouds their own currency
    # a role that may only stop/terminate the machine itself (services.cloud.instance_role),
    # named in RunInstances so the first-boot guard can stop the bill from the first second
    instance_role: bool = True
    # the user accepted, on purpose, that with no role only the open app stops a Tencent or
    # Alibaba Cloud "stop" budget (--app-stop-only): else such a launch is refused (issue 29)
    app_stop_only: bool = False
    # where its runs keep their data (issue 22): "" or "auto" (the account's gpudesk bucket
    # in the machine's region), "none", or a store URI. The front ends check a URI
    # (storage.uri.parse_uri) before the launch; the cloud room only carries it.
    store: str = ""
    # a spot machine its cloud keeps alive (issue 23): the cloud's own group of size 1
    # replaces a reclaimed machine, and ends itself when the budget runs out
    keep_alive: bool = False
    # the role group members carry (storage.run_role); "": none (no bucket with gpudesk away)
    group_role: str = ""


@dataclass(frozen=True)
class Progress:
    step: Step
    status: Literal["started", "done", "failed", "retry"]
    message: str = ""  # English template already formatted; UI shows `error` translated
    error: ProviderError | None = None
    ledger_id: str = ""
    # the cloud's quote, said before the machine is requested (issue 31): with it, the
    # estimate the launch was pressed at (USD/hour, 0: none); step and status mean nothing
    quote: guards.Quote | None = None
    estimate: float = 0.0


# Said before the call when the cloud's quote is not the estimate on the Launch button.
MSG_QUOTE_DIFFERS = QT_TRANSLATE_NOOP(
    "Launcher", "{cloud} quotes {quote} per hour ({price} {currency}, {source}), not the "
    "estimated {estimate}: the machine bills at the quote, and its spend and budget count "
    "from it.")
MSG_QUOTE_NEW = QT_TRANSLATE_NOOP(
    "Launcher", "{cloud} quotes {quote} per hour ({price} {currency}, {source}): the machine "
    "bills at the quote, and its spend and budget count from it.")


def quote_differs(quote: guards.Quote, estimate: float) -> bool:
    """Is the cloud's quote not the estimate the launch was pressed at (half a percent)?"""
    return estimate <= 0 or abs(quote.usd - estimate) > 0.005 * estimate


def quote_progress(ledger_id: str, provider: str, quote: guards.Quote,
                   estimate: float) -> Progress:
    """The quote as a progress report, with the CLI's English words where it differs."""
    values = {"cloud": title(provider), "quote": f"${quote.usd:,.3f}",
              "price": f"{quote.price:g}", "currency": quote.currency, "source": quote.source,
              "estimate": f"${estimate:,.3f}"}
    message = "" if not quote_differs(quote, estimate) else (
        MSG_QUOTE_NEW if estimate <= 0 else MSG_QUOTE_DIFFERS).format(**values)
    return Progress("instance", "started", message, None, ledger_id, quote, estimate)


@dataclass(frozen=True)
class Refusal:
    region: str
    zone: str
    error: ProviderError


@dataclass
class LaunchResult:
    machine: Machine
    refusals: list[Refusal] = field(default_factory=list)
    # why the machine got no role to stop itself (``instance_role.why_not``), so the Launch
    # dialog can say what stays unprotected; None: it has one, or nothing is known
    role_why: str | None = None


class LaunchRefused(ProviderError):
    """Every candidate refused; ``refusals`` says where and why."""

    def __init__(self, refusals: list[Refusal]) -> None:
        last = refusals[-1].error
        values = {k: v for k, v in last.values.items() if k != "detail"}
        super().__init__(last.kind, last.template, last.detail, **values)
        self.refusals = refusals


def key_pair_name(public_key: str) -> str:
    """Stable per key, so each region holds one pair per gpudesk key."""
    return "gpudesk-" + hashlib.sha256(public_key.encode()).hexdigest()[:10]


async def probe_ssh(address: str, port: int = 22, timeout: float = 5.0) -> bool:
    """True when an SSH server answers with its banner (no login attempted)."""
    try:
        reader, writer = await asyncio.wait_for(asyncio.open_connection(address, port), timeout)
    except (TimeoutError, OSError):
        return False
    try:
        banner = await asyncio.wait_for(reader.readline(), timeout)
        return banner.startswith(b"SSH-")
    except (TimeoutError, OSError):
        return False
    finally:
        writer.close()


class Launcher:
    def __init__(self, ledger: Ledger, providers: ProviderFactory = provider_from_keyring, *,
                 ssh_probe: Callable[[str], Awaitable[bool]] | None = None,
                 poll_s: float = 3.0, running_timeout_s: float = 900.0,
                 ssh_timeout_s: float = 600.0,
                 first_boot: Callable[[Machine], tuple[str, str]] | None = None,
                 keep_alive: keep_alive_launch.KeepAliveHooks | None = None,
                 clock: Callable[[], float] = time.monotonic,
                 sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
                 store_check: Callable[[str, str], None] | None = None) -> None:
        self.ledger = ledger
        # (store URI, region) -> None or StorageError: the bucket answers before anything
        # bills (services.storage.store_check.check_launch_store; the cloud room may not
        # import storage, so the front ends hand it in)
        self.store_check = store_check
        # waiting for "running" reads this clock and sleeps this way (a test's own clock)
        self.clock = clock
        self.sleep = sleep
        # a keep-alive group's role (services.runs.keep_alive_run): None gives its machines
        # no role, so nothing of the run reaches the bucket with gpudesk away
        self.keep_alive = keep_alive
        # (user data, host key fingerprint) for a machine about to launch: the guard and the
        # pinned host key from its first second (services.remote.first_boot.for_launch)
        self.first_boot = first_boot
        self.providers = providers
        self.ssh_probe = ssh_probe or probe_ssh
        self.poll_s = poll_s
        self.running_timeout_s = running_timeout_s
        self.ssh_timeout_s = ssh_timeout_s

    async def launch(self, plan: LaunchPlan,
                     on_progress: Callable[[Progress], None] = lambda p: None) -> LaunchResult:
        provider = await asyncio.to_thread(self.providers, plan.provider)
        known = {o.instance_type for o in load_catalog().filter(provider=plan.provider)}
        regions = await asyncio.to_thread(provider.regions)
        probe = LaunchRequest("check", plan.region, plan.instance_type, plan.market, plan.zone,
                              plan.max_price, plan.image_id, plan.disk_gb, plan.allow_from)
        validate_request(plan.provider, probe, regions, known)  # before anything costs a call
        if _store_named(plan.store):  # a bucket that is not there: refused before anything bills
            if self.store_check is None:  # fail closed: never launch with an unchecked bucket
                raise RuntimeError("this launcher was built without a store check")
            await asyncio.to_thread(self.store_check, plan.store, plan.region)
        if plan.keep_alive:  # a group the cloud could not cap is refused before it is written
            # hours of the price still to be quoted are a budget too (budget_hours)
            keep_alive_launch.check(plan.provider, plan.market,
                                    plan.budget or plan.budget_hours or None, provider)
        for region in plan.fallback_regions:
            if region not in regions:
                validate_request(plan.provider, LaunchRequest("check", region, plan.instance_type),
                                 regions, known)
        allow_from = plan.allow_from or await asyncio.to_thread(detect_public_address)
        # The cloud's own price, before anything is written or made: no answer, no launch.
        quoted: guards.Quote | None = None
        estimate = plan.price_per_hour  # what the Launch button said, before the quote
        if not plan.price_per_hour or plan.provider in QUOTED_AT_LAUNCH \
                or _handed_spot_doubted(plan):
            quoted = await asyncio.to_thread(_first_quote, provider, plan)
            plan = replace(plan, price_per_hour=quoted.usd)
        plan = _with_default_budget(plan)

        ledger_id = new_ledger_id()
        machine = self.ledger.add(Machine(
            id=ledger_id, provider=plan.provider, region=plan.region, zone=plan.zone,
            instance_type=plan.instance_type, gpu=plan.gpu, gpus=plan.gpus, market=plan.market,
            max_price=plan.max_price, price_per_hour=plan.price_per_hour, currency="USD",
            client_token=f"{ledger_id}-1", ssh_user=plan.ssh_user, name=ledger_id,
            disk_gb=plan.disk_gb, state=STATE_INTENT, budget=plan.budget,
            on_budget=plan.on_budget if plan.budget else "", store=plan.store.strip()))
        if quoted is not None:
            guards.record_quote(self.ledger, ledger_id, quoted)
            # said before anything is requested, where it is not the estimate (issue 31)
            on_progress(quote_progress(ledger_id, plan.provider, quoted, estimate))
        _fault("intent")
        run = _Run(self, plan, provider, machine, allow_from, on_progress, quoted)
        try:
            return await run.go()
        except asyncio.CancelledError:
            await asyncio.shield(run.undo())
            raise

    async def wait_ready(self, ledger_id: str,
                         on_progress: Callable[[Progress], None] = lambda p: None
                         ) -> LaunchResult:
        """Wait longer for a machine that was launched but is not ready yet (still starting,
        or SSH not answering when ``launch`` gave up): until it runs, then until SSH
        answers, each for the launcher's time-out again. Nothing is terminated here: the
        machine stays on the books whatever happens."""
        m = self.ledger.get(ledger_id)
        if m is None or not m.cloud_id:
            raise ProviderError("not-found", MSG_NOT_LAUNCHED, ref=ledger_id)
        provider = await asyncio.to_thread(self.providers, m.provider)  # type: ignore[arg-type]
        plan = LaunchPlan(provider=m.provider, instance_type=m.instance_type,  # type: ignore[arg-type]
                          region=m.region, ssh_user=m.ssh_user)
        run = _Run(self, plan, provider, m, "", on_progress)
        await run._wait_running()
        await run._wait_ssh()
        await run._first_login()
        return LaunchResult(run.machine,
                            role_why=instance_role.why_not(self.ledger, run.machine))


def quote(provider: Provider, plan: LaunchPlan) -> float:
    """The USD/hour the cloud itself quotes for ``plan`` (:func:`cloud_quote`)."""
    return cloud_quote(provider, plan).usd


def cloud_quote(provider: Provider, plan: LaunchPlan, region: str = "",
                zone: str = "", *, download: bool = True) -> guards.Quote:
    """What the cloud itself asks per hour for ``plan`` in ``region``/``zone`` (default: the
    plan's), in its own currency: Tencent Cloud's InquiryPriceRunInstances, Alibaba Cloud's
    DescribePrice (spot: DescribeSpotPriceHistory), the AWS price list (spot:
    DescribeSpotPriceHistory). Blocking; makes nothing.

    No usable answer refuses the launch (``ProviderError`` of kind "price", in words): a
    machine whose spend cannot be counted would bill past every budget unseen.
    ``download``: False keeps to the AWS price list already here (cached or bundled), for
    callers in the background (reconcile) that must not fetch a region's whole file."""
    region, zone = region or plan.region, zone or plan.zone
    why = ""
    try:
        found = _ask_price(provider, plan, region, zone, download)
    except ProviderError as error:
        if error.kind in ("auth", "clock"):
            raise
        found, why = None, error.detail or error.message() or error.kind
    except (OSError, ValueError) as error:  # the AWS price list did not answer
        found, why = None, f"AWS price list: {type(error).__name__}"
    if found is not None and found.price > 0 and found.usd > 0:
        return found
    log.warning("no price quote for %s in %s: %s", plan.instance_type, region, why)
    raise ProviderError("price", MSG_NO_QUOTE, detail=why or "no price in the answer",
                        instance_type=plan.instance_type, region=region)


def _first_quote(provider: Provider, plan: LaunchPlan) -> guards.Quote:
    """The quote of the plan's region, else of the first fallback region that answers (the
    launch may go there; a launch that lands elsewhere is quoted again where it lands)."""
    first: ProviderError | None = None
    for region in (plan.region, *(r for r in plan.fallback_regions if r != plan.region)):
        try:
            return cloud_quote(provider, plan, region, plan.zone if region == plan.region
                               else "")
        except ProviderError as error:
            if error.kind != "price":
                raise
            first = first or error
    assert first is not None
    raise first


def _first_zone(provider: Provider, region: str, plan: LaunchPlan) -> str:
    choose = getattr(provider, "zone_choices", None)
    if choose is None:
        return ""
    choices: list[ZoneChoice] = choose(region, plan.instance_type, plan.market)
    # a zone sold out now still has its price: the first that sells, else the first listed
    return next((c.zone for c in choices if c.sells), choices[0].zone if choices else "")


def _latest_spot(provider: Provider, region: str, zone: str, plan: LaunchPlan
                 ) -> PricePoint | None:
    zone = zone or _first_zone(provider, region, plan)
    if not zone:
        return None
    points = provider.spot_price_history(region, zone, plan.instance_type,
                                         time.time() - 6 * 3600)
    return points[-1] if points else None


def _store_named(store: str) -> bool:
    """Whether a plan names a bucket ("auto" and "none" name none)."""
    return store.strip().lower() not in ("", "auto", "none", "off", "no")


def _with_default_budget(plan: LaunchPlan) -> LaunchPlan:
    """The plan with its budget: the one given, else ``budget_hours`` of the price the
    launch counts by (the cloud's quote where one was asked). Never a default launch
    without a budget: no price to count it from is no launch."""
    if plan.budget is not None or plan.budget_hours <= 0:
        return plan
    if plan.price_per_hour <= 0:
        raise ProviderError("price", MSG_NO_QUOTE, instance_type=plan.instance_type,
                            region=plan.region, detail=f"0 per hour, so no budget of "
                            f"{plan.budget_hours:g} hours can be counted")
    return replace(plan, budget=plan.budget_hours * plan.price_per_hour)


def _handed_spot_doubted(plan: LaunchPlan) -> bool:
    """A spot price handed to the launch (the catalog's, a refresh cached before prices were
    judged) that :mod:`spot_sanity` would refuse against the bundled on-demand price: the
    cloud is asked instead, so the launch counts what the machine can bill."""
    if plan.market != "spot" or plan.price_per_hour <= 0:
        return False
    now = time.time()
    for offer in load_catalog().filter(provider=plan.provider, region=plan.region):
        if offer.instance_type == plan.instance_type and offer.ondemand_price:
            return bool(spot_sanity.doubt(plan.provider, plan.price_per_hour, now,
                                          offer.ondemand_price, now))
    return False


def _spot_quote(provider: Provider, plan: LaunchPlan, region: str, zone: str,
                made: Callable[[float, str, str], guards.Quote],
                download: bool = True) -> guards.Quote | None:
    """The spot price in force (DescribeSpotPriceHistory), judged by :mod:`spot_sanity`
    against the on-demand price. One it refuses is replaced by the most the machine can
    bill (the maximum price, else on-demand), and the quote's source says why; with no
    on-demand price to fall back on, the launch is refused with those words."""
    point = _latest_spot(provider, region, zone, plan)
    if point is None:
        return None
    try:
        on_demand = _on_demand_quote(provider, plan, region, made, download)
    except (ProviderError, OSError, ValueError) as error:  # judged by its date alone
        log.warning("no on-demand price to judge the spot price by: %s", error)
        on_demand = None
    same = on_demand is not None and on_demand.currency == point.currency
    why = spot_sanity.doubt(plan.provider, point.price, point.at,
                            on_demand.price if same and on_demand else None, time.time(),
                            point.currency)
    if not why:
        return made(point.price, point.currency, "DescribeSpotPriceHistory")
    log.warning("spot price of %s in %s refused: %s", plan.instance_type, region, why)
    if on_demand is None:
        raise ProviderError("price", MSG_NO_QUOTE, detail=f"DescribeSpotPriceHistory's {why}",
                            instance_type=plan.instance_type, region=region)
    price = spot_sanity.most_it_bills(on_demand.price, plan.max_price)
    counted = "your maximum price" if price != on_demand.price else on_demand.source
    return made(price, on_demand.currency,
                f"{counted}, the most a spot machine bills, since DescribeSpotPriceHistory's "
                f"{why}")


def _on_demand_quote(provider: Provider, plan: LaunchPlan, region: str,
                     made: Callable[[float, str, str], guards.Quote],
                     download: bool = True) -> guards.Quote | None:
    if plan.provider == "aws":
        return _aws_list_price(plan, region, made, download)
    ask = getattr(provider, "on_demand_price", None)
    quoted = ask(region, plan.instance_type) if ask is not None else None
    return None if quoted is None else made(quoted[0], quoted[1], "DescribePrice")


def _aws_list_price(plan: LaunchPlan, region: str,
                    made: Callable[[float, str, str], guards.Quote],
                    download: bool = True) -> guards.Quote | None:
    """EC2 quotes no on-demand price itself; AWS publishes it in the price list. In order:
    the region's file read lately (cached), the bundled catalog's row (read from that file,
    with its date), else the region's file fetched now."""
    prices = aws_price_list.load(cache_dir(), region)
    fetched = aws_price_list.cache_file(cache_dir(), region)
    if prices is not None and plan.instance_type in prices.ondemand and fetched.is_file() \
            and time.time() - fetched.stat().st_mtime < PRICE_LIST_MAX_AGE_S:
        return made(prices.ondemand[plan.instance_type], "USD",
                    f"AWS Price List published {prices.published}")
    for offer in load_catalog().filter(provider="aws", region=region):
        if offer.instance_type == plan.instance_type and offer.ondemand_price:
            return made(offer.ondemand_price, "USD",
                        f"AWS Price List published {offer.price_date.isoformat()} (bundled)")
    if not download:
        return None
    prices = aws_price_list.fetch_region(region, {plan.instance_type})
    aws_price_list.save(cache_dir(), prices)
    price = prices.ondemand.get(plan.instance_type)
    return None if price is None else made(price, "USD",
                                           f"AWS Price List published {prices.published}")


def _ask_price(provider: Provider, plan: LaunchPlan, region: str, zone: str,
               download: bool = True) -> guards.Quote | None:
    def made(price: float, currency: str, source: str) -> guards.Quote:
        return guards.Quote(float(price), currency, source, plan.cny_per_usd, region, zone)

    inquiry = getattr(provider, "inquiry_price", None)
    if plan.provider == "tencent" and inquiry is not None:
        zone = zone or _first_zone(provider, region, plan)  # CVM prices per zone
        request = LaunchRequest("quote", region, plan.instance_type, plan.market, zone,
                                plan.max_price, plan.image_id, plan.disk_gb)
        return made(inquiry(request), "CNY", "InquiryPriceRunInstances")
    if plan.market == "spot" and plan.provider in ("aws", "aliyun"):
        spot = _spot_quote(provider, plan, region, zone, made, download)
        if spot is not None:
            return spot
        if plan.provider == "aws":
            return None  # EC2 quoted no spot price: nothing to count a spot machine by
    return _on_demand_quote(provider, plan, region, made, download)


class _Run:
    """The state of one launch, so cancellation knows what to undo."""

    def __init__(self, launcher: Launcher, plan: LaunchPlan, provider: Provider,
                 machine: Machine, allow_from: str, on_progress: Callable[[Progress], None],
                 quoted: guards.Quote | None = None):
        self.l = launcher
        self.quoted = quoted  # the cloud's price at launch (its currency), in the ledger
        self.plan = plan
        self.provider = provider
        self.machine = machine
        self.allow_from = allow_from
        self.report = on_progress
        self.inflight: asyncio.Future[CloudInstance] | None = None
        self.refusals: list[Refusal] = []

    def _progress(self, step: Step, status: Literal["started", "done", "failed", "retry"],
                  error: ProviderError | None = None) -> None:
        log.info("launch %s %s: %s%s", self.machine.id, step, status,
                 f" ({error.kind}: {error.message()} {error.detail})" if error else "")
        self.report(Progress(step, status, error.message() if error else "", error,
                             self.machine.id))

    async def go(self) -> LaunchResult:
        ledger = self.l.ledger
        kind = credentials.key_kind_for(self.plan.provider)
        key = await asyncio.to_thread(credentials.ensure_ssh_key,
                                      credentials.KEY_KINDS[kind], kind)
        await self._login_user()
        role = await self._role_first()
        user_data = await self._first_boot()
        candidates = await self._candidates()
        if not candidates and not self.refusals:
            candidates = [(self.plan.region, "")]
        if not candidates:  # no zone of any region sells the type: say so, zone by zone
            error = LaunchRefused(self.refusals)
            self.machine = ledger.update(self.machine.id, state=STATE_FAILED,
                                         error=error.message(), step="failed",
                                         detail="; ".join(r.error.message()
                                                          for r in self.refusals))
            self._progress("instance", "failed", error)
            raise error
        instance: CloudInstance | None = None
        step: Step = "key"
        for attempt, (region, zone) in enumerate(candidates, start=1):
            try:
                step = "key"
                self._progress(step, "started")
                key_name = await asyncio.to_thread(self.provider.ensure_key_pair, region,
                                                   key_pair_name(key.public_openssh),
                                                   key.public_openssh)
                self._progress(step, "done")
                _fault("key")
                step = "security-group"
                self._progress(step, "started")
                group = await self._security_group(region)
                self._progress(step, "done")
                _fault("security-group")
                step = "instance"
                self._progress(step, "started")
                image = self.plan.image_id or await asyncio.to_thread(
                    self.provider.find_image, region, self.plan.instance_type)
                _fault("image")
                token = f"{self.machine.id}-{attempt}"
                await self._requote(region, zone)
                self.machine = ledger.update(
                    self.machine.id, region=region, zone=zone, client_token=token,
                    key_name=key_name, security_group=group, state=STATE_INTENT, cloud_id="",
                    public_ip="",
                    step="request", detail=f"{region} {zone or '(any zone)'} token {token}")
                request = self._with_guard(LaunchRequest(
                    self.machine.id, region, self.plan.instance_type, self.plan.market, zone,
                    self.plan.max_price, image, self.plan.disk_gb, self.allow_from, key_name,
                    group, token, user_data=user_data, instance_role=role))
                if self.plan.keep_alive:
                    instance = await self._group_member(request)
                else:
                    instance = await self._run_instance(request)
                _fault("instance-requested")
                self._record(instance, "instance")
                self.inflight = None
                _fault("instance-recorded")
                self._progress(step, "done")
                step = "running"
                await self._wait_running()  # a launch can fail after it was accepted
                break
            except ProviderError as error:
                self.inflight = None
                # A machine that exists and has not ended stays on the books, whatever failed.
                exists = bool(self.machine.cloud_id) and self.machine.state != STATE_TERMINATED
                self.refusals.append(Refusal(region, zone, error))
                if error.failover and attempt < len(candidates) and not exists:
                    ledger.log(self.machine.id, "refused", f"{region} {zone}: {error.message()}")
                    self._progress(step, "retry", error)
                    continue
                if exists:
                    ledger.log(self.machine.id, "failed", error.message())
                else:
                    self.machine = ledger.update(self.machine.id, state=STATE_FAILED,
                                                 error=error.message(), step="failed",
                                                 detail=error.detail)
                self._progress(step, "failed", error)
                if len(self.refusals) > 1:
                    raise LaunchRefused(self.refusals) from None
                raise
        assert instance is not None
        self.machine = await asyncio.to_thread(self._timer_as_held)
        _fault("running")
        if not self.machine.group_id:  # group members carry the group's role (template)
            self.machine = await asyncio.to_thread(instance_role.at_launch, ledger,
                                                   self.machine, self.provider,
                                                   self.plan.instance_role)
        if self.plan.wait_ssh:
            await self._wait_ssh()
            _fault("ssh")
            await self._first_login()
        return LaunchResult(self.machine, self.refusals,
                            instance_role.why_not(ledger, self.machine))

    async def _run_instance(self, request: LaunchRequest) -> CloudInstance:
        """RunInstances; a role the cloud has not spread yet (IAM/CAM/RAM are eventually
        consistent: a first launch makes the role a moment before) is left out, and bound
        once the machine runs (``instance_role.at_launch``), with the same token."""
        try:
            self.inflight = asyncio.ensure_future(
                asyncio.to_thread(self.provider.run_instance, request))
            return await asyncio.shield(self.inflight)
        except ProviderError as error:
            if not request.instance_role:
                raise
            if instance_role.not_ready(error):
                self.l.ledger.log(self.machine.id, instance_role.STEP_NOT_READY,
                                  "the cloud has not spread the role yet: bound once it runs")
                request = replace(request, instance_role="")
            elif error.kind == "permission":
                # the account may make the role but not pass it (ram:PassRole, cam:PassRole,
                # iam:PassRole): no role, so the first-boot rules must not name its command
                why = instance_role.words(error)
                self.machine = instance_role.drop_enforcer(self.l.ledger, self.machine, why)
                await self._role_needed(why)
                request = replace(request, instance_role="", user_data=await self._first_boot())
            else:
                raise
        self.inflight = asyncio.ensure_future(
            asyncio.to_thread(self.provider.run_instance, request))
        return await asyncio.shield(self.inflight)

    async def _role_first(self) -> str:
        """The machine's role, found or made before anything is created (its name for
        RunInstances; "" for none). With no role, a "stop" budget that only a role can make
        on this cloud is refused before anything bills, unless the user accepted that only
        the open app stops it (``LaunchPlan.app_stop_only``)."""
        p = self.plan
        if p.keep_alive or p.provider not in instance_role.CLOUDS:
            return ""  # group members carry the group's own role (its template)
        ledger = self.l.ledger
        got = await asyncio.to_thread(instance_role.before_launch, ledger, self.machine.id,
                                      self.provider, allowed=p.instance_role)
        self.machine = ledger.get(self.machine.id) or self.machine
        if got.attached:
            return got.role
        await self._role_needed(instance_role.WHY_OFF if got.why == "off" else got.why)
        return ""

    async def _role_needed(self, why: str) -> None:
        """Refuse, before anything bills, a "stop" budget only a role could make here
        (``instance_role.stop_needs_role``), unless the user accepted the open app alone."""
        p = self.plan
        action = "terminate" if guards.spot_cannot_stop(p.provider, p.market) else p.on_budget
        if p.app_stop_only or not instance_role.stop_needs_role(p.provider, action, p.budget):
            return
        error = ProviderError("permission", instance_role.MSG_STOP_NEEDS_ROLE, why,
                              provider=title(p.provider), why=why)
        self.machine = self.l.ledger.update(self.machine.id, state=STATE_FAILED,
                                            error=error.message(), step="failed",
                                            detail="no role for a stop budget")
        self._progress("instance", "failed", error)
        raise error

    async def _group_member(self, request: LaunchRequest) -> CloudInstance:
        """A keep-alive group instead of one machine: its end (budget ÷ price) read back,
        then its first member as the cloud starts it. No member in time: the group ends."""
        groups = keep_alive_launch.groups_of(self.provider, self.plan.provider)
        q, p = self.quoted, self.plan  # the disk in the currency of request.price_per_hour
        disk = guards.disk_per_hour(
            p.provider, request.region, request.disk_gb,
            q.currency if q is not None else "CNY" if p.provider in ("tencent", "aliyun")
            else "USD", q.cny_per_usd if q is not None else p.cny_per_usd)
        request = keep_alive_launch.with_end(request, time.time(), disk)
        hooks = self.l.keep_alive
        role = self.plan.group_role
        if hooks is not None and not role:
            role = await asyncio.to_thread(hooks.role_for, self.machine, self.provider)
        self.machine, state = await asyncio.to_thread(
            keep_alive_launch.start, self.l.ledger, self.machine, groups, request,
            role_name=role)
        if hooks is not None:
            await asyncio.to_thread(hooks.made, self.machine, self.provider)
            # the launch's host key is every member's until a run arms the group
            await asyncio.to_thread(hooks.launch_key, self.machine)
        _fault("group-created")
        deadline = time.monotonic() + self.l.running_timeout_s
        while True:
            member = keep_alive_launch.current_member(state)
            if member:
                found = await asyncio.to_thread(self.provider.describe, request.region,
                                                [member])
                if found:
                    return found[0]
            if time.monotonic() > deadline:
                await asyncio.to_thread(keep_alive_launch.end, self.l.ledger, self.machine,
                                        groups)
                raise ProviderError("capacity", keep_alive_launch.MSG_NO_MEMBER,
                                    group=state.group_id,
                                    minutes=round(self.l.running_timeout_s / 60),
                                    reason=state.status or "-")
            await asyncio.sleep(self.l.poll_s)
            again = await asyncio.to_thread(groups.describe_group, request.region,
                                            state.group_id)
            if again is None:
                raise ProviderError("other", keep_alive_launch.MSG_NO_MEMBER,
                                    group=state.group_id,
                                    minutes=round(self.l.running_timeout_s / 60),
                                    reason="the group is gone")
            state = again

    def _timer_as_held(self) -> Machine:
        """Blocking: the cloud-side timer the launch asked for, as the cloud now holds it
        (``guard.read_timer``: CVM DescribeInstancesActionTimer, ECS AutoReleaseTime), the
        same read-back a budget change and a stop or start make. The ledger and ``show``
        then say when the cloud acts, not when gpudesk asked it to (ECS keeps whole minutes
        and a floor; a timer the cloud did not keep is not claimed). No answer keeps what
        was asked, logged as unread."""
        m = self.machine
        if m.group_id:  # the group's own end, read back when it was made
            return m
        if m.cloud_timer_at is None and "cloud-timer" not in m.enforced_by.split(","):
            return m
        answered, held = guards.read_timer(self.provider, m.region, m.cloud_id)
        if not answered:
            if isinstance(self.provider, guards.TimerReader):
                self.l.ledger.log(m.id, "guard-unread", "the cloud did not say its timer")
            return m
        return self.l.ledger.update(m.id, cloud_timer_at=held,
                                    enforced_by=guards.with_timer(m.enforced_by, held),
                                    step="guard-read", detail=guards.iso_utc(held) or "none")

    async def _login_user(self) -> None:
        """Who logs in: the plan's user, else the image's (root on Alibaba Cloud's and most
        Tencent images, ubuntu on Ubuntu ones), in the ledger before the first-boot script
        that installs the guard for that user is made."""
        user = self.plan.ssh_user
        if not user:
            try:
                user = await asyncio.to_thread(login_user_of, self.provider, self.plan.region,
                                               self.plan.image_id)
            except ProviderError as error:
                if error.kind in ("auth", "clock"):
                    raise
                log.info("login user of %s unknown (%s)", self.plan.image_id, error)
                # the image this launch picks itself (find_image) is the provider's default
                user = await asyncio.to_thread(login_user_of, self.provider, self.plan.region,
                                               "")
        user = user or "ubuntu"
        if user != self.machine.ssh_user:
            self.machine = self.l.ledger.update(self.machine.id, ssh_user=user,
                                                step="login-user", detail=user)

    async def _first_login(self) -> None:
        """The first login once SSH answers (``first_boot.FirstBoot.first_login``): whether
        the guard installed, and a host key of the machine's own. A failure is recorded;
        the machine stays launched."""
        hook = getattr(self.l.first_boot, "first_login", None)
        if hook is None:
            return
        try:
            await asyncio.to_thread(hook, self.machine)
        except Exception as exc:
            log.warning("first login to %s failed: %s", self.machine.id, type(exc).__name__)
            self.l.ledger.log(self.machine.id, "first-login-failed",
                              f"{type(exc).__name__}: {exc}"[:300])
        self.machine = self.l.ledger.get(self.machine.id) or self.machine

    async def _first_boot(self) -> str:
        """The machine's user data, its host key pinned and recorded before any cloud call."""
        if self.l.first_boot is None:
            return ""
        try:
            user_data, fingerprint = await asyncio.to_thread(self.l.first_boot, self.machine)
        except Exception as exc:
            self.machine = self.l.ledger.update(self.machine.id, state=STATE_FAILED,
                                                error=type(exc).__name__, step="failed",
                                                detail="first-boot script")
            raise
        self.machine = self.l.ledger.update(self.machine.id, host_key_fingerprint=fingerprint,
                                            step="host-key", detail=fingerprint)
        return user_data

    async def _requote(self, region: str, zone: str) -> None:
        """A Tencent price is per zone: where the launch goes elsewhere than the quote was
        asked for, ask again there. No answer there keeps the region's first quote."""
        q = self.quoted
        if q is None or self.plan.provider != "tencent" or (
                region == q.region and (not zone or zone == q.zone)):
            return
        try:
            again = await asyncio.to_thread(cloud_quote, self.provider, self.plan, region, zone)
        except ProviderError as error:
            if error.kind in ("auth", "clock"):
                raise
            return
        self.quoted = again
        self.report(quote_progress(self.machine.id, self.plan.provider, again,
                                   self.plan.price_per_hour))
        self.plan = replace(self.plan, price_per_hour=again.usd)
        self.machine = self.l.ledger.update(self.machine.id, price_per_hour=again.usd,
                                            step=guards.QUOTE_STEP, detail=again.detail())

    def _with_guard(self, request: LaunchRequest) -> LaunchRequest:
        """The budget in the cloud's own terms, written to the ledger before the call: with
        the cloud's quote, its cap is budget ÷ that quote, in the cloud's currency."""
        p, q = self.plan, self.quoted
        rate = p.cny_per_usd if p.provider in ("tencent", "aliyun") else 1.0
        g = guards.plan(p.provider, p.budget, p.on_budget, p.price_per_hour, 0.0, time.time(),
                        agent=bool(request.user_data), quote=q, currency="USD",
                        disk_gb=p.disk_gb, region=request.region or p.region,
                        cny_per_usd=p.cny_per_usd, market=p.market,
                        # the role made before the launch (_role_first) is an enforcer too
                        role=instance_role.ENFORCER in self.machine.enforced_by.split(","))
        self.machine = self.l.ledger.update(
            self.machine.id, budget=g.budget, on_budget=g.action if g.budget else "",
            enforced_by=",".join(g.enforced_by), cloud_timer_at=g.cloud_timer_at,
            step="guard", detail=",".join(g.enforced_by) or "none")
        if q is not None:
            return replace(request, budget=None if g.budget is None else
                           q.convert(g.budget, "USD"), on_budget=g.action,
                           price_per_hour=q.price, cloud_timer_at=g.cloud_timer_at)
        return replace(request, budget=None if g.budget is None else g.budget * rate,
                       on_budget=g.action, price_per_hour=p.price_per_hour * rate,
                       cloud_timer_at=g.cloud_timer_at)

    async def _security_group(self, region: str) -> str:
        """The machine's own group where the provider makes one (so nothing is shared and
        cleanup can remove it with the machine); else the provider's group per address."""
        per_machine = getattr(self.provider, "ensure_machine_group", None)
        if per_machine is None:
            return await asyncio.to_thread(self.provider.ensure_security_group, region,
                                           self.allow_from)
        cleanup.mark_pending(self.l.ledger, self.machine.id, region)  # until proven gone
        return str(await asyncio.to_thread(per_machine, region, self.machine.id,
                                           self.allow_from))

    async def _candidates(self) -> list[tuple[str, str]]:
        """(region, zone) to try in order: the cloud's own list of zones that sell the type.

        A zone that does not is a refusal in the cloud's words, reported now; a provider
        that cannot list zones (or a failed lookup) leaves the zone to the provider.
        """
        out: list[tuple[str, str]] = []
        regions = [self.plan.region]
        regions += [r for r in self.plan.fallback_regions if r != self.plan.region]
        choose = getattr(self.provider, "zone_choices", None)
        for region in regions:
            if region == self.plan.region and self.plan.zone:
                out.append((region, self.plan.zone))
                continue
            if choose is None:
                out.append((region, ""))
                continue
            try:
                choices: list[ZoneChoice] = await asyncio.to_thread(
                    choose, region, self.plan.instance_type, self.plan.market)
            except ProviderError as error:
                if error.kind in ("auth", "clock"):
                    raise
                log.info("zones of %s unknown (%s); the provider chooses", region, error)
                out.append((region, ""))
                continue
            for choice in choices:
                if choice.sells:
                    out.append((region, choice.zone))
                    continue
                refusal = ProviderError("capacity", MSG_ZONE_REFUSED, choice.reason,
                                        provider=title(self.plan.provider),
                                        instance_type=self.plan.instance_type,
                                        zone=choice.zone, reason=choice.reason)
                self.refusals.append(Refusal(region, choice.zone, refusal))
                self.l.ledger.log(self.machine.id, "refused",
                                  f"{region} {choice.zone}: {refusal.message()}")
                self._progress("instance", "retry", refusal)
        return out

    def _record(self, instance: CloudInstance, step: str) -> None:
        self.machine = self.l.ledger.update(
            self.machine.id, cloud_id=instance.cloud_id, state=instance.state,
            zone=instance.zone or self.machine.zone, public_ip=instance.public_ip,
            launched_at=instance.launched_at or time.time(), step=step,
            detail=f"{instance.cloud_id} {instance.state}")

    async def _wait_running(self) -> None:
        self._progress("running", "started")
        clock = self.l.clock
        started = clock()
        deadline = started + self.l.running_timeout_s
        unlisted_since: float | None = None
        m = self.machine
        while True:
            found = await asyncio.to_thread(self.provider.describe, m.region, [m.cloud_id])
            if not found and self._may_vanish():  # released while starting (ECS)?
                unlisted_since = clock() if unlisted_since is None else unlisted_since
                why = await asyncio.to_thread(self._creation_failure)
                if why or clock() - unlisted_since >= GONE_AFTER_S:
                    raise await asyncio.to_thread(self._vanished, why or MSG_VANISHED, False)
            elif found and found[0].state != STATE_RUNNING and self._may_vanish() \
                    and clock() - started >= ASK_WHY_AFTER_S:
                why = await asyncio.to_thread(self._creation_failure)
                if why:  # the cloud gave up on it but still lists it: release it now
                    raise await asyncio.to_thread(self._vanished, why, True)
            if found:
                unlisted_since = None
                current = found[0]
                if current.state != self.machine.state or (
                        current.public_ip and current.public_ip != self.machine.public_ip):
                    self._record(current, current.state)
                if current.state == STATE_RUNNING and current.public_ip:
                    self._progress("running", "done")
                    return
                if current.state == STATE_TERMINATED:
                    # The cloud's own words; only a spot machine may have been reclaimed.
                    error = ProviderError(
                        "capacity", MSG_GONE if current.market == "spot" else MSG_LAUNCH_FAILED,
                        current.reason, cloud_id=m.cloud_id, state=current.state,
                        where=current.zone or m.zone or m.region,
                        reason=current.reason or MSG_NO_REASON)
                    self._progress("running", "failed", error)
                    raise error
            if clock() > deadline:
                error = ProviderError("other", MSG_NOT_RUNNING, cloud_id=m.cloud_id,
                                      state=self.machine.state,
                                      minutes=round(self.l.running_timeout_s / 60))
                self._progress("running", "failed", error)
                raise error
            await self.l.sleep(self.l.poll_s)

    def _may_vanish(self) -> bool:
        """Whether this cloud releases an accepted machine it could not create, so that it
        simply leaves the lists (ECS; a provider with ``creation_failure``). Elsewhere an
        unlisted machine is one the lists do not show yet (EC2 is eventually consistent
        and lists ended machines for an hour): waited for, never written off."""
        return getattr(self.provider, "creation_failure", None) is not None

    def _creation_failure(self) -> str:
        """Blocking: the cloud's reason it could not create the machine ("" for none or
        unknown: a provider without ``creation_failure``, or a refused look)."""
        ask = getattr(self.provider, "creation_failure", None)
        if ask is None:
            return ""
        try:
            return str(ask(self.machine.region, self.machine.cloud_id) or "")
        except ProviderError as error:
            log.info("no creation events for %s: %s", self.machine.cloud_id, error)
            return ""

    def _vanished(self, reason: str, listed: bool) -> ProviderError:
        """Blocking: a machine the cloud accepted and then could not create bills nothing,
        so its ledger row ends (not live) and the launch may move on to the next zone."""
        m = self.machine
        if listed:  # the cloud releases it itself; released now all the same
            try:
                self.provider.terminate(m.region, m.cloud_id)
            except ProviderError as refused:
                self.l.ledger.log(m.id, "terminate-failed", refused.message())
        self.machine = self.l.ledger.update(m.id, state=STATE_TERMINATED, step="gone",
                                            detail=f"{m.cloud_id}: {reason}")
        error = ProviderError(
            "capacity", MSG_GONE if m.market == "spot" else MSG_LAUNCH_FAILED, reason,
            cloud_id=m.cloud_id, state=STATE_TERMINATED, where=m.zone or m.region,
            reason=reason)
        self._progress("running", "failed", error)
        return error

    async def _wait_ssh(self) -> None:
        self._progress("ssh", "started")
        deadline = time.monotonic() + self.l.ssh_timeout_s
        while not await self.l.ssh_probe(self.machine.public_ip):
            if time.monotonic() > deadline:
                error = ProviderError("network", MSG_NO_SSH, cloud_id=self.machine.cloud_id,
                                      address=self.machine.public_ip,
                                      minutes=round(self.l.ssh_timeout_s / 60))
                self._progress("ssh", "failed", error)
                raise error
            await asyncio.sleep(self.l.poll_s)
        self.l.ledger.log(self.machine.id, "ssh", self.machine.public_ip)
        self._progress("ssh", "done")

    async def undo(self) -> None:
        """After a cancel: wait for a call in flight, then terminate what it made."""
        ledger = self.l.ledger
        if self.inflight is not None:
            try:
                self._record(await self.inflight, "instance")
            except ProviderError as error:
                self.machine = ledger.update(self.machine.id, state=STATE_FAILED,
                                             error=error.message(), step="failed")
        if self.machine.group_id:  # a member alone would be replaced: end the group
            try:
                groups = keep_alive_launch.groups_of(self.provider, self.plan.provider)
                self.machine = await asyncio.to_thread(keep_alive_launch.end, ledger,
                                                       self.machine, groups)
            except ProviderError as error:
                ledger.log(self.machine.id, "terminate-failed", error.message())
            return
        if not self.machine.cloud_id:
            if self.machine.state == STATE_INTENT:
                ledger.update(self.machine.id, state=STATE_FAILED, error="cancelled",
                              step="cancelled")
            return
        ledger.log(self.machine.id, "cancelled", "terminating")
        try:
            await asyncio.to_thread(self.provider.terminate, self.machine.region,
                                    self.machine.cloud_id)
            ledger.update(self.machine.id, state=STATE_TERMINATED, step="terminate",
                          detail="after cancel")
        except ProviderError as error:  # still recorded as billing: the Instances page shows it
            ledger.log(self.machine.id, "terminate-failed", error.message())
