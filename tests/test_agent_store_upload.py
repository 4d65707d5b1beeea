"""The agent's uploader against moto's S3 server: manifest last, keep-K, log parts, outputs,
spot notices, and uploads killed with SIGKILL at several points."""
# ruff: noqa: F811 - pytest fixtures imported from fixtures_agent_store arrive as parameters

from __future__ import annotations

import hashlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from fixtures_agent import FakeSmi  # noqa: F401 - fixture
from fixtures_agent import fake_smi  # noqa: F401 - fixture
from fixtures_agent_store import REPO  # noqa: F401 - fixtures
from fixtures_agent_store import STS_SECRET  # noqa: F401 - fixtures
from fixtures_agent_store import STS_TOKEN  # noqa: F401 - fixtures
from fixtures_agent_store import WAIT_S  # noqa: F401 - fixtures
from fixtures_agent_store import Bucket  # noqa: F401 - fixtures
from fixtures_agent_store import agent_env  # noqa: F401 - fixtures
from fixtures_agent_store import aws  # noqa: F401 - fixtures
from fixtures_agent_store import bucket  # noqa: F401 - fixtures
from fixtures_agent_store import moto_server  # noqa: F401 - fixtures
from fixtures_agent_store import start_agent  # noqa: F401 - fixtures
from fixtures_agent_store import wait_for  # noqa: F401 - fixtures
from fixtures_agent_store import write_fake_checkpoint  # noqa: F401 - fixtures

from gpudesk.agent.uploader import STATE_FILE
from gpudesk.agent.uploader import Uploader


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _state(folder: Path) -> dict[str, Any]:
    state: dict[str, Any] = json.loads((folder / STATE_FILE).read_text(encoding="utf-8"))
    return state


def test_a_finished_checkpoint_goes_up_then_the_manifest_names_it(bucket: Bucket) -> None:
    run = bucket.run("r1")
    ckpts = run / "checkpoints"
    one = write_fake_checkpoint(ckpts, 10)
    write_fake_checkpoint(ckpts, 20, sidecar=False)  # renamed, sidecar not yet: unfinished
    (ckpts / ".ckpt-000000030.pt.tmp-123").write_bytes(b"half")  # still being written
    up = Uploader.for_run(run)
    up.tick(1000.0)
    assert bucket.keys() == ["runs/r1/checkpoints/ckpt-000000010.pt", "runs/r1/manifest.json"]
    manifest = bucket.manifest()
    assert manifest is not None
    assert manifest["run"] == "r1" and manifest["latest"] == "ckpt-000000010.pt"
    assert manifest["checkpoints"] == [{"name": "ckpt-000000010.pt", "bytes": 4096,
                                        "sha256": _sha(one), "complete": True}]
    assert manifest["updated"].endswith("Z")
    assert bucket.read("runs/r1/checkpoints/ckpt-000000010.pt") == one.read_bytes()
    state = _state(run)
    assert state["latest"] == "ckpt-000000010.pt" and state["error"] is None
    assert state["last_upload"]["what"] in ("checkpoint", "log")
    assert state["uri"] == "s3://gpudesk-runs-test/runs/r1/" and state["credentials"] == "sts"
    text = (run / STATE_FILE).read_text()
    assert STS_SECRET not in text and STS_TOKEN not in text


def test_keeps_the_last_k_checkpoints_and_deletes_what_the_manifest_dropped(
        bucket: Bucket) -> None:
    run = bucket.run("r1", keep=2)
    up = Uploader.for_run(run)
    now = 1000.0
    bucket.s3.put_object(Bucket=bucket.name, Key="runs/r1/checkpoints/orphan.pt", Body=b"x")
    for step in (1, 2, 3, 4, 5):
        write_fake_checkpoint(run / "checkpoints", step)
        now += 1.0
        up.tick(now)
        held = [k.rsplit("/", 1)[-1] for k in bucket.keys("runs/r1/checkpoints/")]
        manifest = bucket.manifest()
        assert manifest is not None
        named = [e["name"] for e in manifest["checkpoints"]]
        assert held == named == [f"ckpt-{s:09d}.pt" for s in range(max(1, step - 1), step + 1)]
        assert manifest["latest"] == f"ckpt-{step:09d}.pt"


