"""CLI verbs that reach a machine over SSH: ``sync`` (and the TARGET rules they share).

A TARGET is a ledger id, cloud id or name, or ``ssh://user@host:port`` with
``--identity KEY_FILE``. Its host key is pinned with ``--host-key SHA256:...``
or ``--accept-new`` (pin on first use, refuse changes), else asked on a
terminal, else refused: a script never trusts a new machine silently.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING
from typing import Any

from gpudesk.cli.errors import said_error

if TYPE_CHECKING:  # paramiko loads only for the verbs that use it (gpudesk size stays quick)
    from gpudesk.services.remote.host_keys import HostKeyPolicy
    from gpudesk.services.remote.ssh import SshConnection
    from gpudesk.services.remote.ssh import SshTarget
    from gpudesk.services.remote.sync import SyncProgress

VERBS = frozenset({"sync"})



def _fail(message: str, code: int = 1) -> int:
    print(f"gpudesk: error: {message}", file=sys.stderr)
    return code


def add_target_args(p: argparse.ArgumentParser, *, required: bool = True) -> None:
    p.add_argument("--on", dest="target", required=required, metavar="TARGET",
                   help="ledger id or name, or ssh://user@host:port")
    add_login_args(p)


def add_login_args(p: argparse.ArgumentParser) -> None:
    """``--identity`` and ``--host-key``/``--accept-new`` for a TARGET however it is named
    (``--on``, or ``queue``'s ID)."""
    p.add_argument("--identity", type=Path, metavar="KEY_FILE",
                   help="private key file (for ssh:// targets or your own machines)")
    add_pin_args(p, accept_new_for="pin the host key on first use (a changed key is still "
                 "refused)")


def add_pin_args(p: argparse.ArgumentParser, *, accept_new_for: str) -> None:
    """``--host-key`` or ``--accept-new`` (one of them), read by :func:`host_key_policy`;
    ``accept_new_for`` says when the command pins."""
    pin = p.add_mutually_exclusive_group()
    pin.add_argument("--host-key", metavar="SHA256:...",
                     help="the machine's host key fingerprint, as ssh-keygen -l prints it")
    pin.add_argument("--accept-new", action="store_true", help=accept_new_for)


# As services.runs and services.remote.agent_deploy; not imported from there, so that `--help`
# does not load paramiko.
REMOTE_PYTHON = "python3"
REMOTE_ROOT = "~/gpudesk"


def add_machine_folder_args(p: argparse.ArgumentParser, *, python_for: str,
                            root_for: str) -> None:
    """``--python`` (the Python on the machine) and ``--remote-root`` (gpudesk's folder
    there); the help says what the command uses each for. Not given, they are the machine
    profile's (``gpudesk add-machine``), else the defaults: :func:`fill_profile_folders`."""
    p.add_argument("--python", default=None, metavar="PATH",
                   help=f"{python_for} (default: the machine's profile, else {REMOTE_PYTHON})")
    p.add_argument("--remote-root", default=None, metavar="DIR",
                   help=f"{root_for} (default: the machine's profile, else {REMOTE_ROOT})")


def add_store_args(p: argparse.ArgumentParser, *, store_for: str) -> None:
    """``--store URI`` (a bucket for runs' checkpoints, logs and outputs; ``store_for`` is its
    help) and ``--store-region`` (that bucket's region), as ``add-machine`` and ``run`` read
    them (``store_check``)."""
    p.add_argument("--store", default="", metavar="URI", help=store_for)
    p.add_argument("--store-region", default="", metavar="REGION",
                   help="the bucket's region (COS and OSS; AWS finds it)")


def fill_profile_folders(a: argparse.Namespace) -> None:
    """``--python`` and ``--remote-root`` left out: the profile of the machine ``--on``
    names (kept by ``gpudesk add-machine`` or the window), else python3 and ~/gpudesk."""
    machine = None
    if (a.python is None or a.remote_root is None) and getattr(a, "target", None):
        from gpudesk.services.runs.machine_access import ledger_machine

        machine = ledger_machine(a.target)
    if a.python is None:
        a.python = (machine.remote_python if machine is not None else "") or REMOTE_PYTHON
    if a.remote_root is None:
        a.remote_root = (machine.remote_root if machine is not None else "") or REMOTE_ROOT


def _ask_on_terminal(name: str, offered: str, key_type: str) -> bool:
    print(f"The machine {name} offers a {key_type} host key that is not pinned yet:\n"
          f"  {offered}\nCompare it with the fingerprint your cloud console or the machine's\n"
          "owner shows. Pin it and connect?", file=sys.stderr)
    try:
        answer = input("[y/N] ")
    except EOFError:
        return False
    return answer.strip().lower() in ("y", "yes")


def host_key_policy(a: argparse.Namespace) -> HostKeyPolicy:
    from gpudesk.services.remote.host_keys import HostKeyPolicy

    if getattr(a, "host_key", None):
        return HostKeyPolicy.expect(a.host_key)
    if getattr(a, "accept_new", False):
        return HostKeyPolicy.accept_new()
    if sys.stdin.isatty() and sys.stderr.isatty():
        return HostKeyPolicy.ask_user(_ask_on_terminal)
    return HostKeyPolicy.refuse()


def resolve_target(a: argparse.Namespace) -> SshTarget:
    """The SshTarget for ``--on``: an ssh:// address, or a machine in the ledger."""
    from gpudesk.services.remote import targets

    return targets.resolve(a.target, getattr(a, "identity", None))


def open_target(a: argparse.Namespace) -> SshConnection:
    """A connected SshConnection for ``--on``; host-key and auth refusals raise."""
    from gpudesk.services.remote import targets

    return targets.open_connection(a.target, getattr(a, "identity", None), host_key_policy(a),
                                   attempts=getattr(a, "attempts", 3))


def _size(n: int) -> str:
    for unit in ("B", "KB", "MB", "GB"):
        if n < 1000 or unit == "GB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1000  # type: ignore[assignment]
    return f"{n} B"  # pragma: no cover


def _progress_printer(enabled: bool) -> Any:
    last = [""]

    def report(p: SyncProgress) -> None:
        if not enabled or p.phase != "send" or not p.files_total:
            return
        line = (f"\r{p.files_done}/{p.files_total} files, "
                f"{_size(p.bytes_done)}/{_size(p.bytes_total)}")
        if line != last[0]:
            last[0] = line
            print(line, end="", file=sys.stderr, flush=True)
    return report


def _cmd_sync(a: argparse.Namespace) -> int:
    from gpudesk.services.remote import sync

    local = Path(a.local_dir)
    listing = (a.dry_run or a.verbose) and not a.json
    # raises SyncError for a missing folder before connecting; the ignored folders are
    # measured (walked) only when they are listed: a big data/ folder costs seconds
    plan = sync.scan(local, measure_skipped=listing)
    if listing:
        for item in plan.skipped:
            count = f", {item.files} files" if item.files else ""
            more = "" if item.complete else " at least"
            print(f"skip {item.path}{'/' if item.is_dir else ''} ({item.reason},{more} "
                  f"{_size(item.size)}{count})")
    with open_target(a) as conn:
        result = sync.push(conn, local, a.remote_dir, delete=a.delete, dry_run=a.dry_run,
                           progress=_progress_printer(sys.stderr.isatty() and not a.json),
                           plan=plan)
    if sys.stderr.isatty() and not a.json:
        print(file=sys.stderr)
    if a.json:
        import json

        print(json.dumps({"files_sent": result.files_sent, "bytes_sent": result.bytes_sent,
                          "deleted": result.deleted, "unchanged": result.unchanged,
                          "skipped": result.skipped, "dry_run": result.dry_run,
                          "sent": list(result.sent), "deleted_paths": list(result.deleted_paths),
                          "errors": list(result.errors), "seconds": round(result.seconds, 3)}))
    else:
        verb = "would send" if a.dry_run else "sent"
        if a.dry_run:
            for path in result.sent:
                print(f"send {path}")
            for path in result.deleted_paths:
                print(f"delete {path}")
        print(f"{verb} {result.files_sent} files ({_size(result.bytes_sent)}), "
              f"{'would delete' if a.dry_run else 'deleted'} {result.deleted}, "
              f"{result.unchanged} unchanged, {result.skipped} skipped"
              + (f" ({_size(plan.skipped_bytes)} not synced)" if listing else "")
              + f" in {result.seconds:.1f} s")
    return 1 if result.errors else 0


def add_parsers(sub: Any) -> None:
    p = sub.add_parser("sync", help="push a project folder to a machine (honours .gitignore)")
    p.add_argument("local_dir")
    p.add_argument("remote_dir", help="folder on the machine (created if missing)")
    add_target_args(p)
    p.add_argument("--delete", action="store_true",
                   help="delete files on the machine that are gone here")
    p.add_argument("--dry-run", action="store_true", help="show what would change; change nothing")
    p.add_argument("--verbose", action="store_true", help="list what .gitignore skips")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=_cmd_sync)


def main_sync(argv: list[str]) -> int:
    """``gpudesk sync ...`` without building every verb's parser: the other verbs' imports
    (cloud SDK glue, the keyring, the sizing tables) would cost more than a small sync."""
    from gpudesk.logs import setup_logging

    # paramiko.config imports ``invoke`` (60 ms) only for ssh_config "Match exec", which
    # gpudesk never reads (it connects with its own pinned keys): not in this process.
    sys.modules.setdefault("invoke", None)  # type: ignore[arg-type]
    parser = argparse.ArgumentParser(prog="gpudesk")
    add_parsers(parser.add_subparsers(dest="verb", required=True))
    a = parser.parse_args(argv)
    setup_logging()
    try:
        result: int = a.func(a)
        return result
    except KeyboardInterrupt:
        print("gpudesk: interrupted", file=sys.stderr)
        return 130
    except Exception as err:
        code = handle_error(err)
        if code is None:
            raise
        return code


def handle_error(err: BaseException) -> int | None:
    """Exit status for an SSH, host-key or sync error, after printing it; None if not ours."""
    return said_error(err, "gpudesk.services.remote.host_keys:HostKeyError",
                      "gpudesk.services.remote.ssh:SshError",
                      "gpudesk.services.remote.sync:SyncError")
