"""The renting verbs: accounts, launch, ls, stop/start/terminate and add-machine.

Secrets are read from standard input or a hidden prompt, never from argv.
Progress goes to stderr, answers to stdout; ``--json`` prints one object.
Exit status: 0 done, 1 refused or failed, 2 bad input.
"""

from __future__ import annotations

import argparse
import asyncio
import getpass
import json
import math
import os
import re
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from gpudesk.i18n_marks import QT_TRANSLATE_NOOP
from gpudesk.services.cloud import accounts
from gpudesk.services.cloud import credentials
from gpudesk.services.cloud.catalog import load_catalog
from gpudesk.services.cloud.providers.base import Credentials
from gpudesk.services.cloud.providers.base import ProviderError
from gpudesk.services.cloud.providers.base import ProviderName
from gpudesk.services.money.ledger import Ledger
from gpudesk.services.money.ledger import Machine

MSG_BAD_BUDGET = QT_TRANSLATE_NOOP(
    "ProviderError", "A budget must be more than 0 (got {amount}).")
MSG_BAD_LOGIN_USER = QT_TRANSLATE_NOOP(
    "ProviderError", "'{user}' is not a login name (lowercase letters, digits, '_' and '-', "
    "starting with a letter or '_', at most 32 characters).")
VERBS = frozenset({"accounts", "launch", "ls", "show", "stop", "start", "terminate",
                   "allow-me", "add-machine", "login-user"})
STORE_AUTO, STORE_NONE = "auto", "none"
NONE_WORDS = ("none", "off", "no")  # = runs.machine_access.NONE_WORDS
_LOGIN_NAME = re.compile(r"^[a-z_][a-z0-9_-]{0,31}$")


def _fail(message: str, code: int = 1) -> int:
    print(f"gpudesk: error: {message}", file=sys.stderr)
    return code


def _read_secret(a: argparse.Namespace, label: str) -> tuple[str, str]:
    """(secret, session token) from stdin lines, or a hidden prompt on a terminal."""
    if a.secret_stdin and not sys.stdin.isatty():
        lines = sys.stdin.read().splitlines()
        secret = lines[0].strip() if lines else ""
        token = lines[1].strip() if getattr(a, "session_token_stdin", False) and \
            len(lines) > 1 else ""
        return secret, token
    secret = getpass.getpass(f"{label}: ")
    token = getpass.getpass("Session token (empty if none): ") \
        if getattr(a, "session_token_stdin", False) else ""
    return secret, token


@dataclass(frozen=True)
class _KeyInput:
    """How ``accounts add`` takes one cloud's keys on the command line."""

    id_flag: str  # the option that names the key (its dest holds the id)
    secret_prompt: str
    profile: Callable[[str], Credentials] | None = None  # --profile NAME reads them from a file
    session_token: bool = False  # --session-token-stdin applies


_KEY_INPUTS: dict[ProviderName, _KeyInput] = {
    "aws": _KeyInput("--access-key-id", "AWS secret access key", credentials.aws_profile,
                     session_token=True),
    "aliyun": _KeyInput("--access-key-id", "Alibaba Cloud AccessKey secret",
                        credentials.aliyun_profile),
    "tencent": _KeyInput("--secret-id", "Tencent Cloud SecretKey"),
}


def _cmd_accounts_add(a: argparse.Namespace) -> int:
    how = _KEY_INPUTS[a.provider]
    if how.profile is not None and a.profile:
        creds = how.profile(a.profile)
    else:
        key_id = getattr(a, how.id_flag.removeprefix("--").replace("-", "_"))
        if not key_id:
            also = " (or --profile NAME)" if how.profile is not None else ""
            return _fail(f"pass {how.id_flag} ID{also}", 2)
        secret, token = _read_secret(a, how.secret_prompt)
        creds = Credentials(a.provider, key_id, secret, token if how.session_token else "")
    with Ledger() as ledger:
        account = accounts.add_account(ledger, creds, check=not a.no_verify)
    if a.no_verify:
        print(f"{accounts.title(a.provider)} keys {account.key_id_masked} saved to the keyring "
              "(not verified).")
    else:
        can = "may launch machines" if account.can_launch else \
            "CANNOT launch machines (ask for ec2:RunInstances / cvm:RunInstances / " \
            "ecs:RunInstances)" \
            if account.launch_checked else \
            "may or may not launch machines: the launch check could not be made"
        print(f"{accounts.title(a.provider)} keys {account.key_id_masked} are valid "
              f"(account {account.account}, {account.principal}); they {can}. "
              "Saved to the keyring.")
    return 0


