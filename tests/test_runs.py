"""``gpudesk run / logs / pull`` against a real sshd, with real torchrun (2 processes, gloo, CPU).

The "machine" is this computer reached over a loopback sshd, so the test can
look into the run folder and kill processes directly. The training script is
``tests/fixtures_training.py`` copied into a project folder (its ``--pause-at``
hooks hold a run at a step until the test releases it), or the quickstart.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import torch
from fixtures_sshd import SshdServer  # noqa: F401
from fixtures_sshd import sshd  # noqa: F401
from fixtures_training import REPO

from gpudesk.agent.runs import pid_alive
from gpudesk.agent.runs import process_tree
from gpudesk.cli import entry as cli
from gpudesk.services.remote.host_keys import HostKeyPolicy
from gpudesk.services.remote.host_keys import PinStore
from gpudesk.services.remote.ssh import SshConnection
from gpudesk.services.remote.ssh import SshTarget
from gpudesk.services.runs import detached as runs

PYTHON = sys.executable  # the test venv's python has torch (CPU)
QUICKSTART = REPO / "examples" / "quickstart"
DEADLINE_S = 90.0


def gpudesk(*argv: str) -> int:
    """The verbs as the gpudesk command runs them."""
    return cli.main(list(argv))


def wait_for(check: Callable[[], bool], what: str, timeout: float = DEADLINE_S) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError(f"no {what} within {timeout}s")
        time.sleep(0.02)  # polling interval, not a timing assumption


def on(server: SshdServer, *pin: str) -> list[str]:
    return ["--on", server.url, "--identity", str(server.client_key), *pin]


def run_cmd(server: SshdServer, remote: Path, project: Path, *opts: str) -> list[str]:
    return ["run", *on(server), "--project", str(project), "--python", PYTHON,
            "--remote-root", str(remote), *opts]


def connect(server: SshdServer) -> SshConnection:
    target = SshTarget.parse(server.url, key_file=server.client_key)
    return SshConnection(target, HostKeyPolicy.expect(server.host_key_fingerprint),
                         store=PinStore()).connect()


def training_project(root: Path, extra: dict[str, str] | None = None) -> Path:
    root.mkdir(parents=True)
    shutil.copy(REPO / "tests" / "fixtures_training.py", root / "train.py")
    for name, text in (extra or {}).items():
        (root / name).write_text(text)
    return root


def run_id_from(capsys: pytest.CaptureFixture[str]) -> str:
    out = capsys.readouterr().out
    first = out.splitlines()[0]
    assert runs.RunRecord.path_of(first).is_file(), out[-2000:]
    return first


def result(out: Path, rank: int = 0) -> dict[str, Any]:
    loaded: dict[str, Any] = torch.load(out / f"result-rank{rank}.pt")
    return loaded


def kill_run(run_dir: Path) -> None:
    """SIGKILL the launcher, torchrun and the workers, as a crashed machine would."""
    pid = int((run_dir / "pid").read_text())
    tree = process_tree(pid)
    assert len(tree) >= 4, tree  # launcher, torchrun, two workers
    for p in tree:
        with contextlib.suppress(ProcessLookupError):
            os.kill(p, signal.SIGKILL)
    wait_for(lambda: not any(pid_alive(p) for p in tree), "end of the killed processes")


@pytest.fixture(autouse=True)
def _clean_runs(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[None]:
    """No training settings from outside; no run left behind by a failed test."""
    for name in ("GPUDESK_AMP", "GPUDESK_CHECKPOINT_EVERY_MIN", "GPUDESK_RUN_DIR"):
        monkeypatch.delenv(name, raising=False)
    yield
    for log in sorted((tmp_path / "machine" / "runs").glob("*/log")):  # shown on a failure
        print(f"--- {log} (last 4000 bytes)\n{log.read_bytes()[-4000:].decode(errors='replace')}")
    for pid_file in (tmp_path / "machine" / "runs").glob("*/pid"):
        with contextlib.suppress(OSError, ValueError):
            for p in process_tree(int(pid_file.read_text())):
                with contextlib.suppress(ProcessLookupError):
                    os.kill(p, signal.SIGKILL)


# ---------------------------------------------------------------------------------- tests


def test_detached_quickstart_then_follow_status_and_incremental_pull(
        sshd: SshdServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:  # noqa: F811
    remote = tmp_path / "machine"
    assert gpudesk(*run_cmd(sshd, remote, QUICKSTART, "--accept-new", "--nproc", "2",
                            "--amp", "bf16", "--detach", "--", "train.py", "--steps", "40",
                            "--checkpoint-every-steps", "20")) == 0
    run_id = run_id_from(capsys)
    record = runs.RunRecord.load(run_id)
    run_dir = Path(record.main.run_dir)
    assert run_dir == remote / "runs" / run_id and (run_dir / "pid").is_file()

    assert gpudesk("logs", run_id, "--follow") == 0  # pinned now: no host-key flag needed
    followed = capsys.readouterr().out
    assert "amp bf16" in followed and "2 process(es), backend gloo" in followed
    assert "finished at step 40" in followed and "validation accuracy" in followed
    assert followed.encode() == (run_dir / "log").read_bytes()
    with connect(sshd) as conn:
        final = runs.status(conn, str(run_dir), PYTHON)
    assert (final.state, final.code, str(final)) == ("exited", 0, "exited(0)")
    assert (run_dir / "command").read_text().startswith(f"{PYTHON} -m torch.distributed.run")

    assert gpudesk("logs", run_id) == 0
    assert capsys.readouterr().out == followed

    local = tmp_path / "results"
    assert gpudesk("pull", run_id, str(local)) == 0
    assert "is exited(0)" in capsys.readouterr().out
    for rel in ("checkpoints/ckpt-000000040.pt", "checkpoints/ckpt-000000020.pt",
                "checkpoints/progress.json", "log", "exit_status"):
        assert (local / rel).read_bytes() == (run_dir / rel).read_bytes(), rel
    assert not (local / "pid").exists()
    assert gpudesk("pull", run_id, str(local)) == 0
    assert capsys.readouterr().out.startswith("pulled 0 files")


def test_a_failing_script_makes_run_exit_with_its_status(
        sshd: SshdServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:  # noqa: F811
    project = training_project(tmp_path / "proj", {"fail.py": (
        "import os, sys\nprint('rank', os.environ['RANK'], 'giving up', flush=True)\n"
        "sys.exit(3)\n")})
    assert gpudesk(*run_cmd(sshd, tmp_path / "machine", project, "--accept-new", "--nproc",
                            "2", "--", "fail.py")) == 3
    captured = capsys.readouterr()
    run_id = captured.out.splitlines()[0]
    assert "rank 1 giving up" in captured.out and "exited with status 3" in captured.err
    record = runs.RunRecord.load(run_id)
    assert Path(record.main.run_dir, "exit_status").read_text() == "3\n"
    assert gpudesk("logs", run_id, "--follow") == 3


def test_dropped_ssh_does_not_stop_the_run_and_follow_reattaches_without_repeats(
        sshd: SshdServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:  # noqa: F811
    project, out = training_project(tmp_path / "proj"), tmp_path / "out"
    assert gpudesk(*run_cmd(sshd, tmp_path / "machine", project, "--accept-new", "--nproc",
                            "2", "--detach", "--", "train.py", "--out", str(out),
                            "--max-steps", "20", "--pause-at", "10")) == 0
    run_id = run_id_from(capsys)
    run_dir = Path(runs.RunRecord.load(run_id).main.run_dir)
    shown, errors = tmp_path / "follow.out", tmp_path / "follow.err"
    with shown.open("wb") as fh_out, errors.open("wb") as fh_err:
        follower = subprocess.Popen(
            [PYTHON, "-m", "gpudesk.cli", "logs", run_id, "--follow"], cwd=REPO,
            stdout=fh_out, stderr=fh_err, stdin=subprocess.DEVNULL)
    try:
        wait_for(lambda: all((out / f"paused-10-rank{r}").exists() for r in (0, 1))
                 and b"step 10/20" in shown.read_bytes(), "pause at step 10 in the followed log")
        assert sshd.kill_sessions() >= 1  # the follower's connection, server side
        with connect(sshd) as conn:
            assert runs.status(conn, str(run_dir), PYTHON).running
        (out / "go-10").touch()
        assert follower.wait(timeout=DEADLINE_S) == 0, errors.read_text()
    finally:
        if follower.poll() is None:
            follower.kill()
    log = (run_dir / "log").read_bytes()
    assert shown.read_bytes() == log  # every line exactly once, none missing
    assert log.count(b"finished at step 20") == 1 and log.count(b"step 10/20") == 1
    assert result(out)["step"] == 20


def test_killed_run_resumes_from_its_checkpoint_to_the_same_weights(
        sshd: SshdServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:  # noqa: F811
    project, remote = training_project(tmp_path / "proj"), tmp_path / "machine"
    steps = ["--max-steps", "20", "--ckpt-steps", "5"]
    whole, broken = tmp_path / "whole", tmp_path / "broken"
    assert gpudesk(*run_cmd(sshd, remote, project, "--accept-new", "--nproc", "2", "--",
                            "train.py", "--out", str(whole), *steps)) == 0
    capsys.readouterr()

    assert gpudesk(*run_cmd(sshd, remote, project, "--nproc", "2", "--detach", "--",
                            "train.py", "--out", str(broken), *steps, "--pause-at", "12")) == 0
    run_id = run_id_from(capsys)
    run_dir = Path(runs.RunRecord.load(run_id).main.run_dir)
    wait_for(lambda: all((broken / f"paused-12-rank{r}").exists() for r in (0, 1)),
             "pause at step 12")
    kill_run(run_dir)
    with connect(sshd) as conn:
        assert runs.status(conn, str(run_dir), PYTHON).state == "lost"
    assert gpudesk("logs", run_id, "--follow") == 1
    assert "stopped without an exit status" in capsys.readouterr().err
    assert (run_dir / "checkpoints" / "ckpt-000000010.pt").is_file()

    (broken / "go-12").touch()  # (the resumed run passes step 12 again)
    assert gpudesk("run", "--resume", run_id) == 0
    captured = capsys.readouterr()
    assert captured.out.splitlines()[0] == run_id
    assert "gpudesk: resuming run (attempt 2)" in captured.out
    assert "resumed from ckpt-000000010.pt at step 10" in captured.out
    assert "starting at step 0" not in captured.out  # only the new attempt is shown
    resumed, baseline = result(broken), result(whole)
    assert (resumed["start_step"], resumed["step"], baseline["start_step"]) == (10, 20, 0)
    assert resumed["losses"] == baseline["losses"][10:]
    assert resumed["state"].keys() == baseline["state"].keys()
    for key in baseline["state"]:
        assert torch.equal(resumed["state"][key], baseline["state"][key]), key


def test_swapped_host_key_refuses_the_run_and_starts_nothing(
        sshd: SshdServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:  # noqa: F811
    project = training_project(tmp_path / "proj", {"hello.py": "print('hello')\n"})
    remote = tmp_path / "machine"
    first = sshd.host_key_fingerprint
    assert gpudesk(*run_cmd(sshd, remote, project, "--host-key", first, "--", "hello.py")) == 0
    assert "hello" in capsys.readouterr().out
    runs_before = sorted(os.listdir(remote / "runs"))
    records_before = sorted(os.listdir(runs.RunRecord.folder()))
    (project / "hello.py").write_text("print('changed')\n")

    new = sshd.restart_with_new_host_key()
    for pin in ((), ("--accept-new",), ("--host-key", first)):
        assert gpudesk(*run_cmd(sshd, remote, project, *pin, "--", "hello.py")) == 1
        err = capsys.readouterr().err
        assert "has changed" in err and first in err and new in err and "Traceback" not in err
    assert sorted(os.listdir(remote / "runs")) == runs_before
    assert sorted(os.listdir(runs.RunRecord.folder())) == records_before
    synced = next((remote / "projects").iterdir()) / "hello.py"
    assert synced.read_text() == "print('hello')\n"  # nothing was synced either

    assert gpudesk(*run_cmd(sshd, remote, project, "--", "missing.py")) == 1
    assert "missing.py is not in the project folder" in capsys.readouterr().err
    assert gpudesk("logs", "no-such-run") == 1
    assert "No run 'no-such-run'" in capsys.readouterr().err


def test_two_nodes_on_one_machine_train_together_with_their_node_ranks(
        sshd: SshdServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:  # noqa: F811
    project, out = training_project(tmp_path / "proj"), tmp_path / "out"
    assert gpudesk(*run_cmd(sshd, tmp_path / "machine", project, "--accept-new", "--nodes",
                            sshd.url, "--nproc", "1", "--", "train.py", "--out", str(out),
                            "--max-steps", "10", "--ckpt-steps", "5")) == 0
    run_id = run_id_from(capsys)
    record = runs.RunRecord.load(run_id)
    assert [Path(n.run_dir).name for n in record.nodes] == [run_id, f"{run_id}-node1"]
    r0, r1 = result(out, 0), result(out, 1)
    assert (r0["world_size"], r1["world_size"], r0["step"]) == (2, 2, 10)
    for key in r0["state"]:
        assert torch.equal(r0["state"][key], r1["state"][key]), key
    ephemeral_low = int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    assert 20000 <= record.master_port < ephemeral_low  # no port the kernel hands out
    for rank, node in enumerate(record.nodes):
        spec = (Path(node.run_dir) / "command").read_text()
        assert (f"--nnodes 2 --node-rank {rank} --master-addr 127.0.0.1 "
                f"--master-port {record.master_port} ") in spec
        assert (Path(node.run_dir) / "exit_status").read_text() == "0\n"
    # Global rank 0 (and with it every checkpoint) is on the first node.
    assert (Path(record.nodes[0].run_dir) / "checkpoints" / "ckpt-000000010.pt").is_file()
    assert not list((Path(record.nodes[1].run_dir) / "checkpoints").glob("ckpt-*"))


def test_a_cpu_run_is_one_process_with_the_gpus_hidden_and_says_cpu(
        sshd: SshdServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:  # noqa: F811
    """``--nproc 0`` (issue 25): a CPU run by choice — one process, CUDA_VISIBLE_DEVICES
    empty, and "CPU" where the CLI says what started."""
    project = tmp_path / "proj"
    project.mkdir()
    (project / "train.py").write_text(
        "import os\nprint('visible=[%s]' % os.environ.get('CUDA_VISIBLE_DEVICES'))\n")
    assert gpudesk(*run_cmd(sshd, tmp_path / "machine", project, "--accept-new", "--nproc",
                            "0", "--", "train.py")) == 0
    captured = capsys.readouterr()
    run_id = captured.out.splitlines()[0]
    assert f"started run {run_id} on " in captured.err and "; CPU)" in captured.err
    record = runs.RunRecord.load(run_id)
    assert record.nproc == 0 and record.cpu
    spec = (Path(record.main.run_dir) / "command").read_text()
    assert "--nproc-per-node 1 " in spec
    log = (Path(record.main.run_dir) / "log").read_text()
    assert "visible=[]" in log, log
