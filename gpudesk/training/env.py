"""What torchrun and gpudesk's run launcher tell a training process, read once.

Stdlib only, so the launcher (and tests) can use these names without torch.
"""

from __future__ import annotations

import math
import os
import warnings
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

RUN_DIR_ENV = "GPUDESK_RUN_DIR"
CHECKPOINT_EVERY_ENV = "GPUDESK_CHECKPOINT_EVERY_MIN"
AMP_ENV = "GPUDESK_AMP"
# Set by the agent's fetch-resume: the checkpoint fetched from the run's bucket.
RESUME_FROM_ENV = "GPUDESK_RESUME_FROM"
# Where a script writes what it makes (samples, exported models, results): the agent uploads
# this folder to the run's bucket when the run ends, and `gpudesk outputs RUN` lists it.
OUTPUT_DIR_ENV = "GPUDESK_OUTPUT_DIR"
DEFAULT_RUN_DIR = "checkpoints"
DEFAULT_OUTPUT_DIR = "outputs"
# Without any setting a run loses at most this much work to a crash.
DEFAULT_CHECKPOINT_EVERY_S = 600.0


class TrainingWarning(UserWarning):
    """A setting that could not be honoured as asked; training goes on."""


@dataclass(frozen=True)
class DistEnv:
    """This process's place in the job, from torchrun's variables (defaults: one process)."""

    rank: int = 0  # RANK
    local_rank: int = 0  # LOCAL_RANK
    world_size: int = 1  # WORLD_SIZE
    local_world_size: int = 1  # LOCAL_WORLD_SIZE
    node_rank: int = 0  # GROUP_RANK (torchrun's name for the node's rank)
    master_addr: str = "127.0.0.1"  # MASTER_ADDR
    master_port: int = 29500  # MASTER_PORT
    launched: bool = False  # True under torchrun (RANK and WORLD_SIZE set)

    @classmethod
    def from_environ(cls, environ: Mapping[str, str] | None = None) -> DistEnv:
        env = os.environ if environ is None else environ
        launched = "RANK" in env and "WORLD_SIZE" in env

        def num(name: str, default: int) -> int:
            raw = env.get(name, "").strip()
            try:
                return int(raw) if raw else default
            except ValueError as exc:
                raise ValueError(f"{name}={raw!r} is not a whole number") from exc

        world = num("WORLD_SIZE", 1)
        rank = num("RANK", 0)
        if world < 1 or not 0 <= rank < world:
            raise ValueError(f"RANK={rank} does not fit WORLD_SIZE={world}")
        return cls(
            rank=rank,
            local_rank=num("LOCAL_RANK", 0),
            world_size=world,
            local_world_size=num("LOCAL_WORLD_SIZE", 1),
            node_rank=num("GROUP_RANK", 0),
            master_addr=env.get("MASTER_ADDR", "127.0.0.1") or "127.0.0.1",
            master_port=num("MASTER_PORT", 29500),
            launched=launched,
        )

    @property
    def is_main(self) -> bool:
        return self.rank == 0

    @property
    def is_distributed(self) -> bool:
        return self.world_size > 1


def resolve_run_dir(run_dir: str | os.PathLike[str] | None,
                    environ: Mapping[str, str] | None = None) -> Path:
    """The argument, else ``$GPUDESK_RUN_DIR``, else ``./checkpoints``."""
    env = os.environ if environ is None else environ
    if run_dir is not None:
        return Path(run_dir)
    return Path(env.get(RUN_DIR_ENV, "").strip() or DEFAULT_RUN_DIR)


def output_dir(environ: Mapping[str, str] | None = None, *, create: bool = True) -> Path:
    """Where to write outputs: ``$GPUDESK_OUTPUT_DIR`` (the run folder's ``outputs/``, which
    the agent uploads to the run's bucket), else ``./outputs``; made when ``create``."""
    env = os.environ if environ is None else environ
    path = Path(env.get(OUTPUT_DIR_ENV, "").strip() or DEFAULT_OUTPUT_DIR)
    if create:
        path.mkdir(parents=True, exist_ok=True)
    return path


def resolve_resume_from(environ: Mapping[str, str] | None = None) -> Path | None:
    """``$GPUDESK_RESUME_FROM`` as an absolute path, else None (resume from the run folder)."""
    env = os.environ if environ is None else environ
    raw = env.get(RESUME_FROM_ENV, "").strip()
    return Path(raw).absolute() if raw else None


@dataclass(frozen=True)
class CheckpointInterval:
    """Checkpoint when either limit is reached (None: that limit is off)."""

    seconds: float | None
    steps: int | None


def resolve_interval(every_s: float | None, every_steps: int | None,
                     environ: Mapping[str, str] | None = None) -> CheckpointInterval:
    """Explicit arguments win; else gpudesk's launcher setting in minutes; else 10 minutes."""
    if every_steps is not None and every_steps < 1:
        raise ValueError(f"checkpoint_every_steps must be at least 1, not {every_steps}")
    if every_s is not None and not (every_s > 0 and math.isfinite(every_s)):
        raise ValueError(f"checkpoint_every_s must be a positive number, not {every_s}")
    if every_s is not None or every_steps is not None:
        return CheckpointInterval(every_s, every_steps)
    env = os.environ if environ is None else environ
    raw = env.get(CHECKPOINT_EVERY_ENV, "").strip()
    if raw:
        try:
            minutes = float(raw)
        except ValueError:
            minutes = math.nan
        if minutes > 0 and math.isfinite(minutes):
            return CheckpointInterval(minutes * 60.0, None)
        warnings.warn(
            f"{CHECKPOINT_EVERY_ENV}={raw!r} is not a positive number of minutes; "
            f"checkpointing every {DEFAULT_CHECKPOINT_EVERY_S / 60:g} minutes instead",
            TrainingWarning,
            stacklevel=3,
        )
    return CheckpointInterval(DEFAULT_CHECKPOINT_EVERY_S, None)