def _cmd_accounts_list(a: argparse.Namespace) -> int:
    with Ledger() as ledger:
        rows = ledger.accounts()
    if a.json:
        print(json.dumps([{"provider": r.provider, "key_id": r.key_id_masked,
                           "account": r.account, "principal": r.principal,
                           "can_launch": r.can_launch if r.launch_checked else None,
                           "verified_at": r.verified_at}
                          for r in rows], indent=2))
        return 0
    if not rows:
        print("No accounts yet: gpudesk accounts add aws|tencent|aliyun ...")
    for r in rows:
        when = time.strftime("%Y-%m-%d %H:%M", time.localtime(r.verified_at)) \
            if r.verified_at else "never"
        print(f"{accounts.title(r.provider):<14} {r.key_id_masked:<12} account {r.account or '?'}"
              f"  verified {when}")
    return 0


def _cmd_accounts_verify(a: argparse.Namespace) -> int:
    with Ledger() as ledger:
        account = accounts.reverify(ledger, a.provider)
    print(f"{accounts.title(a.provider)} keys {account.key_id_masked} are valid "
          f"(account {account.account}).")
    return 0


def _cmd_accounts_remove(a: argparse.Namespace) -> int:
    if not _confirm(a, f"Remove the {accounts.title(a.provider)} keys from the keyring?"):
        return _fail("not confirmed (pass --yes)")
    with Ledger() as ledger:
        accounts.remove_account(ledger, a.provider)
    print(f"{accounts.title(a.provider)} keys removed.")
    return 0


def _confirm(a: argparse.Namespace, question: str) -> bool:
    if a.yes:
        return True
    if not sys.stdin.isatty():
        return False
    return input(f"{question} [y/N] ").strip().lower() in ("y", "yes")


def _catalog_offer(provider: str, region: str, instance_type: str) -> Any:
    for offer in load_catalog().filter(provider=provider, region=region):
        if offer.instance_type == instance_type:
            return offer
    return None


@dataclass(frozen=True)
class _Budget:
    """The launch's budget as the flags and Preferences give it."""

    usd: float | None  # USD like the ledger; None: counted from hours, or none at all
    hours: float  # LaunchPlan.budget_hours: hours of the price the launch counts by
    action: str
    rate: float  # CNY per USD
    said: str  # what the CLI says about it before launching


def _launch_budget(a: argparse.Namespace, price: float) -> _Budget:
    """The budget from the flags, else Preferences' default (a day of the machine unless a
    fixed amount is set): never none unless ``--no-budget`` says so (issue 29)."""
    from gpudesk.services.core.settings import load_settings
    from gpudesk.services.money import default_budget

    s = load_settings()
    rate = s.cny_per_usd if s.cny_per_usd > 0 else 7.2
    # Preferences' "warn" watches budgets without acting; a machine's own budget always acts
    action = a.on_budget or (s.budget_action if s.budget_action in ("stop", "terminate")
                             else "stop")
    if a.no_budget:
        from gpudesk.services.cloud.guard import MSG_NONE

        return _Budget(None, 0.0, "stop", rate, MSG_NONE)
    if a.budget is not None:
        if not math.isfinite(a.budget) or a.budget <= 0:
            raise ProviderError("invalid", MSG_BAD_BUDGET, amount=a.budget)
        usd = a.budget / rate if a.provider != "aws" else a.budget
        shown = f"{a.budget:.2f} {'USD' if a.provider == 'aws' else 'CNY'}"
        return _Budget(usd, 0.0, action, rate, f"Budget {shown} (--budget).")
    default = default_budget.of_settings(s)
    usd = default.amount(price)
    if default.fixed:
        said = default_budget.MSG_DEFAULT_FIXED.format(budget=f"{usd:.2f} USD")
    elif usd is not None:  # the launcher counts it again from the price it launches at
        said = default_budget.MSG_DEFAULT_HOURS.format(
            budget=f"{usd:.2f} USD", hours=f"{default.hours:g}", price=f"{price:g} USD")
        usd = None
    else:
        said = default_budget.MSG_DEFAULT_QUOTED.format(hours=f"{default.hours:g}")
    return _Budget(usd, default.plan_hours(), action, rate, said)


def _guard_says(ledger: Ledger, m: Machine) -> list[str]:
    """Who enforces ``m``'s budget, in the Launch dialog's own sentences (guard.sentences):
    ``launch`` and ``show`` print these."""
    from gpudesk.services.cloud import guard
    from gpudesk.services.cloud import instance_role

    says = guard.english(m, guard.of(m), instance_role.why_not(ledger, m))
    if m.group_live and m.budget:  # the group's own end is the cap (keep_alive_launch)
        from gpudesk.services.cloud.keep_alive_launch import MSG_GROUP_GUARD

        says = [MSG_GROUP_GUARD.format(budget=f"{m.budget:.2f} {m.currency or 'USD'}")]
    return says