def test_log_goes_up_in_parts_and_outputs_when_the_run_ends(bucket: Bucket) -> None:
    run = bucket.run("r1")
    up = Uploader.for_run(run)
    (run / "log").write_bytes(b"step 1\n")
    up.tick(1000.0)
    up.tick(1000.1)  # not due yet: nothing new sent
    with open(run / "log", "ab") as fh:
        fh.write(b"step 2\nstep 3\n")
    up.tick(1001.0)
    up.tick(1002.0)  # nothing was added: no empty part
    assert bucket.keys("runs/r1/logs/") == ["runs/r1/logs/log.000001", "runs/r1/logs/log.000002"]
    assert bucket.read("runs/r1/logs/log.000002") == b"step 2\nstep 3\n"
    (run / "outputs" / "eval").mkdir(parents=True)
    (run / "outputs" / "model.pt").write_bytes(os.urandom(9000))
    (run / "outputs" / "eval" / "scores.json").write_text('{"acc": 0.9}')
    up.tick(1003.0)
    assert not bucket.keys("runs/r1/outputs/")  # still running: outputs wait for the end
    (run / "exit_status").write_text("0")
    up.tick(1004.0)
    assert bucket.keys("runs/r1/outputs/") == ["runs/r1/outputs/eval/scores.json",
                                               "runs/r1/outputs/model.pt"]
    assert bucket.read("runs/r1/outputs/model.pt") == (run / "outputs" / "model.pt").read_bytes()
    state = _state(run)
    assert state["outputs"]["files"] == 2 and state["outputs"]["bytes"] == 9000 + 12
    assert state["finished"] and up.done


def test_spot_notice_sends_the_newest_checkpoint_first_then_manifest_then_log(
        bucket: Bucket) -> None:
    run = bucket.run("r1", interval_s=3600, log_every_s=3600, keep=3)
    up = Uploader.for_run(run)
    up.tick(1000.0)  # the hour's scan is done: nothing more until the notice
    for step in (1, 2, 3):
        write_fake_checkpoint(run / "checkpoints", step)
    (run / "log").write_bytes(b"training\n")
    up.tick(1001.0)
    assert bucket.keys() == []
    (run / "spot-notice.json").write_text(json.dumps(
        {"provider": "aws", "action": "terminate", "time": "2026-12-04T18:00:00Z",
         "deadline": 1120.0, "noticed_at": 1002.0}))
    up.tick(1002.0)
    assert bucket.keys() == ["runs/r1/checkpoints/ckpt-000000003.pt", "runs/r1/logs/log.000001",
                             "runs/r1/manifest.json"]  # only the newest: time is short
    write_fake_checkpoint(run / "checkpoints", 4)  # the training's spot checkpoint
    up.tick(1003.0)
    manifest = bucket.manifest()
    assert manifest is not None and manifest["latest"] == "ckpt-000000004.pt"
    assert _state(run)["spot"] == {"time": "2026-12-04T18:00:00Z", "deadline": 1120.0}


def test_an_unreachable_bucket_is_recorded_for_the_watch_page(bucket: Bucket) -> None:
    run = bucket.run("r1", endpoint="http://127.0.0.1:9")
    write_fake_checkpoint(run / "checkpoints", 1)
    up = Uploader.for_run(run)
    up.tick(1000.0)
    state = _state(run)
    assert state["error"].startswith("cannot reach the bucket: gpudesk-runs-test")
    assert state["latest"] is None and "last_upload" not in state
    up.tick(1001.0)  # backing off: not tried again at once
    assert _state(run)["error_at"] == state["error_at"]
    up.tick(1006.0)
    assert _state(run)["error_at"] == "1970-01-01T00:16:46Z"


def _fake_training(run: Path, steps: int) -> subprocess.Popen[bytes]:
    """A training loop in its own process writing real gpudesk checkpoints (keep 3)."""
    code = f"""
import os, time, torch
from pathlib import Path
from gpudesk.training.checkpoint import prune, write_checkpoint
run = Path({str(run)!r})
(run / "pid").write_text(str(os.getpid()))
with open(run / "log", "a") as log:
    for step in range(1, {steps} + 1):
        w = torch.full((64, 64), float(step))
        write_checkpoint(run / "checkpoints", step, {{"step": step, "model": {{"w": w}}}})
        prune(run / "checkpoints", 3)
        log.write(f"step {{step}}\\n"); log.flush()
        time.sleep(0.1)  # a training step's worth of work, not a wait for the uploader
(run / "outputs").mkdir()
torch.save({{"w": w}}, run / "outputs" / "model.pt")
(run / "exit_status").write_text("0")
"""
    return subprocess.Popen([sys.executable, "-c", code], cwd=REPO, env=agent_env())


