"""Spot recovery on a real sshd with real torchrun: the machine vanishes with its disk, and the
run resumes elsewhere from the checkpoints the desktop copied off it, to the same weights."""

from __future__ import annotations

import asyncio
import shutil
from pathlib import Path

import pytest
import torch
from fixtures_sshd import SshdServer, sshd  # noqa: F401
from test_runs import (
    PYTHON,
    connect,
    gpudesk,
    kill_run,
    result,
    run_cmd,
    run_id_from,
    training_project,
    wait_for,
)

from gpudesk.services.money.ledger import Ledger, Machine
from gpudesk.services.remote.host_keys import HostKeyPolicy
from gpudesk.services.runs import detached as runs
from gpudesk.services.runs import spot_recovery

STEPS = ["--max-steps", "16", "--ckpt-steps", "4"]


def test_lost_machine_resumes_elsewhere_from_the_mirrored_checkpoint(
        sshd: SshdServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:  # noqa: F811
    project, machine = training_project(tmp_path / "proj"), tmp_path / "machine"
    whole, broken = tmp_path / "whole", tmp_path / "broken"
    assert gpudesk(*run_cmd(sshd, machine, project, "--accept-new", "--nproc", "2", "--",
                            "train.py", "--out", str(whole), *STEPS)) == 0
    capsys.readouterr()
    assert gpudesk(*run_cmd(sshd, machine, project, "--detach", "--nproc", "2", "--", "train.py",
                            "--out", str(broken), *STEPS, "--pause-at", "10")) == 0
    run_id = run_id_from(capsys)
    record = runs.RunRecord.load(run_id)
    policy = HostKeyPolicy.expect(sshd.host_key_fingerprint)
    pulls: list[spot_recovery.MirrorState] = []
    mirror = spot_recovery.CheckpointMirror(record, policy, interval_s=0.2,
                                            on_pull=pulls.append).start()
    try:
        wait_for(lambda: all((broken / f"paused-10-rank{r}").exists() for r in (0, 1)),
                 "pause at step 10")
        wait_for(lambda: any(p.name == "ckpt-000000008.pt"
                             for p in spot_recovery.mirrored_checkpoints(record)),
                 "the step-8 checkpoint copied to the desktop")
    finally:
        mirror.stop(wait_s=30)
    assert all(not p.last_error for p in pulls), pulls[-1]
    assert not any(".tmp-" in p.name for p in spot_recovery.mirrored_checkpoints(record))

    # The spot machine is reclaimed: its processes and its disk are gone.
    kill_run(Path(record.main.run_dir))
    shutil.rmtree(machine)
    (broken / "go-10").touch()  # (the resumed run passes step 10 again)

    said: list[str] = []
    recovered = spot_recovery.recover(record, sshd.url, str(sshd.client_key), policy,
                                      report=said.append)
    assert recovered.attempt == 2 and recovered.nodes[0].run_dir.startswith(str(machine))
    assert any("resumes from ckpt-000000008.pt" in line for line in said), said
    with connect(sshd) as conn, (tmp_path / "log").open("wb") as shown:
        final, _ = runs.follow(conn, recovered.main.run_dir, shown, python=PYTHON,
                               offset=recovered.log_offset)
    assert final.state == "exited" and final.code == 0
    resumed, baseline = result(broken), result(whole)
    # lost work: steps 9-10, less than one checkpoint interval (4 steps)
    assert (resumed["start_step"], resumed["step"]) == (8, 16)
    assert resumed["losses"] == baseline["losses"][8:]
    for key in baseline["state"]:
        assert torch.equal(resumed["state"][key], baseline["state"][key]), key
    assert runs.RunRecord.load(run_id).attempt == 2  # the record follows the new machine


def test_recover_without_a_copy_starts_over_and_says_so(
        sshd: SshdServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:  # noqa: F811
    project, machine, out = training_project(tmp_path / "proj"), tmp_path / "m", tmp_path / "o"
    assert gpudesk(*run_cmd(sshd, machine, project, "--accept-new", "--", "train.py",
                            "--out", str(out), "--max-steps", "2")) == 0
    record = runs.RunRecord.load(run_id_from(capsys))
    shutil.rmtree(machine)
    said: list[str] = []
    spot_recovery.recover(record, sshd.url, str(sshd.client_key),
                          HostKeyPolicy.expect(sshd.host_key_fingerprint), report=said.append)
    assert any("starts again from the beginning" in line for line in said)


def test_relaunch_refuses_a_machine_gpudesk_did_not_launch(gpudesk_home: Path) -> None:
    from gpudesk.services.cloud.launcher import Launcher

    with Ledger() as ledger:
        ledger.add(Machine(id="m-own0000001", provider="own", name="lab", public_ip="10.0.0.2"))
        with pytest.raises(spot_recovery.RecoveryError, match="not a cloud machine"):
            asyncio.run(spot_recovery.relaunch_like(Launcher(ledger), "m-own0000001"))


def test_multi_node_runs_are_not_recovered_silently() -> None:
    record = runs.RunRecord(id="r", project=".", remote_project="/p", script="t.py", args=[],
                            nproc=1, nodes=[runs.NodeRun("a", None, "/r"),
                                            runs.NodeRun("b", None, "/r2")])
    with pytest.raises(spot_recovery.RecoveryError, match="2 machines"):
        spot_recovery.recover(record, "ssh://x@127.0.0.1:1", None, HostKeyPolicy.refuse())
