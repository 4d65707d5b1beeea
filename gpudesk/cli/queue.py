"""CLI verb ``queue``: a machine's run queue, and cancelling from it.

``gpudesk queue ID [--json] [--cancel RUN|all]`` (ID: a ledger machine or
``ssh://user@host:port``, with ``--identity``/``--host-key``/``--accept-new`` as for
``--on``). Runs are added with ``gpudesk run … --queue``. ``--json`` prints
``{"machine", "gpus", "agent_running", "entries": [{"run", "state", "gpus", "devices",
"queued_at", "started_at", "ended_at", "exit_code", "reason"}]}``. Without an agent on
the machine the queue is printed as it is, with a line saying that nothing starts it.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from typing import TYPE_CHECKING
from typing import Any

from gpudesk.cli import remote as cli_remote
from gpudesk.cli.errors import said_error

if TYPE_CHECKING:
    from gpudesk.services.runs.run_queue import QueueEntry

VERBS = frozenset({"queue"})


def _when(t: float | None) -> str:
    return time.strftime("%m-%d %H:%M:%S", time.localtime(t)) if t else "-"


def _line(e: QueueEntry) -> str:
    end = f"exit {e.exit_code}" if e.exit_code is not None else ""
    return (f"{e.run:<40} {e.state:<10} {e.gpus:>2} GPU(s) {e.devices or '-':<16} "
            f"queued {_when(e.queued_at)}  started {_when(e.started_at)}  "
            f"ended {_when(e.ended_at)} {end}").rstrip() + (f"\n    {e.reason}" if e.reason
                                                           else "")


def _cmd_queue(a: argparse.Namespace) -> int:
    from gpudesk.services.runs import run_queue

    cli_remote.fill_profile_folders(a)  # the machine's profile where not given

    with cli_remote.open_target(a) as conn:
        if a.cancel:
            changed = run_queue.cancel(conn, a.target, a.cancel, root=a.remote_root,
                                       python=a.python)
            for e in changed:
                print(f"cancelled {e.run}" + (" (stopping)" if e.state == "running" else ""),
                      file=sys.stderr)
        view = run_queue.read(conn, a.target, root=a.remote_root, python=a.python)
    if a.json:
        print(json.dumps(view.to_json(), indent=2))
    else:
        gpus = "?" if view.gpus is None else str(view.gpus)
        print(f"{view.machine}: {gpus} GPU(s), {len(view.open)} queued or running")
        for e in view.entries:
            print(_line(e))
    note = view.note()
    if note is not None:
        print(f"gpudesk: {note}", file=sys.stderr)
    return 0


def add_parsers(sub: Any) -> None:
    p = sub.add_parser("queue", help="a machine's run queue (gpudesk run --queue adds to it)")
    p.add_argument("target", metavar="ID", help="ledger id or name, or ssh://user@host:port")
    cli_remote.add_login_args(p)
    cli_remote.add_machine_folder_args(p, python_for="the Python on the machine",
                                       root_for="gpudesk's folder on the machine")
    p.add_argument("--cancel", metavar="RUN|all", help="cancel one run, or every open one")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=_cmd_queue)


def handle_error(err: BaseException) -> int | None:
    """Exit status for a queue error, after printing it; None if not ours."""
    return said_error(err, "gpudesk.services.runs.run_queue:QueueError")
