"""CLI verbs for getting a machine ready and reaching it: ``bootstrap``, ``ssh-config``, ``cancel``.

``gpudesk bootstrap --on TARGET [--project DIR]`` checks driver, CUDA, Python and
torch in one round trip, installs the project's requirements.txt into a cached
venv on the machine, prints each check with its fix and exits 1 on any error.
``gpudesk ssh-config [--include] [--yes]`` writes the managed ssh_config; with
``--include`` it adds the one Include line to ``~/.ssh/config`` (asks y/N on a
terminal unless ``--yes``; refuses without consent otherwise).
``gpudesk cancel RUN`` stops a run (SIGTERM to torchrun on every node) and waits
for its exit status. It is not called ``stop``: ``gpudesk stop`` already stops a
*machine* (cli_cloud), and mixing up the two would cost money or a run.
"""

from __future__ import annotations

import argparse
import json
import sys
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING
from typing import Any

from gpudesk.cli import remote as cli_remote
from gpudesk.cli.args import number_of
from gpudesk.cli.errors import said_error

if TYPE_CHECKING:
    from gpudesk.services.remote.bootstrap import BootstrapReport
    from gpudesk.services.remote.bootstrap import Note

VERBS = frozenset({"bootstrap", "ssh-config", "cancel"})
CANCEL_WAIT_S = 30.0


