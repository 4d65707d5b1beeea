"""gpudesk.training: real torchrun (gloo on CPU, bf16 autocast), kills, spot notices, resumes.

The torchrun tests launch ``tests/fixtures_training.py`` (a dropout MLP on a
fixed synthetic set, shuffled per epoch) and compare final weights exactly:
a resumed run only matches an uninterrupted one if weights, optimizer,
random state and data position all came back.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import signal
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import torch
from fixtures_training import REPO
from fixtures_training import child_env
from fixtures_training import children
from fixtures_training import finish
from fixtures_training import free_port
from fixtures_training import kill_tree
from fixtures_training import parse
from fixtures_training import start
from fixtures_training import torchrun_cmd
from fixtures_training import train
from fixtures_training import wait_until
from torch import nn
from torch.utils.data import TensorDataset

from gpudesk.training import Session
from gpudesk.training import TrainingWarning
from gpudesk.training.amp import plan_amp
from gpudesk.training.checkpoint import CheckpointError
from gpudesk.training.checkpoint import list_checkpoints
from gpudesk.training.checkpoint import load_checkpoint
from gpudesk.training.checkpoint import newest_valid
from gpudesk.training.checkpoint import prune
from gpudesk.training.checkpoint import write_checkpoint
from gpudesk.training.data import ResumableSampler
from gpudesk.training.env import DistEnv
from gpudesk.training.env import resolve_interval
from gpudesk.training.env import resolve_run_dir
from gpudesk.training.spot import SPOT_NOTICE_FILE
from gpudesk.training.spot import SpotWatcher

SCRIPT = REPO / "tests" / "fixtures_training.py"
EXAMPLE = REPO / "examples" / "quickstart" / "train.py"


@dataclass
class Run:
    run_dir: Path
    out: Path
    log: str

    def result(self, rank: int) -> dict[str, Any]:
        loaded: dict[str, Any] = torch.load(self.out / f"result-rank{rank}.pt")
        return loaded


def steps_in(run_dir: Path) -> list[int]:
    return [c.step for c in list_checkpoints(run_dir)]


def sidecar(run_dir: Path, step: int) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((run_dir / f"ckpt-{step:09d}.json").read_text())
    return data


def assert_same_weights(a: dict[str, torch.Tensor], b: dict[str, torch.Tensor]) -> None:
    assert a.keys() == b.keys()
    for key in a:
        assert torch.equal(a[key], b[key]), key


@pytest.fixture(scope="module")
def baseline(tmp_path_factory: pytest.TempPathFactory) -> Run:
    """One uninterrupted 2-process run of 30 steps, checkpoints every 5 (keep 3)."""
    root = tmp_path_factory.mktemp("baseline")
    log = root / "log.txt"
    proc = start(torchrun_cmd(SCRIPT, ["--out", str(root / "out")]),
                 child_env(root / "run"), log)
    return Run(root / "run", root / "out", finish(proc, log))


@pytest.fixture
def single_process(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "GROUP_RANK",
                 "GPUDESK_AMP", "GPUDESK_CHECKPOINT_EVERY_MIN", "GPUDESK_RUN_DIR"):
        monkeypatch.delenv(name, raising=False)


# ---------------------------------------------------------------------- torchrun


def test_two_processes_train_in_bf16_and_only_rank0_writes_checkpoints(baseline: Run) -> None:
    r0, r1 = baseline.result(0), baseline.result(1)
    assert (r0["rank"], r1["rank"], r0["world_size"], r0["step"]) == (0, 1, 2, 30)
    assert r0["autocast_dtype"] == "torch.bfloat16"
    assert_same_weights(r0["state"], r1["state"])  # DDP kept the replicas identical
    losses = [loss for _, loss in r0["losses"]]
    assert sum(losses[-6:]) < 0.5 * sum(losses[:6]), losses  # one epoch each

    assert steps_in(baseline.run_dir) == [20, 25, 30]  # every 5 steps, the last 3 kept
    for step in (20, 25, 30):
        meta = sidecar(baseline.run_dir, step)
        assert (meta["rank"], meta["pid"], meta["reason"]) == (0, r0["pid"], "interval")
        blob = (baseline.run_dir / meta["file"]).read_bytes()
        assert (len(blob), hashlib.sha256(blob).hexdigest()) == (meta["bytes"], meta["sha256"])
    assert not [n for n in os.listdir(baseline.run_dir) if ".tmp-" in n]
    written = [line for line in baseline.log.splitlines() if "checkpoint (" in line]
    assert len(written) == 6 and all(line.startswith("[default0]:") for line in written)

    progress = json.loads((baseline.run_dir / "progress.json").read_text())
    assert progress["status"] == "finished" and progress["step"] == progress["max_steps"] == 30
    assert (progress["world_size"], progress["amp"], progress["pid"]) == (2, "bf16", r0["pid"])
    assert progress["checkpoint"] == str(baseline.run_dir / "ckpt-000000030.pt")
    assert progress["loss"] == pytest.approx(losses[-1])


def test_spot_notices_checkpoint_then_a_killed_run_resumes_identically(
        baseline: Run, tmp_path: Path) -> None:
    run_dir, out, log = tmp_path / "run", tmp_path / "out", tmp_path / "log1.txt"
    hooks = ["--pause-at", "7", "--pause-at", "12", "--hang-after", "14"]
    proc = start(torchrun_cmd(SCRIPT, ["--out", str(out), *hooks]), child_env(run_dir), log)
    try:
        def paused(step: int) -> bool:
            return all((out / f"paused-{step}-rank{r}").exists() for r in (0, 1))

        wait_until(lambda: paused(7), proc, log, "the pause at step 7")
        notice = {"source": "test", "action": "terminate"}
        (run_dir / SPOT_NOTICE_FILE).write_text(json.dumps(notice))
        (out / "go-7").touch()
        wait_until(lambda: paused(12), proc, log, "the pause at step 12")
        # The file notice gave a checkpoint at the very next step, and training went on.
        assert steps_in(run_dir) == [5, 8, 10]
        assert sidecar(run_dir, 8)["reason"] == "spot notice"
        rank1 = int((out / "pid-rank1").read_text())
        assert rank1 in children(proc.pid)
        os.kill(rank1, signal.SIGUSR1)  # what gpudesk's agent sends to the workers
        (out / "go-12").touch()
        wait_until(lambda: (run_dir / "ckpt-000000013.json").exists()
                   and all((out / f"hung-rank{r}").exists() for r in (0, 1))
                   and "SIGUSR1 on rank 1" in log.read_text(),  # torchrun relays with a lag
                   proc, log, "the checkpoint at step 13 and the hang at step 14")
    finally:
        kill_tree(proc)  # the machine is gone: SIGKILL, no clean-up
    assert proc.returncode == -signal.SIGKILL
    text = log.read_text()
    assert "spot notice: spot-notice.json (source=test, action=terminate); checkpointing " \
           "at step 8" in text
    assert "spot notice: SIGUSR1 on rank 1; checkpointing at step 13" in text
    assert steps_in(run_dir) == [8, 10, 13]
    meta = sidecar(run_dir, 13)
    assert (meta["reason"], meta["pid"]) == ("spot notice", int((out / "pid-rank0").read_text()))
    assert not (out / "result-rank0.pt").exists()

    log2 = tmp_path / "log2.txt"
    resumed = finish(start(torchrun_cmd(SCRIPT, ["--out", str(out)]), child_env(run_dir), log2),
                     log2)
    assert "resumed from ckpt-000000013.pt at step 13" in resumed
    assert "spot notice" not in resumed  # the old notice file is not acted on again
    for rank in (0, 1):
        got, base = Run(run_dir, out, "").result(rank), baseline.result(rank)
        assert got["start_step"] == 13 and got["step"] == 30
        assert_same_weights(got["state"], base["state"])
        assert got["losses"] == base["losses"][13:]  # steps 14..30, exactly equal
    assert steps_in(run_dir) == [20, 25, 30]


def test_two_nodes_on_localhost_resume_a_copied_checkpoint_like_one_node(
        baseline: Run, tmp_path: Path) -> None:
    """Node 0 has the copied checkpoint, node 1 has nothing: rank 0 sends it over."""
    node0, node1 = tmp_path / "node0", tmp_path / "node1"
    (node0 / "run").mkdir(parents=True)
    for suffix in (".pt", ".json"):
        shutil.copy(baseline.run_dir / f"ckpt-000000020{suffix}", node0 / "run")
    port = free_port()
    rdzv = ["--nnodes", "2", "--rdzv-backend", "c10d", "--rdzv-endpoint",
            f"127.0.0.1:{port}", "--rdzv-id", "two-nodes"]
    procs = []
    for node_rank, (node, addr) in enumerate([(node0, "127.0.0.1"), (node1, "127.0.0.2")]):
        # c10d orders nodes by address: 127.0.0.1 gets rank 0 whoever joins first.
        extra = [*rdzv, "--node-rank", str(node_rank), "--local-addr", addr]
        cmd = torchrun_cmd(SCRIPT, ["--out", str(node / "out")], nproc=1, extra=extra)
        procs.append((start(cmd, child_env(node / "run"), node / "log.txt"), node / "log.txt"))
    logs = [finish(proc, log) for proc, log in procs]
    assert "resumed from ckpt-000000020.pt at step 20" in logs[0]
    base = baseline.result(0)
    for rank, node in enumerate((node0, node1)):
        got = Run(node / "run", node / "out", "").result(rank)
        assert (got["rank"], got["world_size"], got["start_step"]) == (rank, 2, 20)
        assert_same_weights(got["state"], base["state"])
        assert got["losses"] == baseline.result(rank)["losses"][20:]
    assert steps_in(node0 / "run") == [20, 25, 30]
    assert not (node1 / "run").exists()  # rank 1 wrote nothing, not even progress.json


def test_example_project_trains_under_torchrun(tmp_path: Path) -> None:
    log = tmp_path / "log.txt"
    cmd = torchrun_cmd(EXAMPLE, ["--steps", "40", "--amp", "bf16",
                                 "--checkpoint-every-steps", "20"])
    text = finish(start(cmd, child_env(tmp_path / "run"), log), log)
    line = next(ln for ln in text.splitlines() if "validation accuracy" in ln)
    assert float(line.split("validation accuracy ")[1].split()[0]) >= 0.7
    assert steps_in(tmp_path / "run") == [20, 40]
    progress = json.loads((tmp_path / "run" / "progress.json").read_text())
    assert (progress["status"], progress["step"], progress["world_size"]) == ("finished", 40, 2)


# ---------------------------------------------------------------------- one process


def test_single_process_resumes_past_corrupt_checkpoints(
        single_process: None, tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    def run(name: str, max_steps: int) -> dict[str, Any]:
        return train(parse(["--out", str(tmp_path / name), "--run-dir", str(tmp_path / name),
                            "--max-steps", str(max_steps)]))

    straight = run("straight", 30)
    assert (straight["world_size"], straight["step"]) == (1, 30)
    first = run("split", 20)
    split = tmp_path / "split"
    assert steps_in(split) == [10, 15, 20]
    newest = bytearray((split / "ckpt-000000020.pt").read_bytes())
    newest[len(newest) // 2] ^= 0xFF  # same size, wrong content: the hash catches it
    (split / "ckpt-000000020.pt").write_bytes(newest)
    half = (split / "ckpt-000000015.pt").read_bytes()
    (split / "ckpt-000000015.pt").write_bytes(half[: len(half) // 2])
    (split / "ckpt-000000015.json").unlink()  # no hash: the zip check catches it
    resumed = run("split", 30)
    assert first["step"] == 20 and resumed["start_step"] == 10
    assert_same_weights(resumed["state"], straight["state"])
    assert resumed["losses"] == straight["losses"][10:]
    skipped = [r.getMessage() for r in caplog.records if "skipping checkpoint" in r.getMessage()]
    assert len(skipped) == 2 and "SHA-256" in skipped[0] and "cannot be read" in skipped[1]


def _tiny(s: Session) -> tuple[nn.Module, torch.utils.data.DataLoader[Any]]:
    model = nn.Linear(4, 1)
    s.prepare(model, torch.optim.SGD(model.parameters(), lr=0.1))
    data = TensorDataset(torch.randn(16, 4), torch.randn(16, 1))
    return model, s.loader(data, batch_size=4)


def _one_step(s: Session, model: nn.Module, batch: Any) -> str | None:
    x, y = s.to_device(batch)
    with s.autocast():
        loss = nn.functional.mse_loss(model(x).float(), y)
    s.backward(loss)
    return s.step(loss)


def test_time_interval_comes_from_gpudesk_launcher_setting(
        single_process: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GPUDESK_CHECKPOINT_EVERY_MIN", "1")
    now = [1000.0]
    with Session(run_dir=tmp_path) as s:
        s._clock = lambda: now[0]
        s._last_ckpt_time = now[0]
        assert s.interval.seconds == 60.0 and s.interval.steps is None
        model, loader = _tiny(s)
        reasons = []
        for _, batch in s.steps(loader, max_steps=6):
            now[0] += 25.0
            reasons.append(_one_step(s, model, batch))
    assert reasons == [None, None, "interval", None, None, "interval"]
    assert steps_in(tmp_path) == [3, 6]  # and no extra final one: step 6 had one


def test_steps_insists_on_one_step_per_batch(single_process: None, tmp_path: Path) -> None:
    s = Session(run_dir=tmp_path)
    try:
        _, loader = _tiny(s)
        with pytest.raises(RuntimeError, match="once for every batch"):
            for _ in s.steps(loader, max_steps=3):
                pass
    finally:
        s.close()


def test_fp16_on_cpu_falls_back_to_bf16_with_a_warning(single_process: None,
                                                       tmp_path: Path) -> None:
    with pytest.warns(TrainingWarning, match="using bf16 autocast on the CPU"):
        s = Session(run_dir=tmp_path, amp="fp16")
    try:
        assert (s.amp.mode, s.scaler) == ("bf16", None)
        with s.autocast():
            assert torch.mm(torch.ones(2, 2), torch.ones(2, 2)).dtype == torch.bfloat16
    finally:
        s.close()
    off = Session(run_dir=tmp_path, amp="off")
    with off.autocast():
        assert torch.mm(torch.ones(2, 2), torch.ones(2, 2)).dtype == torch.float32
    off.close()


# ---------------------------------------------------------------------- pieces


def test_spot_watcher_ignores_an_old_notice_and_sees_new_ones(tmp_path: Path) -> None:
    before = signal.getsignal(signal.SIGUSR1)
    (tmp_path / SPOT_NOTICE_FILE).write_text("{}")  # copied from the last machine
    watcher = SpotWatcher(tmp_path, watch_file=True)
    try:
        assert watcher.poll() is None
        (tmp_path / SPOT_NOTICE_FILE).unlink()
        (tmp_path / SPOT_NOTICE_FILE).write_text('{"action": "stop", "time": "soon"}')
        assert (watcher.poll(), watcher.poll()) == ("file", None)
        assert watcher.read_notice() == {"action": "stop", "time": "soon"}
        (tmp_path / SPOT_NOTICE_FILE).write_text('{"action": "stop", "again": 1}')
        watcher.acknowledge()  # another node sharing the folder already checkpointed for it
        assert watcher.poll() is None
        signal.raise_signal(signal.SIGUSR1)
        assert (watcher.poll(), watcher.poll()) == ("signal", None)
    finally:
        watcher.close()
    assert signal.getsignal(signal.SIGUSR1) == before
    assert SpotWatcher(tmp_path / "elsewhere", watch_file=False, install_signal=False).poll() \
        is None


def test_checkpoints_are_verified_and_only_the_last_k_kept(tmp_path: Path) -> None:
    stale = tmp_path / ".ckpt-000000009.pt.tmp-999999"  # from a writer that died
    stale.parent.mkdir(exist_ok=True)
    stale.write_bytes(b"half")
    for step in range(1, 6):
        write_checkpoint(tmp_path, step, {"step": step, "w": torch.full((3,), float(step))})
        prune(tmp_path, keep_last=2)
    assert steps_in(tmp_path) == [4, 5] and not stale.exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "ckpt-000000004.json", "ckpt-000000004.pt", "ckpt-000000005.json", "ckpt-000000005.pt"]
    info = list_checkpoints(tmp_path)[-1]
    assert torch.equal(load_checkpoint(info)["w"], torch.full((3,), 5.0))
    (tmp_path / "ckpt-000000005.pt").write_bytes(b"")
    with pytest.raises(CheckpointError, match="bytes"):
        load_checkpoint(info)
    found = newest_valid(tmp_path)
    assert found is not None and found[0].step == 4


def test_resumable_sampler_skips_into_the_same_epoch_order() -> None:
    data = TensorDataset(torch.arange(20))
    full = ResumableSampler(data, num_replicas=2, rank=1, seed=3)
    full.set_epoch(4)
    order = list(full)
    part = ResumableSampler(data, num_replicas=2, rank=1, seed=3)
    part.set_epoch(4)
    part.skip(6)
    assert len(part) == 4 and list(part) == order[6:]
    assert list(part) == order  # the skip applies to one epoch only


def test_settings_from_torchrun_and_gpudesk_variables() -> None:
    env = DistEnv.from_environ({"RANK": "3", "WORLD_SIZE": "4", "LOCAL_RANK": "1",
                                "LOCAL_WORLD_SIZE": "2", "GROUP_RANK": "1",
                                "MASTER_ADDR": "10.0.0.5", "MASTER_PORT": "29400"})
    assert (env.rank, env.local_rank, env.node_rank, env.launched, env.is_main) == (
        3, 1, 1, True, False)
    assert DistEnv.from_environ({}) == DistEnv()
    with pytest.raises(ValueError, match="does not fit"):
        DistEnv.from_environ({"RANK": "2", "WORLD_SIZE": "2"})
    assert resolve_run_dir(None, {"GPUDESK_RUN_DIR": "/runs/r1"}) == Path("/runs/r1")
    assert resolve_run_dir(None, {}) == Path("checkpoints")
    assert resolve_interval(None, None, {"GPUDESK_CHECKPOINT_EVERY_MIN": "2.5"}).seconds == 150
    assert resolve_interval(30.0, 100, {"GPUDESK_CHECKPOINT_EVERY_MIN": "2"}).steps == 100
    with pytest.warns(TrainingWarning, match="not a positive number"):
        assert resolve_interval(None, None,
                                {"GPUDESK_CHECKPOINT_EVERY_MIN": "soon"}).seconds == 600
    assert plan_amp("amp-bf16", device_type="cuda", bf16_supported=True).mode == "bf16"
    old_gpu = plan_amp("bf16", device_type="cuda", bf16_supported=False)
    assert (old_gpu.mode, old_gpu.use_scaler) == ("fp16", True)
    assert plan_amp("fp16", device_type="cuda", bf16_supported=True).use_scaler
    assert plan_amp(None, device_type="cpu", bf16_supported=False).mode == "off"
    with pytest.raises(ValueError, match="choose bf16, fp16 or off"):
        plan_amp("int8", device_type="cpu", bf16_supported=False)
