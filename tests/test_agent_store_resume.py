"""Resume from the bucket: fetch-resume downloads the manifest's latest complete checkpoint,
sets GPUDESK_RESUME_FROM, and gpudesk.training resumes from it with the same weights."""
# ruff: noqa: F811 - pytest fixtures imported from fixtures_agent_store arrive as parameters

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import torch
from fixtures_agent_store import REPO  # noqa: F401 - fixtures
from fixtures_agent_store import WAIT_S  # noqa: F401 - fixtures
from fixtures_agent_store import Bucket  # noqa: F401 - fixtures
from fixtures_agent_store import agent_cmd  # noqa: F401 - fixtures
from fixtures_agent_store import agent_env  # noqa: F401 - fixtures
from fixtures_agent_store import aws  # noqa: F401 - fixtures
from fixtures_agent_store import bucket  # noqa: F401 - fixtures
from fixtures_agent_store import moto_server  # noqa: F401 - fixtures
from fixtures_agent_store import write_fake_checkpoint  # noqa: F401 - fixtures
from fixtures_training import parse
from fixtures_training import train

from gpudesk.agent.resume_fetch import fetch_latest
from gpudesk.agent.uploader import Uploader
from gpudesk.training.env import RESUME_FROM_ENV
from gpudesk.training.env import resolve_resume_from


@pytest.fixture
def single_process(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "GROUP_RANK",
                 "GPUDESK_AMP", "GPUDESK_CHECKPOINT_EVERY_MIN", "GPUDESK_RUN_DIR",
                 RESUME_FROM_ENV):
        monkeypatch.delenv(name, raising=False)


def _train(out: Path, run_dir: Path, max_steps: int) -> dict[str, Any]:
    return train(parse(["--out", str(out), "--run-dir", str(run_dir),
                        "--max-steps", str(max_steps)]))


def _same(a: dict[str, torch.Tensor], b: dict[str, torch.Tensor]) -> None:
    assert a.keys() == b.keys()
    for k in a:
        assert torch.equal(a[k], b[k]), k


def test_a_run_resumes_on_a_new_machine_from_the_bucket_alone(
        single_process: None, bucket: Bucket, tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    straight = _train(tmp_path / "straight", tmp_path / "straight-run", 30)
    # machine A: 20 steps, its checkpoints uploaded, then the machine is gone
    run_a = bucket.run("r1", keep=2)
    first = _train(tmp_path / "a-out", run_a / "checkpoints", 20)
    assert first["step"] == 20
    Uploader.for_run(run_a).tick(1000.0)
    manifest = bucket.manifest()
    assert manifest is not None and manifest["latest"] == "ckpt-000000020.pt"
    shutil.rmtree(run_a)
    # machine B: a bare run folder; the launcher runs fetch-resume before the script
    run_b = bucket.run("r1", keep=2)
    shown = subprocess.run(
        agent_cmd("fetch-resume", "--run", str(run_b), "--", "python3", "-c",
                  f"import os; print('child sees', os.environ['{RESUME_FROM_ENV}'])"),
        cwd=REPO, env=agent_env(), capture_output=True, text=True, timeout=WAIT_S)
    assert shown.returncode == 0, shown.stderr
    fetched = run_b / "checkpoints" / "ckpt-000000020.pt"
    assert shown.stdout.splitlines() == [f"{RESUME_FROM_ENV}={fetched}",
                                         f"child sees {fetched}"]
    assert json.loads(fetched.with_suffix(".json").read_text())["sha256"] == \
        manifest["checkpoints"][-1]["sha256"]
    # the training reads GPUDESK_RESUME_FROM even with a run folder of its own
    monkeypatch.setenv(RESUME_FROM_ENV, str(fetched))
    assert resolve_resume_from() == fetched
    resumed = _train(tmp_path / "b-out", tmp_path / "b-work", 30)
    assert resumed["start_step"] == 20
    _same(resumed["state"], straight["state"])
    assert resumed["losses"] == straight["losses"][20:]


def test_a_bad_resume_file_falls_back_to_the_newest_local_checkpoint(
        single_process: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        caplog: pytest.LogCaptureFixture) -> None:
    run_dir = tmp_path / "run"
    _train(tmp_path / "out", run_dir, 10)
    broken = write_fake_checkpoint(tmp_path / "elsewhere", 25)  # not a torch file
    monkeypatch.setenv(RESUME_FROM_ENV, str(broken))
    resumed = _train(tmp_path / "out2", run_dir, 12)
    assert resumed["start_step"] == 10
    assert any("GPUDESK_RESUME_FROM=" in r.getMessage() and "cannot be used" in r.getMessage()
               for r in caplog.records)


def test_fetch_takes_the_manifest_latest_not_a_newer_object(bucket: Bucket) -> None:
    run = bucket.run("r1", keep=3)
    write_fake_checkpoint(run / "checkpoints", 1)
    Uploader.for_run(run).tick(1000.0)
    # an object a killed upload left behind, never named by the manifest
    bucket.s3.put_object(Bucket=bucket.name, Key="runs/r1/checkpoints/ckpt-000000002.pt",
                         Body=b"partial")
    fresh = bucket.run("r2", run_id="r1")
    got = fetch_latest(fresh)
    assert got == fresh / "checkpoints" / "ckpt-000000001.pt"
    assert got.read_bytes() == (run / "checkpoints" / "ckpt-000000001.pt").read_bytes()
    assert sorted(p.name for p in got.parent.iterdir()) == ["ckpt-000000001.json",
                                                            "ckpt-000000001.pt"]
    empty = bucket.run("r3")
    assert fetch_latest(empty) is None
    done = subprocess.run(agent_cmd("fetch-resume", "--run", str(empty)), cwd=REPO,
                          env=agent_env(), capture_output=True, text=True, timeout=WAIT_S)
    assert done.returncode == 0 and done.stdout == ""
    assert "no complete checkpoint yet" in done.stderr