def store_choice(text: str, provider: str) -> str:
    """``--store`` as the ledger keeps it: "auto", "none" or the URI as ``parse_uri`` reads
    it. A bad URI, or a bucket on another cloud than the machine (the run's short-lived keys
    come from the machine's cloud), raises StorageError before anything can bill."""
    from gpudesk.services.storage.errors import StorageError
    from gpudesk.services.storage.uri import parse_uri

    word = text.strip()
    if word.lower() in ("", STORE_AUTO):
        return STORE_AUTO
    if word.lower() in NONE_WORDS:
        return STORE_NONE
    uri = parse_uri(word)
    if uri.cloud != provider:
        from gpudesk.services.runs.machine_access import MSG_OTHER_CLOUD

        raise StorageError(MSG_OTHER_CLOUD, uri=str(uri), cloud=accounts.title(provider))
    return str(uri)


def _group_roles_follow() -> None:
    """A kept-alive group that ends (terminate, no capacity, gone) takes its role along."""
    from gpudesk.services.runs import keep_alive_run

    keep_alive_run.install()


def _spot_chance(a: argparse.Namespace, offer: Any, price: float, budget: _Budget) -> Any:
    """``--spot --job-hours H``: the job's expected cost under the cloud's cached
    interruption rate and the chance the budget runs out first (the Launch dialog's
    sentence); None without a job size, a price or a budget."""
    if a.job_hours is None or not a.spot or price <= 0 or a.no_budget:
        return None
    from gpudesk.services.cloud import guard
    from gpudesk.services.cloud.spot_rates import load_rates
    from gpudesk.services.cloud.spot_rates import rate_for
    from gpudesk.services.plan import budget_chance
    from gpudesk.services.plan import run_history

    usd = budget.usd if budget.usd is not None else budget.hours * price
    if usd <= 0:
        return None
    disk = guard.disk_per_hour(a.provider, a.region, a.disk_gb, "USD", budget.rate)
    rate = rate_for(a.provider, a.region, a.type, load_rates())
    # gpudesk's checkpoint and restart defaults, said to be assumed in --json
    job = budget_chance.SpotJobInputs(a.job_hours, rate, run_history.given({}))
    return budget_chance.budget_chance(job, price + disk, usd)


def _size_disk(a: argparse.Namespace) -> int | None:
    """``--data NAME`` (and ``--checkpoints-kept N --checkpoint-gb GB``): the disk the job
    needs (``services.plan.disk_plan``, the Plan page's line), said on stderr; ``--disk-gb``
    defaults to it, and a smaller one is refused (exit 2). Without them the disk is
    ``--disk-gb`` or 100 GB, as before. Returns the exit status of a refusal, else None."""
    from gpudesk.services.core.errors import TemplatedError
    from gpudesk.services.plan import disk_plan

    if not a.data and not a.checkpoints_kept:
        a.disk_gb = 100 if a.disk_gb is None else a.disk_gb
        return None
    if a.checkpoints_kept and a.checkpoint_gb is None:
        return _fail("--checkpoints-kept needs --checkpoint-gb (one checkpoint's size)", 2)
    try:
        data = 0
        if a.data:
            from gpudesk.services.storage import datasets

            datasets.check_name(a.data)
            data = datasets.size_of(a.data)  # kept since its push, else its manifest
        need = disk_plan.disk_need(
            data_bytes=data, checkpoints_kept=a.checkpoints_kept,
            checkpoint_size=disk_plan.gb_bytes(a.checkpoint_gb or 0.0), data_name=a.data or "")
        print(f"gpudesk: {need.said()}", file=sys.stderr, flush=True)
        if a.disk_gb is None:
            a.disk_gb = need.disk_gb
        need.check(a.disk_gb)
    except TemplatedError as err:  # an unknown dataset, a bad size, a disk too small
        return _fail(err.message(), 2)
    return None


