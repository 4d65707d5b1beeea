"""CLI verbs for training runs: ``run``, ``logs`` and ``pull``.

``gpudesk run --on TARGET --project DIR [--nproc N] [--nodes TARGET,...]
[--amp fp16|bf16|off] [--checkpoint-every MIN] [--detach] [--queue] -- SCRIPT ARGS...``
syncs the project, starts the script under torchrun detached on the machine
(``--queue``: adds it to the machine's queue instead, ``gpudesk queue ID``)
and prints the run id; without ``--detach`` it then follows the log and exits
with the run's exit status. ``--resume RUN`` starts a stopped run again in its
own folder, so it carries on from its newest checkpoint.
``gpudesk logs RUN [--follow]`` and ``gpudesk pull RUN LOCAL_DIR`` need only
the run id (the desktop keeps a record of each run); while following, the
run's checkpoints are copied to the desktop. ``gpudesk recover RUN [--on
TARGET]`` resumes a run whose machine is gone on TARGET, or on a machine like
the lost one launched for it: from the run's bucket when it has one that the
machine can reach (its agent fetches the latest checkpoint there; no copy here is
needed), else from those copies. ``--store URI`` gives a new run its own bucket (on any
machine, an own one too); a bucket that is missing, unreachable or refuses the keys is
refused before anything connects. ``--python`` and ``--remote-root`` default to the
machine's profile (``gpudesk add-machine``).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING
from typing import Any

from gpudesk.cli import remote as cli_remote
from gpudesk.cli.args import number_of
from gpudesk.cli.errors import said_error

if TYPE_CHECKING:
    from gpudesk.services.remote.ssh import SshConnection
    from gpudesk.services.runs.detached import RunRecord

VERBS = frozenset({"run", "logs", "pull", "recover"})


def _say(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def _connect(a: argparse.Namespace, ref: str, identity: str | None) -> SshConnection:
    """Open ``ref`` with the host-key flags of ``a`` (a pinned key needs none)."""
    ns = argparse.Namespace(**vars(a))
    ns.target = ref
    ns.identity = a.identity if a.identity is not None else (
        Path(identity) if identity else None)
    return cli_remote.open_target(ns)


def _connect_all(a: argparse.Namespace, refs: list[tuple[str, str | None]]
                 ) -> list[SshConnection]:
    conns: list[SshConnection] = []
    try:
        for ref, identity in refs:
            conns.append(_connect(a, ref, identity))
    except BaseException:
        for conn in conns:
            conn.close()
        raise
    return conns


def _record_conns(a: argparse.Namespace, record: RunRecord, *, main_only: bool = False
                  ) -> list[SshConnection]:
    nodes = record.nodes[:1] if main_only else record.nodes
    refs = [(n.target, n.identity) for n in nodes]
    if a.target:  # --on: the run's first machine is reached another way now
        refs[0] = (a.target, str(a.identity) if a.identity else None)
    return _connect_all(a, refs)


def _finish(conns: list[SshConnection], record: RunRecord, offset: int) -> int:
    from gpudesk.services.runs import detached as runs
    from gpudesk.services.runs import run_upkeep
    from gpudesk.services.runs import spot_recovery

    # A spot machine can vanish: keep copies of the checkpoints here while following.
    mirror = spot_recovery.CheckpointMirror(record, conns[0].policy).start()
    policy = conns[0].policy
    renewer = run_upkeep.KeyRenewer(
        record, lambda: _connect_all_quiet(record, policy), _say).start() \
        if record.store_credentials == "sts" else None
    try:
        final, _ = runs.follow(conns[0], record.main.run_dir, sys.stdout.buffer,
                               python=record.python, offset=offset)
    except KeyboardInterrupt:
        _say(f"\nstopped following; run {record.id} goes on "
             f"(gpudesk logs {record.id} --follow)")
        return 130
    finally:
        mirror.stop(wait_s=60)  # it makes its last copy when it sees the run has ended
        if renewer is not None:
            renewer.stop()
    code = runs.wait_all(conns, record, final)
    if final.teardown:  # every rank finished, then a process aborted on its way out
        _say(f"run {record.id} finished: every rank wrote its final checkpoint and said "
             f"so; the exit status {final.code} came from a process's teardown after that "
             "(the lines after 'finished at step'), not from training")
    else:
        _say(f"run {record.id} exited with status {code}")
    kept = run_upkeep.expire_after_end(record, final)
    if kept is not None:
        _say(kept)
    from gpudesk.services.runs import keep_alive_run

    keep_alive_run.run_ended(record, final, _say)
    return code


def _connect_all_quiet(record: RunRecord, policy: Any) -> SshConnection:
    """A connection of its own for the key renewer (the follower holds the first)."""
    from gpudesk.services.runs.run_control import connect_all
    from gpudesk.services.runs.run_control import record_refs

    return connect_all(record_refs(record)[:1], policy)[0]


def _cmd_run(a: argparse.Namespace) -> int:
    from gpudesk.services.runs import detached as runs

    cli_remote.fill_profile_folders(a)  # the machine's profile where not given

    command = list(a.command)
    if command[:1] == ["--"]:
        command = command[1:]
    if a.store and (a.resume or a.queue):
        print("gpudesk: error: --store is for a new run started now (a resumed run keeps "
              "its bucket; a queued run uses the machine's profile)", file=sys.stderr)
        return 2
    store_uri = store_region = ""
    data: dict[str, str] = {}
    if a.data and (a.resume or a.queue):
        print("gpudesk: error: --data is for a new run started now (a resumed run keeps "
              "its dataset)", file=sys.stderr)
        return 2
    if a.resume:
        record = runs.RunRecord.load(a.resume)
        if command:
            record.script, record.args = command[0], command[1:]
        conns = _record_conns(a, record)
    else:
        if not a.target or not a.project or not command:
            print("gpudesk: error: run needs --on TARGET, --project DIR and -- SCRIPT ARGS "
                  "(or --resume RUN)", file=sys.stderr)
            return 2
        runs.script_in_project(Path(a.project), command[0])  # before connecting anywhere
        from gpudesk.services.runs import machine_access

        if a.data:  # the dataset's bucket becomes the run's (issue 32)
            from gpudesk.services.runs import run_data

            data, a.store, a.store_region = run_data.resolve(
                a.data, a.store, a.store_region,
                machine=machine_access.ledger_machine(a.target))
        # a bucket that is missing, unreachable or refuses the keys: refused before anything
        store_uri, store_region = machine_access.checked_run_store(
            machine_access.ledger_machine(a.target), a.store, a.store_region)
        identity = str(a.identity) if a.identity else None
        refs = [(a.target, identity)]
        refs += [(ref.strip(), identity) for ref in (a.nodes or "").split(",") if ref.strip()]
        conns = _connect_all(a, refs)
    from gpudesk.services.runs import machine_access

    try:
        if a.resume:
            # short-lived bucket keys end: a resume gets new ones (a role is reused)
            store = (machine_access.access_for_target(
                a.target or record.main.target, record.id, uri=record.store_uri,
                role=record.store_role, region=record.store_region)
                if record.store_uri else None)
            from gpudesk.services.runs import run_upkeep

            run_upkeep.keep_folder(record, _say)
            record = runs.resume(conns, record, report=_say, store=store,
                                 project=Path(a.project) if a.project else None)
        else:
            request = runs.RunRequest(
                project=Path(a.project), script=command[0], args=command[1:], nproc=a.nproc,
                amp=a.amp, checkpoint_every_min=a.checkpoint_every, python=a.python,
                root=a.remote_root, data=data)
            if a.queue:  # added to the machine's queue; its agent starts it in turn
                from gpudesk.services.runs import run_queue

                if len(conns) > 1:
                    raise run_queue.QueueError(run_queue.MSG_NO_MULTI_NODE)
                record = run_queue.add(conns[0], refs[0], request, report=_say)
                print(record.id, flush=True)
                return 0
            store = None
            machine = machine_access.ledger_machine(refs[0][0])
            if store_uri or (machine is not None and machine_access.wants_store(machine)):
                request.run_id = runs.new_run_id(Path(a.project).resolve().name)
                store = machine_access.run_access(machine, request.run_id, store_uri,
                                                  store_region)
            record = runs.launch(conns, refs, request, report=_say, store=store)
            if machine is not None and machine.group_live:  # its group resumes it (issue 23)
                from gpudesk.services.runs import keep_alive_run

                keep_alive_run.run_started(record, machine, _say)
        print(record.id, flush=True)
        if a.detach:
            return 0
        return _finish(conns, record, record.log_offset)
    finally:
        for conn in conns:
            conn.close()


def _cmd_logs(a: argparse.Namespace) -> int:
    from gpudesk.services.runs import detached as runs

    record = runs.RunRecord.load(a.run)
    conns = _record_conns(a, record, main_only=not a.follow)
    try:
        if not a.follow:
            runs.follow(conns[0], record.main.run_dir, sys.stdout.buffer, python=record.python,
                        until_end=False)
            return 0
        return _finish(conns, record, 0)
    finally:
        for conn in conns:
            conn.close()


def _cmd_pull(a: argparse.Namespace) -> int:
    from gpudesk.services.runs import detached as runs

    record = runs.RunRecord.load(a.run)
    (conn,) = _record_conns(a, record, main_only=True)
    with conn:
        result = runs.pull(conn, record, Path(a.local_dir))
        now = runs.status(conn, record.main.run_dir, record.python)
    print(f"pulled {result.files_sent} files ({result.bytes_sent} bytes), "
          f"{result.unchanged} unchanged; run {record.id} is {now}")
    return 0


def _cmd_recover(a: argparse.Namespace) -> int:
    import asyncio

    from gpudesk.services.runs import detached as runs
    from gpudesk.services.runs import spot_recovery

    record = runs.RunRecord.load(a.run)
    root = a.remote_root
    if a.target:
        ref, identity = a.target, str(a.identity) if a.identity else None
        policy = cli_remote.host_key_policy(a)
        from gpudesk.services.runs.machine_access import ledger_machine

        profile = ledger_machine(a.target)  # an added machine: its Python and folder
        if profile is not None:
            root = root or profile.remote_root or None
            record.python = profile.remote_python or record.python
    else:
        from gpudesk.services.cloud.launcher import Launcher
        from gpudesk.services.money.ledger import Ledger

        with Ledger() as ledger:
            def progress(p: Any) -> None:
                _say(f"launch: {p.step} {p.status} {p.message}".rstrip())

            _say(f"launching a machine like {record.main.target} for run {record.id}")
            from gpudesk.services.core.settings import load_settings
            from gpudesk.services.remote.first_boot import for_launch
            from gpudesk.services.storage.store_check import check_launch_store

            launcher = Launcher(ledger, first_boot=for_launch(load_settings, ledger),
                                store_check=check_launch_store)
            ref = asyncio.run(spot_recovery.relaunch_like(launcher, record.main.target,
                                                          progress))
        identity = None
        policy = spot_recovery.replacement_policy(ref)  # its own key, pinned at launch
    record = spot_recovery.recover(record, ref, identity, policy, report=_say, root=root)
    print(record.id, flush=True)
    return 0



def add_parsers(sub: Any) -> None:
    p = sub.add_parser("run", help="train on a machine under torchrun, detached")
    cli_remote.add_target_args(p, required=False)
    cli_remote.add_machine_folder_args(
        p, python_for="the Python with torch on the machine",
        root_for="folder on the machine for projects and runs")
    p.add_argument("--project", metavar="DIR", help="the project folder to sync and run in")
    p.add_argument("--nproc", type=int, default=1, metavar="N",
                   help="processes per machine, one per GPU (default 1); 0: a CPU run, "
                   "one process with the GPUs hidden from it")
    p.add_argument("--nodes", metavar="TARGET,...",
                   help="more machines for a multi-node run (--on is the first node)")
    p.add_argument("--amp", choices=("fp16", "bf16", "off"),
                   help="mixed precision for gpudesk.training (default: the script's)")
    p.add_argument("--checkpoint-every", type=number_of("minutes"), metavar="MIN",
                   help="checkpoint interval in minutes for gpudesk.training")
    p.add_argument("--detach", action="store_true",
                   help="print the run id and return; the run goes on")
    p.add_argument("--queue", action="store_true",
                   help="add the run to the machine's queue instead of starting it: the "
                   "agent starts it when the GPUs it asks for are free (gpudesk queue ID)")
    p.add_argument("--resume", metavar="RUN", help="start a stopped run again, from its "
                   "newest checkpoint")
    cli_remote.add_store_args(
        p, store_for="keep this run's checkpoints, logs and outputs in this bucket "
        "(s3://bucket/prefix, cos://bucket-appid/prefix, oss://bucket/prefix) instead of the "
        "machine's; checked before the run starts. The machine gets short-lived keys limited "
        "to the run's folder")
    p.add_argument("--data", default="", metavar="NAME[:/PATH]",
                   help="a dataset pushed with 'gpudesk data push': the machine fetches it "
                   "from its bucket (the run's) before the script starts, at PATH or "
                   "its cache, named by GPUDESK_DATA_DIR; or a public source the machine "
                   "fetches itself: https://host/file, s3://|cos://|oss://bucket/prefix "
                   "(anonymous read), hf:ORG/NAME[@revision] (a Hugging Face dataset)")
    p.add_argument("command", nargs=argparse.REMAINDER, metavar="-- SCRIPT ARGS")
    p.set_defaults(func=_cmd_run)

    p = sub.add_parser("logs", help="print a run's log")
    p.add_argument("run", metavar="RUN")
    p.add_argument("--follow", action="store_true",
                   help="keep printing until the run ends; exit with its status")
    cli_remote.add_target_args(p, required=False)
    p.set_defaults(func=_cmd_logs)

    p = sub.add_parser("pull", help="copy a run's checkpoints, logs and metrics here")
    p.add_argument("run", metavar="RUN")
    p.add_argument("local_dir", metavar="LOCAL_DIR")
    cli_remote.add_target_args(p, required=False)
    p.set_defaults(func=_cmd_pull)

    p = sub.add_parser("recover", help="resume a run whose machine is gone, from its "
                       "bucket or the checkpoints copied to this computer")
    p.add_argument("run", metavar="RUN")
    cli_remote.add_target_args(p, required=False)
    p.add_argument("--remote-root", metavar="DIR", help="gpudesk's folder on the new "
                   "machine (default: the run's)")
    p.set_defaults(func=_cmd_recover)


def handle_error(err: BaseException) -> int | None:
    """Exit status for a run error, after printing it; None if not ours."""
    return said_error(err, "gpudesk.services.runs.detached:RunError",
                      "gpudesk.services.runs.spot_recovery:RecoveryError")