def test_the_agent_uploads_as_its_own_process_while_training_writes(
        bucket: Bucket, tmp_path: Path) -> None:
    run = bucket.run("r1", keep=2, interval_s=0.3)
    agent = start_agent("upload", "--run", str(run), "--every", "0.05",
                        log=tmp_path / "agent.log")
    training = _fake_training(run, 8)
    try:
        assert training.wait(WAIT_S) == 0
        assert agent.wait(WAIT_S) == 0, (tmp_path / "agent.log").read_text()
    finally:
        for proc in (agent, training):
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    manifest = bucket.manifest()
    assert manifest is not None and manifest["latest"] == "ckpt-000000008.pt"
    assert [e["name"] for e in manifest["checkpoints"]] == ["ckpt-000000007.pt",
                                                            "ckpt-000000008.pt"]
    assert bucket.keys("runs/r1/checkpoints/") == ["runs/r1/checkpoints/ckpt-000000007.pt",
                                                   "runs/r1/checkpoints/ckpt-000000008.pt"]
    newest = run / "checkpoints" / "ckpt-000000008.pt"
    assert manifest["checkpoints"][1]["sha256"] == _sha(newest)
    assert bucket.read("runs/r1/checkpoints/ckpt-000000008.pt") == newest.read_bytes()
    parts = bucket.keys("runs/r1/logs/")
    assert b"".join(bucket.read(k) for k in parts) == (run / "log").read_bytes()
    assert bucket.read("runs/r1/outputs/model.pt") == (run / "outputs" / "model.pt").read_bytes()
    assert _state(run)["finished"]


@pytest.mark.parametrize(("point", "size"), [("object-body", 3 << 20),
                                             ("before-manifest", 4096),
                                             ("multipart-part", 12 << 20)])
def test_an_upload_killed_halfway_leaves_the_previous_checkpoint_latest(
        bucket: Bucket, tmp_path: Path, point: str, size: int) -> None:
    run = bucket.run("r1", keep=3, multipart_threshold=8 << 20, part_size=5 << 20)
    first = write_fake_checkpoint(run / "checkpoints", 1)
    Uploader.for_run(run).tick(1000.0)
    write_fake_checkpoint(run / "checkpoints", 2, size)
    marker = tmp_path / "paused"
    agent = start_agent("upload", "--run", str(run), "--every", "0.05",
                        log=tmp_path / "agent.log", GPUDESK_STORE_HOOK=point,
                        GPUDESK_STORE_HOOK_FILE=str(marker))
    try:
        wait_for(lambda: marker.exists() or agent.poll() is not None, what=point)
        assert marker.exists(), (tmp_path / "agent.log").read_text()
        os.kill(agent.pid, signal.SIGKILL)
    finally:
        if agent.poll() is None:
            agent.kill()
        agent.wait(WAIT_S)
    manifest = bucket.manifest()
    assert manifest is not None and manifest["latest"] == "ckpt-000000001.pt"
    assert [e["name"] for e in manifest["checkpoints"]] == ["ckpt-000000001.pt"]
    assert manifest["checkpoints"][0]["sha256"] == _sha(first)
    second = "runs/r1/checkpoints/ckpt-000000002.pt"
    assert (second in bucket.keys("runs/")) == (point == "before-manifest")
    pending = bucket.s3.list_multipart_uploads(Bucket=bucket.name).get("Uploads", [])
    assert len(pending) == (1 if point == "multipart-part" else 0)
    # the next uploader finishes the job and clears what the killed one left
    again = Uploader.for_run(run)
    again.tick(time.time())
    manifest = bucket.manifest()
    assert manifest is not None and manifest["latest"] == "ckpt-000000002.pt"
    assert bucket.read(second) == (run / "checkpoints" / "ckpt-000000002.pt").read_bytes()
    assert not bucket.s3.list_multipart_uploads(Bucket=bucket.name).get("Uploads", [])