def _cmd_launch(a: argparse.Namespace) -> int:
    from gpudesk.services.cloud.launcher import STEP_TITLES
    from gpudesk.services.cloud.launcher import Launcher
    from gpudesk.services.cloud.launcher import LaunchPlan
    from gpudesk.services.cloud.launcher import Progress
    from gpudesk.services.storage.errors import StorageError

    if a.max_price is not None and not a.spot:
        return _fail("--max-price only applies to spot machines; add --spot", 2)
    if a.keep_alive and not a.spot:
        return _fail("--keep-alive is for spot machines (an on-demand one is not reclaimed); "
                     "add --spot", 2)
    try:
        store = store_choice(a.store, a.provider)
    except StorageError as err:  # refused before anything is written or asked
        return _fail(err.message(), 2)
    if a.login_user and not _LOGIN_NAME.match(a.login_user):
        return _fail(MSG_BAD_LOGIN_USER.format(user=a.login_user), 2)
    if a.no_budget and a.on_budget:
        return _fail("--on-budget needs a budget; drop --no-budget or --on-budget", 2)
    refused = _size_disk(a)  # issue 32: a disk that cannot hold the data, before any call
    if refused is not None:
        return refused
    offer = _catalog_offer(a.provider, a.region, a.type)
    price = (offer.price(a.spot) or offer.ondemand_price or 0.0) if offer is not None else 0.0
    budget = _launch_budget(a, price)
    print(f"gpudesk: {'warning: ' if a.no_budget else ''}{budget.said}", file=sys.stderr,
          flush=True)
    if a.job_hours is not None and (not math.isfinite(a.job_hours) or a.job_hours <= 0):
        return _fail("--job-hours must be more than 0", 2)
    chance = _spot_chance(a, offer, price, budget)
    if chance is not None:
        from gpudesk.services.plan import budget_chance

        print("gpudesk: " + budget_chance.plain(budget_chance.sentences(
            chance, lambda usd: f"${usd:,.2f}", group=a.keep_alive)), file=sys.stderr,
              flush=True)
    from gpudesk.services.cloud.image_choice import image_note

    note = image_note(a.provider, a.image or "", a.keep_alive)  # the Image field's word
    if note is not None:
        print("gpudesk: " + note[0].format(**note[1]), file=sys.stderr, flush=True)
    plan = LaunchPlan(
        provider=a.provider, instance_type=a.type, region=a.region, zone=a.zone or "",
        budget=budget.usd, budget_hours=budget.hours, on_budget=budget.action,
        cny_per_usd=budget.rate,
        market="spot" if a.spot else "on-demand", max_price=a.max_price,
        image_id=a.image or "", disk_gb=a.disk_gb, allow_from=a.allow_from or "",
        fallback_regions=tuple(a.fallback_region or ()),
        gpu=offer.gpu.name if offer is not None else "",
        gpus=offer.gpu_count if offer is not None else 0, price_per_hour=price,
        wait_ssh=not a.no_wait_ssh, instance_role=not a.no_instance_role,
        app_stop_only=a.app_stop_only, store=store,
        ssh_user=a.login_user or "", keep_alive=a.keep_alive)

    def show(p: Progress) -> None:
        if p.quote is not None:  # the cloud's quote: said where it is not the estimate
            if p.message:
                print(f"[{p.ledger_id}] {p.message}", file=sys.stderr, flush=True)
            return
        mark = {"started": "…", "done": "done", "failed": "FAILED", "retry": "refused"}[p.status]
        line = f"[{p.ledger_id}] {STEP_TITLES[p.step]}: {mark}"
        if p.message:
            line += f" — {p.message}"
        print(line, file=sys.stderr, flush=True)

    with Ledger() as ledger:
        from gpudesk.services.core.settings import load_settings
        from gpudesk.services.remote.first_boot import for_launch
        from gpudesk.services.runs.keep_alive_run import Hooks
        from gpudesk.services.storage.store_check import check_launch_store

        launcher = Launcher(ledger, poll_s=a.poll, first_boot=for_launch(load_settings, ledger),
                            keep_alive=Hooks(ledger), store_check=check_launch_store)
        result = asyncio.run(launcher.launch(plan, show))
        m = ledger.get(result.machine.id) or result.machine
        data = _machine_json(m, ledger)
        says = _guard_says(ledger, m)
    from gpudesk.services.cloud import guard

    data.update(guard=guard.of(m).as_json(), guard_says=says)
    if chance is not None:  # the same figures as the sentence said before the launch
        data["spot_risk"] = chance.risk.to_json() | {"job_hours": a.job_hours,
                                                     "budget_lasts_hours": chance.end_hours}
    if a.json:
        print(json.dumps(data, indent=2, ensure_ascii=False))
    else:
        login = f"ssh {m.ssh_user}@{m.public_ip}" if m.ssh_user else _login_unknown(m, "")
        print(f"{m.id} {m.cloud_id} {m.instance_type} {m.market} {m.state} in {m.zone or m.region}"
              f"; {login}")
        _print_guard(m, says)
    return 0


def _print_guard(m: Machine, says: list[str]) -> None:
    """The budget and who enforces it, as ``show`` prints them."""
    budget = f"{m.budget:.2f} {m.currency or 'USD'}, then {m.on_budget or 'stop'}" \
        if m.budget else "none"
    print(f"  budget: {budget}")
    print(f"  enforced by: {', '.join(x for x in m.enforced_by.split(',') if x) or 'nobody'}")
    for line in says:
        print(f"  {line}")


def _login_unknown(m: Machine, why: str) -> str:
    """"login user unknown (why). Set it with: …" for a machine whose user nobody said."""
    from gpudesk.services.remote.targets import MSG_LOGIN_HOW
    from gpudesk.services.remote.targets import MSG_LOGIN_UNKNOWN

    return MSG_LOGIN_UNKNOWN + (f" ({why})" if why else "") + ". " + MSG_LOGIN_HOW.format(
        machine=m.name or m.id)


def _login_unknown_why(ledger: Ledger, m: Machine) -> str:
    """Why the login user is not known, as the reconciler or launcher logged it ("": not
    said)."""
    for event in reversed(ledger.events(m.id)):
        if event.step == "login-user":
            return event.detail.removeprefix("unknown:").strip() \
                if event.detail.startswith("unknown") else ""
    return ""


