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
import sys
import time
from typing import Any
from urllib.parse import urlsplit

from gpudesk.services.cloud import accounts, credentials
from gpudesk.services.cloud.catalog import load_catalog
from gpudesk.services.cloud.providers.base import Credentials, ProviderError
from gpudesk.services.money.ledger import Ledger, Machine

VERBS = frozenset({"accounts", "launch", "ls", "stop", "start", "terminate", "add-machine"})


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


def _cmd_accounts_add(a: argparse.Namespace) -> int:
    if a.provider == "aws" and a.profile:
        creds = credentials.aws_profile(a.profile)
    elif a.provider == "aws":
        if not a.access_key_id:
            return _fail("pass --access-key-id ID (or --profile NAME)", 2)
        secret, token = _read_secret(a, "AWS secret access key")
        creds = Credentials("aws", a.access_key_id, secret, token)
    else:
        if not a.secret_id:
            return _fail("pass --secret-id ID", 2)
        secret, _ = _read_secret(a, "Tencent Cloud SecretKey")
        creds = Credentials("tencent", a.secret_id, secret)
    with Ledger() as ledger:
        account = accounts.add_account(ledger, creds, check=not a.no_verify)
    if a.no_verify:
        print(f"{accounts.title(a.provider)} keys {account.key_id_masked} saved to the keyring "
              "(not verified).")
    else:
        can = "may launch machines" if account.can_launch else \
            "CANNOT launch machines (ask for ec2:RunInstances / cvm:RunInstances)"
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
                           "can_launch": r.can_launch, "verified_at": r.verified_at}
                          for r in rows], indent=2))
        return 0
    if not rows:
        print("No accounts yet: gpudesk accounts add aws|tencent ...")
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


def _cmd_launch(a: argparse.Namespace) -> int:
    from gpudesk.services.cloud.launcher import STEP_TITLES, Launcher, LaunchPlan, Progress

    if a.max_price is not None and not a.spot:
        return _fail("--max-price only applies to spot machines; add --spot", 2)
    offer = _catalog_offer(a.provider, a.region, a.type)
    price = (offer.price(a.spot) or offer.ondemand_price) if offer is not None else 0.0
    plan = LaunchPlan(
        provider=a.provider, instance_type=a.type, region=a.region, zone=a.zone or "",
        market="spot" if a.spot else "on-demand", max_price=a.max_price,
        image_id=a.image or "", disk_gb=a.disk_gb, allow_from=a.allow_from or "",
        fallback_regions=tuple(a.fallback_region or ()),
        gpu=offer.gpu.name if offer is not None else "",
        gpus=offer.gpu_count if offer is not None else 0, price_per_hour=price,
        wait_ssh=not a.no_wait_ssh)

    def show(p: Progress) -> None:
        mark = {"started": "…", "done": "done", "failed": "FAILED", "retry": "refused"}[p.status]
        line = f"[{p.ledger_id}] {STEP_TITLES[p.step]}: {mark}"
        if p.message:
            line += f" — {p.message}"
        print(line, file=sys.stderr, flush=True)

    with Ledger() as ledger:
        result = asyncio.run(Launcher(ledger, poll_s=a.poll).launch(plan, show))
    m = result.machine
    if a.json:
        print(json.dumps(_machine_json(m), indent=2))
    else:
        print(f"{m.id} {m.cloud_id} {m.instance_type} {m.market} {m.state} in {m.zone or m.region}"
              f"; ssh {m.ssh_user}@{m.public_ip}")
    return 0


def _machine_json(m: Machine) -> dict[str, Any]:
    return {"id": m.id, "provider": m.provider, "cloud_id": m.cloud_id,
            "type": m.instance_type, "state": m.state, "market": m.market, "region": m.region,
            "zone": m.zone, "public_address": m.public_ip, "gpus": m.gpus, "gpu": m.gpu,
            "price_per_hour": m.price_per_hour, "spend": round(m.spend(), 4),
            "billing": m.billing, "name": m.name}


def _cmd_ls(a: argparse.Namespace) -> int:
    from gpudesk.services.cloud.reconcile import reconcile

    with Ledger() as ledger:
        report = None
        if not a.no_reconcile:
            report = asyncio.run(reconcile(ledger))
        machines = ledger.machines(include_ended=a.all)
    if report is not None:
        for name, error in report.errors.items():
            print(f"gpudesk: warning: {accounts.title(name)} not checked: {error}",
                  file=sys.stderr)
        if report.adopted:
            print(f"gpudesk: found {len(report.adopted)} machine(s) the ledger did not know: "
                  + ", ".join(report.adopted), file=sys.stderr)
    if a.json:
        print(json.dumps([_machine_json(m) for m in machines], indent=2))
        return 0
    if not machines:
        print("No machines. Launch one with gpudesk launch ... or the Plan page.")
    for m in machines:
        where = m.zone or m.region or m.public_ip
        print(f"{m.id:<13} {m.provider:<8} {m.cloud_id or '-':<20} {m.instance_type or '-':<18} "
              f"{m.state:<11} {m.market:<10} {where:<16} ${m.spend():.2f}")
    return 0


