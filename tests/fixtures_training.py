"""A tiny training script for the gpudesk.training tests, and helpers to launch it.

Run as a script (under torchrun or plain python) it trains a small MLP with
dropout on a fixed synthetic regression set through ``Session``, and each rank
writes ``result-rank<R>.pt`` (final weights, losses, pid) into ``--out``.
Test hooks: ``--pause-at N`` makes every rank wait after step N until the test
creates ``go-N`` in ``--out``; ``--hang-after N`` blocks forever after step N
(a machine that is about to vanish).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from collections.abc import Sequence
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
TORCHRUN = [sys.executable, "-m", "torch.distributed.run"]
WAIT_S = 60.0  # every wait on a child has a deadline, so a hang fails instead of blocking


def parse(argv: Sequence[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser()
    p.add_argument("--out", type=Path, required=True)
    p.add_argument("--max-steps", type=int, default=30)
    p.add_argument("--ckpt-steps", type=int, default=5)
    p.add_argument("--amp", default="bf16")
    p.add_argument("--seed", type=int, default=7)
    p.add_argument("--run-dir", default=None)
    p.add_argument("--pause-at", type=int, action="append", default=[])
    p.add_argument("--hang-after", type=int, default=None)
    return p.parse_args(argv)


def train(args: argparse.Namespace) -> dict[str, Any]:
    import torch
    from torch import nn
    from torch.nn import functional as F  # noqa: N812
    from torch.utils.data import TensorDataset

    from gpudesk.training import Session

    s = Session(seed=args.seed, amp=args.amp, run_dir=args.run_dir,
                checkpoint_every_steps=args.ckpt_steps, keep_last=3, log_every=5)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / f"pid-rank{s.rank}").write_text(str(os.getpid()))
    data = torch.Generator().manual_seed(1234)
    x = torch.randn(96, 8, generator=data)
    y = x @ torch.randn(8, 1, generator=data) + 0.1 * torch.randn(96, 1, generator=data)
    model = nn.Sequential(nn.Linear(8, 32), nn.ReLU(), nn.Dropout(0.2), nn.Linear(32, 1))
    optimizer = torch.optim.AdamW(model.parameters(), lr=2e-2)
    ddp = s.prepare(model, optimizer)
    loader = s.loader(TensorDataset(x, y), batch_size=8)  # 48 rows a rank: 6 steps an epoch
    losses: list[tuple[int, float]] = []
    pred = torch.empty(0)
    for step, batch in s.steps(loader, max_steps=args.max_steps):
        xb, yb = s.to_device(batch)
        with s.autocast():
            pred = ddp(xb)
            loss = F.mse_loss(pred.float(), yb)
        s.backward(loss)
        s.step(loss)
        losses.append((step + 1, loss.item()))
        if step + 1 in args.pause_at:
            _pause(args.out, step + 1, s.rank)
        if step + 1 == args.hang_after:
            (args.out / f"hung-rank{s.rank}").write_text(str(step + 1))
            threading.Event().wait()
    s.finish()
    assert s.module is not None
    result = {"state": s.module.state_dict(), "losses": losses, "start_step": s.start_step,
              "step": s.step_count, "pid": os.getpid(), "rank": s.rank,
              "world_size": s.world_size, "autocast_dtype": str(pred.dtype)}
    torch.save(result, args.out / f"result-rank{s.rank}.pt")
    return result


def _pause(out: Path, step: int, rank: int) -> None:
    (out / f"paused-{step}-rank{rank}").write_text("")
    deadline = time.monotonic() + WAIT_S
    while not (out / f"go-{step}").exists():
        if time.monotonic() > deadline:
            raise SystemExit(f"rank {rank}: nobody released the pause at step {step}")
        time.sleep(0.01)


# ---------------------------------------------------------------------- launching


def child_env(run_dir: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("GPUDESK_AMP", "GPUDESK_CHECKPOINT", "TORCHELASTIC"))}
    env.update(OMP_NUM_THREADS="1", GPUDESK_RUN_DIR=str(run_dir), PYTHONUNBUFFERED="1",
               PYTHONPATH=os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH")])))
    if Path("/sys/class/net/lo").exists():
        env["GLOO_SOCKET_IFNAME"] = "lo"
    return env


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def start(cmd: Sequence[str], env: dict[str, str], log: Path) -> subprocess.Popen[bytes]:
    log.parent.mkdir(parents=True, exist_ok=True)
    with open(log, "wb") as fh:
        return subprocess.Popen(list(cmd), cwd=REPO, env=env, stdout=fh,
                                stderr=subprocess.STDOUT, start_new_session=True)


def torchrun_cmd(script: Path | str, script_args: Sequence[str], *, nproc: int = 2,
                 extra: Sequence[str] = ()) -> list[str]:
    rdzv = ["--standalone"] if not extra else list(extra)
    return [*TORCHRUN, *rdzv, "--nproc-per-node", str(nproc), "--tee", "3", str(script),
            *script_args]


def finish(proc: subprocess.Popen[bytes], log: Path, timeout: float = WAIT_S) -> str:
    """Wait for a clean exit and return the log; kill everything and fail on a hang."""
    try:
        rc = proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        kill_tree(proc)
        raise AssertionError(f"timed out after {timeout}s:\n{log.read_text()[-4000:]}") from None
    text = log.read_text(errors="replace")
    assert rc == 0, f"exit status {rc}:\n{text[-4000:]}"
    return text


def wait_until(check: Callable[[], bool], proc: subprocess.Popen[bytes], log: Path,
               what: str) -> None:
    deadline = time.monotonic() + WAIT_S
    while not check():
        if proc.poll() is not None:
            raise AssertionError(f"exited ({proc.returncode}) before {what}:\n"
                                 f"{log.read_text(errors='replace')[-4000:]}")
        if time.monotonic() > deadline:
            kill_tree(proc)
            raise AssertionError(f"no {what} within {WAIT_S}s")
        time.sleep(0.02)


def children(pid: int) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
                found.append(int(entry.name))
    return found


def kill_tree(proc: subprocess.Popen[bytes]) -> None:
    """SIGKILL torchrun and its workers (each worker leads its own process group)."""
    workers = children(proc.pid)
    for pgid in [proc.pid, *workers]:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(pgid, signal.SIGKILL)
    proc.wait(timeout=WAIT_S)
    deadline = time.monotonic() + WAIT_S
    while any(_alive(pid) for pid in workers) and time.monotonic() < deadline:
        time.sleep(0.01)  # init reaps the orphaned workers


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state != "Z"


if __name__ == "__main__":
    train(parse())