def _store_json(m: Machine) -> dict[str, str]:
    """``show --json``'s ``store`` (runs.machine_access.store_summary)."""
    try:
        from gpudesk.services.runs.machine_access import store_summary
    except ImportError:
        word = m.store.strip()
        none = word.lower() in NONE_WORDS or m.provider == "own"
        return {"uri": word or STORE_AUTO if not none else "", "role": "",
                "credentials": "none" if none else "sts"}
    return store_summary(m)


def _machine_json(m: Machine, ledger: Ledger, now: float | None = None) -> dict[str, Any]:
    from gpudesk.services.core.machine_states import billing_state
    from gpudesk.services.money.spend import machine_spend

    return {"id": m.id, "provider": m.provider, "cloud_id": m.cloud_id,
            "type": m.instance_type, "state": m.state, "market": m.market, "region": m.region,
            "zone": m.zone, "public_address": m.public_ip, "gpus": m.gpus, "gpu": m.gpu,
            "price_per_hour": m.price_per_hour, "currency": m.currency,
            "spend": round(machine_spend(ledger, m, now).total, 4),
            "billing": m.billing, "name": m.name,
            # the cloud's word on what it bills now: KEEP_CHARGING (a stopped Tencent machine
            # billed in full), StopCharging, "stopped (disk only)" (EC2), or the state
            "billing_state": billing_state(m.provider, m.state, m.stopped_mode)}


def _cmd_ls(a: argparse.Namespace) -> int:
    from gpudesk.services.cloud.reconcile import reconcile

    with Ledger() as ledger:
        report = None
        if not a.no_reconcile:
            _group_roles_follow()
            report = asyncio.run(reconcile(ledger))
        machines = ledger.machines(include_ended=a.all)
        now = time.time()
        rows = [_machine_json(m, ledger, now) for m in machines]
    if report is not None:
        for name, error in report.errors.items():
            text = error.message()
            if not text.startswith(report.account(name)):
                text = f"{report.account(name)} not checked: {text}"
            print(f"gpudesk: warning: {text}", file=sys.stderr)
        if report.adopted:
            print(f"gpudesk: found {len(report.adopted)} machine(s) the ledger did not know: "
                  + ", ".join(report.adopted), file=sys.stderr)
        for ledger_id, why in report.no_price.items():
            print(f"gpudesk: warning: {ledger_id}: no price: no budget can be counted (the "
                  f"cloud gave none: {why})", file=sys.stderr)
        for ledger_id, why in report.login_unknown.items():
            m = next((x for x in machines if x.id == ledger_id), None)
            if m is not None and not m.ssh_user:
                print(f"gpudesk: warning: {ledger_id}: {_login_unknown(m, why)}",
                      file=sys.stderr)
        if report.cleanup is not None and report.cleanup.waiting:
            print("gpudesk: cleanup not finished (asked again by every ls, reconcile and "
                  "app start; gpudesk show ID --json says why): "
                  + ", ".join(sorted(set(report.cleanup.waiting))), file=sys.stderr)
    if a.json:
        print(json.dumps(rows, indent=2))
        return 0
    if not machines:
        print("No machines. Launch one with gpudesk launch ... or the Plan page.")
    for m, row in zip(machines, rows, strict=True):
        where = m.zone or m.region or m.public_ip
        print(f"{m.id:<13} {m.provider:<8} {m.cloud_id or '-':<20} {m.instance_type or '-':<18} "
              f"{m.state:<11} {m.market:<10} {where:<16} {row['spend']:.2f} {m.currency}")
    return 0


def _run_record(ref: str) -> Any:
    """The run ``ref`` names when no machine does (a ledger id or name wins)."""
    from gpudesk.services.runs.detached import RunError
    from gpudesk.services.runs.detached import RunRecord

    with Ledger() as ledger:
        if ledger.get(ref) is not None or any(m.name == ref for m in ledger.machines(
                include_ended=True)):
            return None
    try:
        return RunRecord.load(ref)
    except RunError:
        return None


def _show_run(record: Any, as_json: bool) -> int:
    from gpudesk.services.cloud.guard import iso_utc
    from gpudesk.services.runs.run_story import story

    told = story(record)
    if as_json:
        print(json.dumps(told.as_json(), indent=2, ensure_ascii=False))
        return 0
    print(f"run {told.run} on {told.machine}" + (f" (group {told.group})" if told.group else ""))
    for s in told.machines:
        cost = f"{s.spent:.2f} {s.currency}" if s.spent is not None else "cost not counted"
        resumed = (f", resumed from step {s.resumed_from_step}"
                   if s.resumed_from_step is not None else "")
        print(f"  {s.cloud_id or s.target}: {iso_utc(s.start) or '?'} to "
              f"{iso_utc(s.end) or 'now'}"
              f"{' ' + s.why if s.why else ''}{resumed}; {cost}")
    if told.total is not None:
        print(f"  spent {told.total:.2f} {told.currency} over {len(told.machines)} machine(s)")
    if told.bucket_error:
        print(f"  the bucket could not be read: {told.bucket_error}")
    return 0


