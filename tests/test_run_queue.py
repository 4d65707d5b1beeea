"""The desktop's side of the run queue against a real sshd: ``gpudesk run --queue`` pushes
the project and adds the run, ``gpudesk queue ID`` reads it and cancels, and the agent's
part (``agent/queue.py``, ticked here with the stand-in nvidia-smi reporting 8 GPUs)
starts the queued runs under real torchrun (gloo, CPU) with their own GPUs.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fixtures_agent import FakeSmi  # noqa: F401
from fixtures_agent import fake_smi  # noqa: F401
from fixtures_agent import wait_for  # noqa: F401
from fixtures_sshd import SshdServer  # noqa: F401
from fixtures_sshd import sshd  # noqa: F401

from gpudesk.agent import queue as q
from gpudesk.agent.runs import process_tree
from gpudesk.agent.smi import gpu_count
from gpudesk.cli import entry as cli
from gpudesk.services.remote.host_keys import HostKeyPolicy
from gpudesk.services.remote.host_keys import PinStore
from gpudesk.services.remote.ssh import SshConnection
from gpudesk.services.remote.ssh import SshTarget
from gpudesk.services.runs import detached as runs
from gpudesk.services.runs import run_queue

PYTHON = sys.executable  # the test venv's python has torch (CPU)


@pytest.fixture(autouse=True)
def _agent_played_here(monkeypatch: pytest.MonkeyPatch) -> None:
    """The agent is played by the test's ticks: queueing starts none (issue 31)."""
    monkeypatch.setattr(run_queue, "start_agent", lambda *_a, **_k: None)


TRAIN = """\
import json, os, sys
out = sys.argv[1]
name = f"{os.environ['GPUDESK_RUN_ID']}-rank{os.environ.get('RANK', '0')}"
with open(os.path.join(out, name + ".tmp"), "w") as f:
    json.dump(dict(os.environ), f)
os.replace(os.path.join(out, name + ".tmp"), os.path.join(out, name + ".json"))
print("step 1 loss 0.5", flush=True)
"""


@pytest.fixture
def remote(tmp_path: Path) -> Iterator[Path]:
    root = tmp_path / "machine"
    yield root
    for pid_file in (root / "runs").glob("*/pid"):
        with contextlib.suppress(OSError, ValueError):
            for pid in process_tree(int(pid_file.read_text())):
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)


def target(server: SshdServer) -> list[str]:
    return ["--identity", str(server.client_key), "--host-key", server.host_key_fingerprint]


def queue_json(server: SshdServer, root: Path, capsys: pytest.CaptureFixture[str],
               *extra: str) -> tuple[dict[str, Any], str]:
    assert cli.main(["queue", server.url, *target(server), "--python", PYTHON,
                     "--remote-root", str(root), "--json", *extra]) == 0
    out = capsys.readouterr()
    data: dict[str, Any] = json.loads(out.out)
    return data, out.err


def queue_run(server: SshdServer, root: Path, project: Path, out: Path, nproc: int,
              capsys: pytest.CaptureFixture[str]) -> str:
    assert cli.main(["run", "--on", server.url, *target(server), "--project", str(project),
                     "--python", PYTHON, "--remote-root", str(root), "--nproc", str(nproc),
                     "--queue", "--", "train.py", str(out)]) == 0
    captured = capsys.readouterr()
    run_id = captured.out.strip().splitlines()[0]
    assert f"queued run {run_id}" in captured.err
    return run_id