def test_the_agent_loop_uploads_runs_that_name_a_store(bucket: Bucket, tmp_path: Path,
                                                       fake_smi: FakeSmi) -> None:
    run = bucket.run("r1")
    write_fake_checkpoint(run / "checkpoints", 5)
    (run / "log").write_text("hello\n")
    (run / "outputs").mkdir()
    (run / "outputs" / "model.pt").write_bytes(b"weights")
    (run / "exit_status").write_text("0")
    agent = start_agent("--dir", str(tmp_path / "agent"), "--sampler", "smi",
                        "--runs-dir", str(run.parent), log=tmp_path / "agent.log",
                        PATH=os.environ["PATH"])
    try:
        wait_for(lambda: json.loads((run / STATE_FILE).read_text()).get("finished")
                 if (run / STATE_FILE).exists() else None, what="the run's uploads")
    finally:
        agent.send_signal(signal.SIGTERM)
        assert agent.wait(WAIT_S) == 0, (tmp_path / "agent.log").read_text()
    assert bucket.keys() == ["runs/r1/checkpoints/ckpt-000000005.pt", "runs/r1/logs/log.000001",
                             "runs/r1/manifest.json", "runs/r1/outputs/model.pt",
                             "runs/r1/state.json"]  # the end, last (replacement.py reads it)
    assert json.loads(bucket.read("runs/r1/state.json"))["state"] == "succeeded"


def test_log_parts_continue_the_buckets_numbering_on_a_new_machine(bucket: Bucket) -> None:
    first = bucket.run("r1")
    up = Uploader.for_run(first)
    (first / "log").write_bytes(b"machine A, step 1\n")
    up.tick(1000.0)
    with open(first / "log", "ab") as fh:
        fh.write(b"machine A, step 2\n")
    up.tick(1001.0)
    second = bucket.run("r1-on-b", run_id="r1")  # the same run on machine B, no local state
    (second / "log").write_bytes(b"machine B, step 3\n")
    Uploader.for_run(second).tick(2000.0)
    assert bucket.keys("runs/r1/logs/") == [f"runs/r1/logs/log.{n:06d}" for n in (1, 2, 3)]
    assert bucket.read("runs/r1/logs/log.000001") == b"machine A, step 1\n"
    assert bucket.read("runs/r1/logs/log.000003") == b"machine B, step 3\n"


def test_a_resume_on_the_same_machine_uploads_again(bucket: Bucket) -> None:
    from gpudesk.agent.uploader import Uploads

    class Ticks:  # a clock that moves one minute per look, so every upload is due
        now = 1000.0

        def time(self) -> float:
            self.now += 60.0
            return self.now

    run = bucket.run("r1")
    uploads = Uploads(run.parent, clock=Ticks())  # type: ignore[arg-type]
    write_fake_checkpoint(run / "checkpoints", 1)
    (run / "exit_status").write_text("1")  # the first start ended (a stop)
    uploads.tick()
    assert uploads.uploaders["r1"].done
    assert bucket.keys("runs/r1/checkpoints/") == ["runs/r1/checkpoints/ckpt-000000001.pt"]
    # the resume: the desktop writes the store config again, the launcher removes the old
    # exit status and starts the script, which writes a newer checkpoint
    config = run / "store-config.json"
    config.write_text(config.read_text())
    later = (run / STATE_FILE).stat().st_mtime + 5
    os.utime(config, (later, later))
    uploads.tick()  # between the config and the launcher: the old exit status is not the end
    assert not uploads.uploaders["r1"].done
    (run / "exit_status").unlink()
    write_fake_checkpoint(run / "checkpoints", 2)
    uploads.tick()
    assert "runs/r1/checkpoints/ckpt-000000002.pt" in bucket.keys("runs/r1/checkpoints/")
    manifest = bucket.manifest()
    assert manifest is not None and manifest["latest"] == "ckpt-000000002.pt"
    assert not uploads.uploaders["r1"].done


def test_fetch_resume_keeps_a_newer_checkpoint_of_this_machine(bucket: Bucket) -> None:
    from gpudesk.agent.resume_fetch import fetch_latest

    run = bucket.run("r1")
    write_fake_checkpoint(run / "checkpoints", 5)
    Uploader.for_run(run).tick(1000.0)
    newer = write_fake_checkpoint(run / "checkpoints", 7)  # trained on, not yet uploaded
    assert fetch_latest(run) is None
    assert sorted(p.name for p in (run / "checkpoints").glob("*.pt")) == [
        "ckpt-000000005.pt", newer.name]