RED, RESET = "\033[31m", "\033[0m"


def _no_price_words(ledger: Ledger, m: Machine) -> str:
    """"no price: no budget can be counted. …why" for a cloud machine without a price
    (reconcile.no_price_why); "" for one that has a price."""
    from gpudesk.services.cloud.reconcile import MSG_NO_PRICE
    from gpudesk.services.cloud.reconcile import MSG_NO_PRICE_WHY
    from gpudesk.services.cloud.reconcile import no_price_why

    why = no_price_why(ledger, m)
    if why is None:
        return ""
    return f"{MSG_NO_PRICE}. {MSG_NO_PRICE_WHY.format(why=why or 'not asked')}"


def _cmd_show(a: argparse.Namespace) -> int:
    from gpudesk.services.cloud import cleanup
    from gpudesk.services.cloud import guard
    from gpudesk.services.cloud.machines import resolve
    from gpudesk.services.remote import host_key_rotation as first_login

    run = _run_record(a.id)
    if run is not None:  # a run's id: its machines one after another (issue 23)
        return _show_run(run, a.json)
    with Ledger() as ledger:
        m = resolve(ledger, a.id)
        data = _machine_json(m, ledger)
        leftovers = cleanup.status(ledger, m)
        rotated, installed = first_login.login_facts(ledger, m.id)
        says = _guard_says(ledger, m)  # with what stays unprotected without a role
        why_unknown = _login_unknown_why(ledger, m) if not m.ssh_user else ""
        no_price = _no_price_words(ledger, m)
    data["cleanup"] = [r.as_json() for r in leftovers]
    data["price_says"] = no_price or None
    g = guard.of(m)
    data.update(host_key_fingerprint=m.host_key_fingerprint or None, guard=g.as_json(),
                guard_says=says, host_key_rotated=rotated)
    data["guard"]["installed"] = installed
    data["store"] = _store_json(m)
    if m.group_id:
        from gpudesk.services.cloud.keep_alive_launch import members
        from gpudesk.services.runs.keep_alive_run import role_name
        from gpudesk.services.runs.keep_alive_run import why_no_role

        with Ledger() as ledger:
            data["group"] = {"id": m.group_id, "state": m.group_state or "live",
                             "ends_at": guard.iso_utc(m.cloud_timer_at),
                             "role": role_name(ledger, m) or None,
                             "role_says": why_no_role(ledger, m),
                             "machines": members(ledger, m)}
    cloud = m.provider != "own"
    data["login_user"] = m.ssh_user or None
    if a.json:
        print(json.dumps(data, indent=2, ensure_ascii=False))
        return 0
    print(f"{m.id} {m.name}: {m.provider} {m.cloud_id or '-'} {m.instance_type} "
          f"{m.billing_label}")
    print(f"  spent {data['spend']:.2f} {m.currency} at {m.price_per_hour:g}/h")
    if no_price:  # in red where the terminal shows colour: no budget of it can cross
        red = sys.stdout.isatty() and not os.environ.get("NO_COLOR")
        print(f"  {RED if red else ''}{no_price}{RESET if red else ''}")
    print(f"  host key {m.host_key_fingerprint or 'not known yet (asked on first connect)'}")
    if m.ssh_user or not cloud:
        print(f"  login user {m.ssh_user or 'root'}")  # an own machine's, as targets uses
    else:  # never a guess: a wrong user is a failed login and a guard for nobody
        print(f"  {_login_unknown(m, why_unknown)}")
    store = data["store"]
    print(f"  run data: {_store_words(store)}")
    if "group" in data:
        grp = data["group"]
        print(f"  kept alive by group {grp['id']} ({grp['state']}; it ends itself at "
              f"{grp['ends_at'] or 'no time'})")
        if grp["role_says"]:
            print(f"  {grp['role_says']}")
        for one in grp["machines"]:
            print(f"    {one['cloud_id']}: {guard.iso_utc(one['from'])} to "
                  f"{guard.iso_utc(one['to']) or 'now'} {one['why']}".rstrip())
    print(f"  guard: {first_login.GUARD_WORDS[installed]}")
    print(f"  enforced by: {', '.join(g.enforced_by) or 'nobody'}")
    for line in data["guard_says"]:
        print(f"  {line}")
    for r in leftovers:
        why = f" ({r.last_error})" if r.last_error else ""
        print(f"  {r.kind} {r.resource}: {r.state}{why}")
    return 0


def _store_words(store: dict[str, str]) -> str:
    """The plain ``show`` line of where runs keep their data."""
    how = {"role": "through the machine's role", "sts": "short-lived keys for each run",
           "none": ""}.get(store.get("credentials", ""), "")
    uri = store.get("uri", "")
    if not uri or store.get("credentials") == "none":
        return f"no bucket{f' ({uri})' if uri else ''}: copies on this computer only"
    where = "the account's gpudesk bucket in the machine's region" if uri == STORE_AUTO else uri
    return f"{where} ({how})" if how else where


