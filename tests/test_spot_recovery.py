"""Spot recovery on a real sshd with real torchrun: the machine vanishes with its disk, and the
run resumes elsewhere from the checkpoints the desktop copied off it, to the same weights."""

from __future__ import annotations

import asyncio
import shutil
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
import torch
from fixtures_sshd import SshdServer  # noqa: F401
from fixtures_sshd import sshd  # noqa: F401
from test_runs import PYTHON
from test_runs import connect
from test_runs import gpudesk
from test_runs import kill_run
from test_runs import result
from test_runs import run_cmd
from test_runs import run_id_from
from test_runs import training_project
from test_runs import wait_for

from gpudesk.services.money.ledger import Ledger
from gpudesk.services.money.ledger import Machine
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


class _Launches:
    """A launcher that records the plan it is given and books a machine for it."""

    def __init__(self, ledger: Any) -> None:
        self.ledger = ledger
        self.plans: list[Any] = []

    async def launch(self, plan: Any, _on_progress: Any = None) -> Any:
        self.plans.append(plan)
        m = self.ledger.add(Machine(id=f"m-new{len(self.plans):07d}", provider=plan.provider,
                                    instance_type=plan.instance_type, region=plan.region,
                                    market=plan.market, budget=plan.budget,
                                    on_budget=plan.on_budget))
        return SimpleNamespace(machine=m)


def _spent(amount: float) -> Any:
    return lambda *_a, **_k: SimpleNamespace(total=amount)


def test_a_replacement_is_held_to_the_budget_left(monkeypatch: pytest.MonkeyPatch) -> None:
    """The lost machine spent 0.12 of its 0.45 USD: the replacement gets 0.33, the same
    action, and the ledger says where the figure came from (the runaway-bill matrix's spot
    rows: a replacement with no budget billed for 30 days)."""
    from gpudesk.services.money import spend

    monkeypatch.setattr(spend, "machine_spend", _spent(0.12))
    with Ledger() as ledger:
        ledger.add(Machine(id="m-old0000001", provider="aws", instance_type="g5.xlarge",
                           region="us-east-1", zone="us-east-1a", market="spot",
                           price_per_hour=0.45, budget=0.45, on_budget="terminate",
                           cloud_id="i-1"))
        launcher = _Launches(ledger)
        new = asyncio.run(spot_recovery.relaunch_like(launcher, "m-old0000001",  # type: ignore[arg-type]
                                                      allow_from="203.0.113.7/32"))
        (plan,) = launcher.plans
        assert plan.budget == pytest.approx(0.33) and plan.on_budget == "terminate"
        assert plan.market == "spot" and plan.zone == "us-east-1a"
        assert any(e.step == "replaces" and "m-old0000001" in e.detail
                   for e in ledger.events(new))


def test_no_replacement_once_the_budget_is_spent(monkeypatch: pytest.MonkeyPatch) -> None:
    from gpudesk.services.money import spend

    monkeypatch.setattr(spend, "machine_spend", _spent(0.50))
    with Ledger() as ledger:
        ledger.add(Machine(id="m-old0000002", provider="tencent", instance_type="GN7.2XLARGE32",
                           region="ap-guangzhou", market="spot", price_per_hour=0.36,
                           budget=0.45, on_budget="stop", cloud_id="ins-1"))
        launcher = _Launches(ledger)
        with pytest.raises(spot_recovery.RecoveryError, match="budget"):
            asyncio.run(spot_recovery.relaunch_like(launcher, "m-old0000002"))  # type: ignore[arg-type]
        assert launcher.plans == []


def test_a_machine_without_its_own_budget_is_replaced_without_one() -> None:
    with Ledger() as ledger:
        ledger.add(Machine(id="m-old0000003", provider="aliyun",
                           instance_type="ecs.gn7i-c8g1.2xlarge", region="cn-hangzhou",
                           market="spot", price_per_hour=0.44, cloud_id="i-x"))
        launcher = _Launches(ledger)
        asyncio.run(spot_recovery.relaunch_like(launcher, "m-old0000003",  # type: ignore[arg-type]
                                                allow_from="203.0.113.7/32"))
        assert launcher.plans[0].budget is None
