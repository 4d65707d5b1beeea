"""``gpudesk watch --on TARGET [--seconds N] [--json-lines]``: live GPU samples in a terminal.

Makes sure the agent is on the machine and running (uploading it when this
version is not there) with the rules the window's Watch gives it
(``machine_rules.target_rules``: a launched machine's budget, action and role stop
from the ledger; warnings only on your own machine or an ssh:// address), and says
on stderr what a launched machine's agent now enforces when that changed. Then
prints every GPU of every new sample: with ``--json-lines`` one JSON object
per GPU per sample, ``{"time", "gpu", "name", "util_pct", "mem_used_mib",
"mem_total_mib", "temp_c", "power_w"}`` (``time`` in unix seconds, a missing
value ``null``), else one table line. A dropped connection is resumed where
it left off. Exits 0 after ``--seconds`` (or on Ctrl-C, 130), 1 when no
sample came at all or the machine refused us.
"""

from __future__ import annotations

import argparse
import json
import sys
import threading
import time
from typing import TYPE_CHECKING
from typing import Any

from gpudesk.cli import remote as cli_remote
from gpudesk.cli.args import number_of
from gpudesk.cli.errors import said_error
from gpudesk.i18n_marks import QT_TRANSLATE_NOOP

if TYPE_CHECKING:
    from gpudesk.services.remote.telemetry import Hole
    from gpudesk.services.remote.telemetry import TelemetrySample

VERBS = frozenset({"watch"})

MSG_NO_SAMPLES = QT_TRANSLATE_NOOP(
    "Telemetry", "No GPU sample came from {target} within {seconds} seconds. The agent's log "
    "on the machine is {log}.")


def _cell(value: Any, fmt: str = "{:g}", unit: str = "") -> str:
    return "-" if value is None else fmt.format(value) + unit


def table_line(g: dict[str, Any]) -> str:
    stamp = time.strftime("%H:%M:%S", time.localtime(g["time"]))
    mem = (f"{_cell(g['mem_used_mib'])}/{_cell(g['mem_total_mib'])} MiB"
           if g["mem_total_mib"] is not None or g["mem_used_mib"] is not None else "-")
    return (f"{stamp}  gpu {_cell(g['gpu'], '{}'):>2}  {(g['name'] or '-')[:24]:<24}  "
            f"util {_cell(g['util_pct'], unit='%'):>5}  mem {mem:>18}  "
            f"{_cell(g['temp_c'], unit=' C'):>5}  {_cell(g['power_w'], '{:.1f}', ' W'):>8}")


def _cmd_watch(a: argparse.Namespace) -> int:
    from gpudesk.services.remote import agent_deploy
    from gpudesk.services.remote import target_agent
    from gpudesk.services.remote.telemetry import FAILED
    from gpudesk.services.remote.telemetry import TelemetryError
    from gpudesk.services.remote.telemetry import TelemetryStream

    cli_remote.fill_profile_folders(a)  # the machine's profile where not given

    lock = threading.Lock()
    got = threading.Event()
    done = threading.Event()
    out = sys.stdout

    def on_sample(sample: TelemetrySample) -> None:
        with lock:
            for gpu in sample.gpus:
                row = gpu.to_json()
                out.write((json.dumps(row) if a.json_lines else table_line(row)) + "\n")
            out.flush()
        got.set()

    def on_hole(hole: Hole) -> None:
        print(f"gpudesk: {hole.message()}", file=sys.stderr, flush=True)

    def on_state(state: str, detail: str) -> None:
        if state == FAILED:
            done.set()
        elif detail and a.verbose:
            print(f"gpudesk: {state}: {detail}", file=sys.stderr, flush=True)

    with cli_remote.open_target(a) as conn:
        agent = target_agent.deploy(conn, a.target, root=a.remote_root, python=a.python,
                                    nvidia_smi=a.nvidia_smi)
        site = agent.site
        said = agent.line()
        if said is not None:  # what a launched machine's agent enforces, when that changed
            print(f"gpudesk: {said}", file=sys.stderr, flush=True)
        if a.verbose:
            print(f"gpudesk: agent {site.version} pid {site.pid} on {site.target}"
                  f"{' (started)' if site.started else ''}", file=sys.stderr, flush=True)
        stream = TelemetryStream(conn, site.follow_command, on_sample, on_hole=on_hole,
                                 on_state=on_state, since=site.last_seq,
                                 keeper=lambda: agent_deploy.ensure_running(conn, site))
        stream.start()
        try:
            done.wait(a.seconds)  # None: until Ctrl-C or a refusal
        except KeyboardInterrupt:
            stream.stop()
            return 130
        stream.stop()
    if stream.error is not None:
        raise stream.error
    if not got.is_set():
        raise TelemetryError(MSG_NO_SAMPLES, target=site.target, seconds=a.seconds,
                             log=site.log)
    return 0



def add_parsers(sub: Any) -> None:
    p = sub.add_parser("watch", help="print a machine's live GPU samples (starts its agent)")
    cli_remote.add_target_args(p)
    cli_remote.add_machine_folder_args(
        p, python_for="Python 3.8+ on the machine that runs the agent",
        root_for="gpudesk's folder on the machine")
    p.add_argument("--seconds", type=number_of("seconds"), metavar="N",
                   help="stop after N seconds (default: until Ctrl-C)")
    p.add_argument("--json-lines", action="store_true",
                   help="one JSON object per GPU sample, missing values as null")
    p.add_argument("--nvidia-smi", metavar="PATH",
                   help="the nvidia-smi the agent runs when it starts (default: on its PATH)")
    p.add_argument("--verbose", action="store_true", help="report reconnects on stderr")
    p.set_defaults(func=_cmd_watch)


def handle_error(err: BaseException) -> int | None:
    """Exit status for an agent or telemetry error, after printing it; None if not ours."""
    return said_error(err, "gpudesk.services.remote.agent_deploy:AgentDeployError",
                      "gpudesk.services.remote.telemetry:TelemetryError")