def _cmd_login_user(a: argparse.Namespace) -> int:
    """Say who logs in on a machine whose image did not say it (or said it wrong)."""
    from gpudesk.services.cloud.machines import resolve

    if not _LOGIN_NAME.match(a.user):
        return _fail(MSG_BAD_LOGIN_USER.format(user=a.user), 2)
    with Ledger() as ledger:
        m = resolve(ledger, a.id)
        m = ledger.update(m.id, ssh_user=a.user, step="login-user", detail=f"{a.user} (given)")
    print(f"{m.id} {m.name}: logs in as {m.ssh_user}")
    return 0


def _cmd_action(a: argparse.Namespace) -> int:
    from gpudesk.services.cloud.machines import act
    from gpudesk.services.cloud.machines import resolve
    from gpudesk.services.cloud.machines import stop_warning

    with Ledger() as ledger:
        machine = resolve(ledger, a.id)
        if a.verb == "terminate" and not _confirm(
                a, f"Terminate {machine.id} ({machine.cloud_id}, {machine.instance_type})? "
                   "Its disk is deleted."):
            return _fail("not confirmed (pass --yes)")
        if a.verb == "stop":
            warning = asyncio.run(stop_warning(ledger, a.id))
            if warning:  # this stop cannot end the compute bill: say so before it
                print(f"gpudesk: warning: {warning}", file=sys.stderr)
        _group_roles_follow()
        updated = asyncio.run(act(ledger, a.id, a.verb))
        notes = [e.detail for e in ledger.events(updated.id) if e.step == "stop-billing"]
    print(f"{updated.id} {updated.cloud_id}: {updated.billing_label}")
    if a.verb == "stop" and notes:
        print(notes[-1])  # what still bills while it is stopped
    return 0


def _cmd_allow_me(a: argparse.Namespace) -> int:
    from gpudesk.services.cloud.allow_me import allow_me

    with Ledger() as ledger:
        result = allow_me(ledger, a.id, a.address or "")
    m = result.machine
    before = ", ".join(result.replaced) or "no earlier gpudesk rule"
    if a.json:
        print(json.dumps({"id": m.id, "security_group": m.security_group,
                          "address": result.address, "replaced": result.replaced}, indent=2))
    else:
        print(f"{m.id}: SSH now open to {result.address} only (was {before}); "
              "rules you added yourself were kept.")
    return 0


def _cmd_add_machine(a: argparse.Namespace) -> int:
    from gpudesk.cli.machine_profile import cmd_add_machine

    return cmd_add_machine(a)