def _say(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def _env_pairs(items: list[str] | None) -> dict[str, str]:
    env: dict[str, str] = {}
    for item in items or []:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise argparse.ArgumentTypeError(f"'{item}' is not NAME=VALUE")
        env[key] = value
    return env


# --------------------------------------------------------------------------- bootstrap

def _print_report(report: BootstrapReport) -> None:
    for c in report.checks:
        print(f"{c.level:<8} {c.name:<7} {c.message}")


def _report_json(report: BootstrapReport, requirements: dict[str, Any] | None) -> str:
    return json.dumps({
        "target": report.target, "ok": report.ok, "python": report.python,
        "checks": [{"name": c.name, "level": c.level, "message": c.message}
                   for c in report.checks],
        "facts": {k: v for k, v in report.facts.__dict__.items()
                  if k not in ("smi_output", "python_output")},
        "requirements": requirements}, default=list)


def _cmd_bootstrap(a: argparse.Namespace) -> int:
    from gpudesk.services.remote import bootstrap
    from gpudesk.services.runs.detached import project_folder_name

    cli_remote.fill_profile_folders(a)  # the machine's profile where not given

    try:
        env = _env_pairs(a.env)
    except argparse.ArgumentTypeError as err:
        print(f"gpudesk: error: --env: {err}", file=sys.stderr)
        return 2
    project = Path(a.project) if a.project else None
    if project is not None and not project.is_dir():
        print(f"gpudesk: error: --project: {project} is not a folder", file=sys.stderr)
        return 2
    root = a.remote_root.rstrip("/")
    venv = f"{root}/venvs/{project_folder_name(project)}" if project is not None else None
    path_prefix = ":".join(a.path or [])
    requirements: dict[str, Any] | None = None

    def progress(note: Note) -> None:
        if not a.json:
            _say(note.text)

    with cli_remote.open_target(a) as conn:
        report = bootstrap.check_machine(conn, python=a.python, path_prefix=path_prefix,
                                         env=env, venv=venv)
        python_ok = report.check("python") is not None and report.check(
            "python").level != "error"  # type: ignore[union-attr]
        if project is not None and venv is not None and python_ok and not a.no_install:
            remote_project = f"{root}/projects/{project_folder_name(project)}"
            result = bootstrap.ensure_requirements(
                conn, project, venv, python=a.python, cwd=remote_project,
                path_prefix=path_prefix, env=env, progress=progress)
            requirements = {"venv": result.venv, "python": result.python,
                            "cached": result.cached, "installed": result.installed,
                            "message": result.note.text}
            if result.installed:  # torch may have come with the requirements: look again
                report = bootstrap.check_machine(conn, python=a.python,
                                                 path_prefix=path_prefix, env=env, venv=venv)
    if a.json:
        print(_report_json(report, requirements))
    else:
        _print_report(report)
        if requirements and requirements["python"] != a.python:
            print(f"train with this environment: gpudesk run --python {requirements['python']}"
                  " ...")
    return 0 if report.ok else 1


# --------------------------------------------------------------------------- ssh-config

def _consent(a: argparse.Namespace, config: Path, line: str) -> bool:
    if a.yes:
        return True
    if not (sys.stdin.isatty() and sys.stderr.isatty()):
        return False
    _say(f"gpudesk will add this one line at the top of {config}:\n  {line}\n"
         "Nothing else in that file changes; `gpudesk ssh-config --remove-include` takes it "
         "out again.")
    try:
        answer = input("Add it? [y/N] ")
    except EOFError:
        return False
    return answer.strip().lower() in ("y", "yes")


def _cmd_ssh_config(a: argparse.Namespace) -> int:
    from gpudesk.services.cloud.machines import resolve
    from gpudesk.services.money.ledger import Ledger
    from gpudesk.services.remote import ssh_config

    config = ssh_config.user_ssh_config()
    if a.remove_include:
        state = ssh_config.remove_include()
        done = "removed the Include line from" if state == "removed" else "no gpudesk Include in"
        print(f"{done} {config}")
        return 0
    with Ledger() as ledger:
        for item in a.identity or []:
            ref, sep, key_file = item.partition("=")
            if not sep or not ref or not key_file:
                print(f"gpudesk: error: --identity: '{item}' is not MACHINE=KEY_FILE",
                      file=sys.stderr)
                return 2
            ssh_config.remember_identity(resolve(ledger, ref).id, Path(key_file))
        machines = ledger.machines(include_ended=False)
    if a.agent:
        keys = sorted({ssh_config.cloud_key_name(m) for m in machines
                       if m.provider != "own" and ssh_config.reachable(m)})
        lifetime = int(a.agent_lifetime * 60) if a.agent_lifetime else None
        for pub in ssh_config.add_keys_to_agent(keys, lifetime_s=lifetime):
            print(f"added the key {pub.stem} to ssh-agent (public half in {pub})")
    written = ssh_config.write_managed_config(machines)
    names = ", ".join(b.alias for b in written.blocks) or "no machine is reachable now"
    print(f"{'wrote' if written.changed else 'unchanged:'} {written.path}: {names}")
    line = ssh_config.include_line()
    if a.include:
        if ssh_config.has_include():
            print(f"{config} already includes it")
        elif not _consent(a, config, line):
            print(f"gpudesk: error: {config} was not changed: adding the Include line needs "
                  "your consent (answer y, or run again with --yes)", file=sys.stderr)
            return 1
        else:
            ssh_config.add_include(consent=True)
            print(f"added to the top of {config}: {line}")
    elif not ssh_config.has_include():
        print(f"to use `ssh gpudesk-<name>`, run gpudesk ssh-config --include, or put this "
              f"line at the top of {config}:\n  {line}")
    return 0


# --------------------------------------------------------------------------- cancel

def _cmd_cancel(a: argparse.Namespace) -> int:
    from gpudesk.cli import runs as cli_runs
    from gpudesk.services.runs import detached as runs

    record = runs.RunRecord.load(a.run)
    conns = cli_runs._record_conns(a, record)
    try:
        before = runs.status(conns[0], record.main.run_dir, record.python)
        if not before.running:
            print(f"run {record.id} is not running: {before}")
            return 0
        for conn, node in zip(conns, record.nodes, strict=True):
            runs.stop(conn, node.run_dir, record.python)
        deadline = time.monotonic() + a.wait
        pause = threading.Event()
        finals: list[runs.RunStatus] = []
        for conn, node in zip(conns, record.nodes, strict=True):
            now = runs.status(conn, node.run_dir, record.python)
            while now.running and time.monotonic() < deadline:
                pause.wait(0.2)  # polling the run folder for its exit status
                now = runs.status(conn, node.run_dir, record.python)
            finals.append(now)
    finally:
        for conn in conns:
            conn.close()
    if any(s.running for s in finals):
        print(f"gpudesk: error: run {record.id} is still running {a.wait:g} s after the stop "
              "signal; try again, or stop the machine", file=sys.stderr)
        return 1
    print(f"run {record.id} stopped: {finals[0]}")
    return 0


# --------------------------------------------------------------------------- parsers


def add_parsers(sub: Any) -> None:
    p = sub.add_parser("bootstrap", help="check driver, CUDA, Python and torch on a machine; "
                       "install requirements.txt into a venv there")
    cli_remote.add_target_args(p)
    p.add_argument("--project", metavar="DIR",
                   help="install DIR/requirements.txt into a venv on the machine (cached)")
    cli_remote.add_machine_folder_args(
        p, python_for="the Python to check and build the venv from",
        root_for="folder on the machine for venvs")
    p.add_argument("--no-install", action="store_true", help="only check; install nothing")
    p.add_argument("--path", action="append", metavar="DIR",
                   help="look for tools here first on the machine (e.g. /usr/local/cuda/bin)")
    p.add_argument("--env", action="append", metavar="NAME=VALUE",
                   help="environment for the checks and pip (e.g. PIP_INDEX_URL=...)")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=_cmd_bootstrap)

    p = sub.add_parser("ssh-config", help="write the ssh_config for `ssh gpudesk-<name>` "
                       "and VS Code")
    inc = p.add_mutually_exclusive_group()
    inc.add_argument("--include", action="store_true",
                     help="add one Include line to ~/.ssh/config (asks first)")
    inc.add_argument("--remove-include", action="store_true",
                     help="take gpudesk's Include line out of ~/.ssh/config")
    p.add_argument("--yes", action="store_true", help="consent without asking")
    p.add_argument("--identity", action="append", metavar="MACHINE=KEY_FILE",
                   help="the key file for one of your own machines (remembered)")
    p.add_argument("--agent", action="store_true",
                   help="hand the keyring's keys of launched machines to ssh-agent")
    p.add_argument("--agent-lifetime", type=float, metavar="MIN",
                   help="with --agent: the agent forgets the keys after MIN minutes")
    p.set_defaults(func=_cmd_ssh_config)

    p = sub.add_parser("cancel", help="stop a training run (not the machine) and wait for it")
    p.add_argument("run", metavar="RUN")
    p.add_argument("--wait", type=number_of("seconds", zero_ok=True), default=CANCEL_WAIT_S,
                   metavar="S",
                   help=f"seconds to wait for the run to end (default {CANCEL_WAIT_S:g})")
    cli_remote.add_target_args(p, required=False)
    p.set_defaults(func=_cmd_cancel)


def handle_error(err: BaseException) -> int | None:
    """Exit status for a bootstrap or ssh-config error, after printing it; None if not ours."""
    return said_error(err, "gpudesk.services.remote.bootstrap:BootstrapError",
                      "gpudesk.services.remote.ssh_config:SshConfigError")
