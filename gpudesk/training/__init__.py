"""The helper a researcher's ``train.py`` imports: DDP, AMP, checkpoints, spot notices.

    from gpudesk.training import Session

    s = Session(seed=0, amp="bf16", checkpoint_every_steps=500)
    model = s.prepare(Net(), optimizer)          # resumes from the newest checkpoint
    for step, batch in s.steps(s.loader(dataset, batch_size=32), max_steps=10_000):
        x, y = s.to_device(batch)
        with s.autocast():
            loss = loss_fn(model(x), y)
        s.backward(loss)
        s.step(loss)
    s.finish()

Runs under ``torchrun`` (gloo on CPU, NCCL on CUDA) or as a plain single
process. It needs torch (and uses numpy when present) but nothing else from
gpudesk, so it can be copied to a rented machine on its own. Names load
lazily: ``import gpudesk.training.env`` does not import torch.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING
from typing import Any

if TYPE_CHECKING:
    from gpudesk.training.checkpoint import CheckpointError
    from gpudesk.training.checkpoint import CheckpointInfo
    from gpudesk.training.data import ResumableSampler
    from gpudesk.training.env import DistEnv
    from gpudesk.training.env import TrainingWarning
    from gpudesk.training.env import output_dir
    from gpudesk.training.rng import seed_everything
    from gpudesk.training.session import Session
    from gpudesk.training.spot import SPOT_NOTICE_FILE

_WHERE = {
    "Session": "session",
    "CheckpointError": "checkpoint",
    "CheckpointInfo": "checkpoint",
    "ResumableSampler": "data",
    "DistEnv": "env",
    "TrainingWarning": "env",
    "output_dir": "env",
    "seed_everything": "rng",
    "SPOT_NOTICE_FILE": "spot",
}

__all__ = [
    "SPOT_NOTICE_FILE",
    "CheckpointError",
    "CheckpointInfo",
    "DistEnv",
    "ResumableSampler",
    "Session",
    "TrainingWarning",
    "output_dir",
    "seed_everything",
]


def __getattr__(name: str) -> Any:
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module 'gpudesk.training' has no attribute {name!r}")
    return getattr(importlib.import_module(f"gpudesk.training.{module}"), name)