def add_parsers(sub: Any) -> None:
    p = sub.add_parser("accounts", help="cloud keys in the system keyring")
    asub = p.add_subparsers(dest="accounts_verb", required=True)
    q = asub.add_parser("add", help="verify and store keys (the secret comes from stdin)")
    q.add_argument("provider", choices=("aws", "tencent", "aliyun"))
    q.add_argument("--access-key-id", help="AWS access key id / Alibaba Cloud AccessKey ID")
    q.add_argument("--secret-id", help="Tencent Cloud SecretId")
    q.add_argument("--secret-stdin", action="store_true",
                   help="read the secret from standard input (first line)")
    q.add_argument("--session-token-stdin", action="store_true",
                   help="AWS: read a session token from the second line of standard input")
    q.add_argument("--profile", help="AWS: import a named profile from ~/.aws instead; "
                   "aliyun: from ~/.aliyun/config.json")
    q.add_argument("--no-verify", action="store_true", help="store without checking")
    q.set_defaults(func=_cmd_accounts_add)
    q = asub.add_parser("list", help="the accounts gpudesk has keys for")
    q.add_argument("--json", action="store_true")
    q.set_defaults(func=_cmd_accounts_list)
    q = asub.add_parser("verify", help="check stored keys again")
    q.add_argument("provider", choices=("aws", "tencent", "aliyun"))
    q.set_defaults(func=_cmd_accounts_verify)
    q = asub.add_parser("remove", help="delete stored keys")
    q.add_argument("provider", choices=("aws", "tencent", "aliyun"))
    q.add_argument("--yes", action="store_true")
    q.set_defaults(func=_cmd_accounts_remove)

    p = sub.add_parser("launch", help="rent a machine (writes the ledger first)")
    p.add_argument("--provider", choices=("aws", "tencent", "aliyun"), required=True)
    p.add_argument("--type", required=True, help="instance type, e.g. g5.xlarge")
    p.add_argument("--region", required=True)
    p.add_argument("--zone")
    p.add_argument("--spot", action="store_true")
    p.add_argument("--max-price", type=float,
                   help="spot only; per hour in the provider's currency (AWS USD, Tencent and "
                        "Alibaba Cloud CNY)")
    p.add_argument("--image", help="image id (default: the provider's GPU deep-learning image)")
    p.add_argument("--allow-from", help="the one address (CIDR /32) SSH is opened to")
    p.add_argument("--disk-gb", type=int,
                   help="the machine's disk in GB (default 100, or what --data needs)")
    p.add_argument("--data", metavar="NAME",
                   help="a dataset (gpudesk data push): the disk defaults to its size + the "
                        "checkpoints kept + the environment + headroom, and a --disk-gb "
                        "smaller than that is refused before anything is launched")
    p.add_argument("--checkpoints-kept", type=int, default=0, metavar="N",
                   help="with --data: how many checkpoints the script keeps on the disk")
    p.add_argument("--checkpoint-gb", type=float, metavar="GB",
                   help="one checkpoint's size in GB (weights + optimizer state)")
    p.add_argument("--fallback-region", action="append",
                   help="try this region when the first refuses (repeatable)")
    p.add_argument("--no-wait-ssh", action="store_true", help="return once it runs")
    money = p.add_mutually_exclusive_group()
    money.add_argument("--budget", type=float, metavar="AMOUNT",
                       help="this machine's budget in the provider's currency (AWS USD, "
                            "Tencent and Alibaba Cloud CNY); default: the Preferences "
                            "default, a day of the machine at its price unless a fixed "
                            "amount is set there")
    money.add_argument("--no-budget", action="store_true",
                       help="no budget at all: nothing stops the machine's bill but you")
    p.add_argument("--on-budget", choices=("stop", "terminate"),
                   help="what happens at the budget (default: the Preferences action)")
    p.add_argument("--job-hours", type=float, metavar="H",
                   help="spot: the job's uninterrupted compute hours on this machine (the "
                        "hours `gpudesk offers` gives); says its expected cost and the chance "
                        "that the budget runs out before it finishes")
    p.add_argument("--no-instance-role", action="store_true",
                   help="give the machine no role to stop itself (AWS: an instance profile "
                        "that may only stop or terminate that machine)")
    p.add_argument("--app-stop-only", action="store_true",
                   help="Tencent Cloud and Alibaba Cloud, a \"stop\" budget: launch even "
                        "where the machine gets no role, accepting that only the open app "
                        "stops its bill (else such a launch is refused before it bills)")
    p.add_argument("--store", default=STORE_AUTO, metavar="auto|none|URI",
                   help="where its runs keep checkpoints, logs and outputs: auto (the "
                        "account's gpudesk bucket in the machine's region, the default), "
                        "none (copies on this computer only), or s3://bucket/prefix, "
                        "cos://bucket-appid/prefix, oss://bucket/prefix")
    p.add_argument("--login-user", metavar="USER",
                   help="who logs in (default: the image's own user)")
    p.add_argument("--keep-alive", action="store_true",
                   help="spot only: the cloud's own group of size 1 starts another machine "
                        "when one is reclaimed, and ends itself when the budget runs out "
                        "(docs/recovery.md)")
    p.add_argument("--poll", type=float, default=3.0, help=argparse.SUPPRESS)
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=_cmd_launch)

    p = sub.add_parser("login-user", help="say who logs in on a machine (when its image "
                                          "did not say it)")
    p.add_argument("id", help="ledger id, cloud id or name")
    p.add_argument("user", help="the login name, e.g. root, ubuntu or ec2-user")
    p.set_defaults(func=_cmd_login_user)

    p = sub.add_parser("show", help="one machine: spend, host key and who enforces its budget")
    p.add_argument("id", help="ledger id, cloud id or name")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=_cmd_show)

    p = sub.add_parser("ls", help="machines in the ledger (checked against the clouds)")
    p.add_argument("--all", action="store_true", help="include ended machines")
    p.add_argument("--no-reconcile", action="store_true", help="do not ask the clouds")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=_cmd_ls)

    for verb in ("stop", "start", "terminate"):
        p = sub.add_parser(verb, help=f"{verb} a machine")
        p.add_argument("id", help="ledger id, cloud id or name")
        p.add_argument("--yes", action="store_true", help="do not ask for confirmation")
        p.set_defaults(func=_cmd_action)

    p = sub.add_parser("allow-me", help="open SSH on a machine to this computer's new address")
    p.add_argument("id", help="ledger id, cloud id or name")
    p.add_argument("--address", help="the address to allow, like 203.0.113.7/32 "
                                     "(default: this computer's public address)")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=_cmd_allow_me)

    p = sub.add_parser("add-machine", help="use an SSH machine you already have (no billing): "
                       "its key file, Python, folder and bucket, tested by one login")
    from gpudesk.cli.machine_profile import add_arguments

    add_arguments(p)
    p.set_defaults(func=_cmd_add_machine)


def handle_error(err: BaseException) -> int | None:
    """Exit status for a service error, after printing it; None if not ours."""
    if isinstance(err, ProviderError):
        detail = f" ({err.detail})" if err.detail and err.kind == "other" else ""
        return _fail(f"{err.message()}{detail}", 2 if err.kind == "invalid" else 1)
    if isinstance(err, credentials.CredentialError):
        return _fail(err.message())
    return None