def _cmd_action(a: argparse.Namespace) -> int:
    from gpudesk.services.cloud.machines import act, resolve

    with Ledger() as ledger:
        machine = resolve(ledger, a.id)
        if a.verb == "terminate" and not _confirm(
                a, f"Terminate {machine.id} ({machine.cloud_id}, {machine.instance_type})? "
                   "Its disk is deleted."):
            return _fail("not confirmed (pass --yes)")
        updated = asyncio.run(act(ledger, a.id, a.verb))
    print(f"{updated.id} {updated.cloud_id}: {updated.state}")
    return 0


def _cmd_add_machine(a: argparse.Namespace) -> int:
    from gpudesk.services.cloud.machines import add_own_machine

    url = urlsplit(a.target if "://" in a.target else f"ssh://{a.target}")
    if url.scheme != "ssh" or not url.hostname:
        return _fail("give the machine as ssh://user@host:port", 2)
    with Ledger() as ledger:
        m = add_own_machine(ledger, a.name, url.hostname, url.port or 22, url.username or "",
                            gpus=a.gpus)
    print(f"{m.id} {m.name}: {m.ssh_user}@{m.public_ip}:{m.ssh_port}")
    return 0


def add_parsers(sub: Any) -> None:
    p = sub.add_parser("accounts", help="cloud keys in the system keyring")
    asub = p.add_subparsers(dest="accounts_verb", required=True)
    q = asub.add_parser("add", help="verify and store keys (the secret comes from stdin)")
    q.add_argument("provider", choices=("aws", "tencent"))
    q.add_argument("--access-key-id", help="AWS access key id")
    q.add_argument("--secret-id", help="Tencent Cloud SecretId")
    q.add_argument("--secret-stdin", action="store_true",
                   help="read the secret from standard input (first line)")
    q.add_argument("--session-token-stdin", action="store_true",
                   help="AWS: read a session token from the second line of standard input")
    q.add_argument("--profile", help="AWS: import a named profile from ~/.aws instead")
    q.add_argument("--no-verify", action="store_true", help="store without checking")
    q.set_defaults(func=_cmd_accounts_add)
    q = asub.add_parser("list", help="the accounts gpudesk has keys for")
    q.add_argument("--json", action="store_true")
    q.set_defaults(func=_cmd_accounts_list)
    q = asub.add_parser("verify", help="check stored keys again")
    q.add_argument("provider", choices=("aws", "tencent"))
    q.set_defaults(func=_cmd_accounts_verify)
    q = asub.add_parser("remove", help="delete stored keys")
    q.add_argument("provider", choices=("aws", "tencent"))
    q.add_argument("--yes", action="store_true")
    q.set_defaults(func=_cmd_accounts_remove)

    p = sub.add_parser("launch", help="rent a machine (writes the ledger first)")
    p.add_argument("--provider", choices=("aws", "tencent"), required=True)
    p.add_argument("--type", required=True, help="instance type, e.g. g5.xlarge")
    p.add_argument("--region", required=True)
    p.add_argument("--zone")
    p.add_argument("--spot", action="store_true")
    p.add_argument("--max-price", type=float,
                   help="spot only; per hour in the provider's currency (AWS USD, Tencent CNY)")
    p.add_argument("--image", help="image id (default: the provider's GPU deep-learning image)")
    p.add_argument("--allow-from", help="the one address (CIDR /32) SSH is opened to")
    p.add_argument("--disk-gb", type=int, default=100)
    p.add_argument("--fallback-region", action="append",
                   help="try this region when the first refuses (repeatable)")
    p.add_argument("--no-wait-ssh", action="store_true", help="return once it runs")
    p.add_argument("--poll", type=float, default=3.0, help=argparse.SUPPRESS)
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=_cmd_launch)

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

    p = sub.add_parser("add-machine", help="use an SSH machine you already have (no billing)")
    p.add_argument("name")
    p.add_argument("target", help="ssh://user@host:port")
    p.add_argument("--gpus", type=int, default=0)
    p.set_defaults(func=_cmd_add_machine)


def handle_error(err: BaseException) -> int | None:
    """Exit status for a service error, after printing it; None if not ours."""
    if isinstance(err, ProviderError):
        detail = f" ({err.detail})" if err.detail and err.kind == "other" else ""
        return _fail(f"{err.message()}{detail}", 2 if err.kind == "invalid" else 1)
    if isinstance(err, credentials.CredentialError):
        return _fail(err.message())
    return None