def test_queue_from_the_command_line_runs_side_by_side_and_cancels(
        sshd: SshdServer, remote: Path, tmp_path: Path, fake_smi: FakeSmi,  # noqa: F811
        capsys: pytest.CaptureFixture[str]) -> None:
    fake_smi.scenario("a100x8")
    project = tmp_path / "proj"
    project.mkdir()
    (project / "train.py").write_text(TRAIN)
    out = tmp_path / "out"
    out.mkdir()
    first = queue_run(sshd, remote, project, out, 4, capsys)
    second = queue_run(sshd, remote, project, out, 4, capsys)
    third = queue_run(sshd, remote, project, out, 2, capsys)
    # queued, not started: nothing ran, and no agent keeps the queue: said, not pretended
    data, err = queue_json(sshd, remote, capsys)
    assert data["machine"] == sshd.url and data["gpus"] is None
    assert data["agent_running"] is False and "No gpudesk agent keeps the queue" in err
    assert [(e["run"], e["state"], e["gpus"], e["devices"]) for e in data["entries"]] == [
        (first, "queued", 4, None), (second, "queued", 4, None), (third, "queued", 2, None)]
    assert not list(out.iterdir()) and not (remote / "runs").exists()
    record = runs.RunRecord.load(first)
    assert record.last_state == "queued" and record.main.run_dir == f"{remote}/runs/{first}"
    assert (remote / "projects").is_dir() and (remote / "lib" / "gpudesk" / "training").is_dir()
    # cancel the third before any agent looks
    assert cli.main(["queue", sshd.url, *target(sshd), "--python", PYTHON,
                     "--remote-root", str(remote), "--cancel", third]) == 0
    assert f"cancelled {third}" in capsys.readouterr().err
    # the machine's agent ticks the queue (here in-process, on the same folder)
    rq = q.RunQueue(remote / "queue", lambda: gpu_count(str(fake_smi.exe)))
    rq.tick()
    data, err = queue_json(sshd, remote, capsys)
    assert data["gpus"] == 8 and data["agent_running"] is True and err == ""
    states = {e["run"]: (e["state"], e["devices"]) for e in data["entries"]}
    assert states[third] == ("cancelled", None)
    # both started at the same tick, side by side, on GPUs apart
    assert states[first][1] == "0,1,2,3"
    assert states[second][1] == "4,5,6,7"
    conn = _connect(sshd)

    def ended() -> bool:
        rq.tick()
        return all(e.state == "succeeded" for e in run_queue.read(
            conn, sshd.url, root=str(remote), python=PYTHON).entries[:2])
    wait_for(ended, timeout=120, what="both queued runs to finish")
    seen = {}
    for run, devices in ((first, "0,1,2,3"), (second, "4,5,6,7")):
        for rank in range(4):  # torchrun's four workers of each run saw its GPUs only
            env = json.loads((out / f"{run}-rank{rank}.json").read_text())
            assert env["CUDA_VISIBLE_DEVICES"] == devices and env["WORLD_SIZE"] == "4"
            seen[(run, rank)] = env["GPUDESK_RUN_DIR"]
    assert seen[(first, 0)] == f"{remote}/runs/{first}/checkpoints"
    data, _ = queue_json(sshd, remote, capsys)
    done = {e["run"]: e for e in data["entries"]}
    assert done[first]["exit_code"] == 0 and done[first]["ended_at"] >= done[first]["started_at"]
    # a queued run is an ordinary run once started: its log and status by its id
    assert cli.main(["logs", first]) == 0
    assert "step 1 loss 0.5" in capsys.readouterr().out
    # cancel all: two new 8-GPU runs waiting in the queue
    more = [queue_run(sshd, remote, project, out, 8, capsys) for _ in range(2)]
    data, _ = queue_json(sshd, remote, capsys, "--cancel", "all")
    states = {e["run"]: e["state"] for e in data["entries"]}
    assert [states[r] for r in more] == ["cancelled", "cancelled"]
    with pytest.raises(run_queue.QueueError, match="No queued or running run"):
        run_queue.cancel(conn, sshd.url, more[0], root=str(remote), python=PYTHON)
    conn.close()
    assert cli.main(["queue", sshd.url, *target(sshd), "--python", PYTHON,
                     "--remote-root", str(remote), "--cancel", "nope"]) == 1
    assert "No queued or running run 'nope'" in capsys.readouterr().err


def test_a_running_queued_run_is_stopped_by_cancel(
        sshd: SshdServer, remote: Path, tmp_path: Path, fake_smi: FakeSmi,  # noqa: F811
        capsys: pytest.CaptureFixture[str]) -> None:
    fake_smi.scenario("a100x8")
    project = tmp_path / "proj"
    project.mkdir()
    (project / "train.py").write_text("import time\nprint('step 0', flush=True)\n"
                                      "time.sleep(300)\n")
    run = queue_run(sshd, remote, project, tmp_path, 0, capsys)  # a CPU run holds no GPU
    rq = q.RunQueue(remote / "queue", lambda: gpu_count(str(fake_smi.exe)))
    rq.tick()
    conn = _connect(sshd)
    view = run_queue.read(conn, sshd.url, root=str(remote), python=PYTHON)
    assert [(e.run, e.state, e.devices) for e in view.entries] == [(run, "running", None)]
    wait_for(lambda: "step 0" in (remote / "runs" / run / "log").read_text(),
             what="the run to print")
    changed = run_queue.cancel(conn, sshd.url, run, root=str(remote), python=PYTHON)
    assert [(e.run, e.state) for e in changed] == [(run, "running")]  # stopping

    def cancelled() -> bool:
        rq.tick()
        return run_queue.read(conn, sshd.url, root=str(remote),
                              python=PYTHON).entries[0].state == "cancelled"
    wait_for(cancelled, what="the cancelled run to end")
    status = runs.status(conn, f"{remote}/runs/{run}", PYTHON)
    assert status.state == "exited" and status.cancelled  # as detached.stop leaves it
    conn.close()


def _connect(server: SshdServer) -> SshConnection:
    t = SshTarget.parse(server.url, key_file=server.client_key)
    return SshConnection(t, HostKeyPolicy.expect(server.host_key_fingerprint),
                         store=PinStore()).connect()
