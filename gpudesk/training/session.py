"""One training process's session: torchrun, DDP, AMP, checkpoints, spot notices.

Every decision that leads to a collective (write a checkpoint now?) is agreed
by all ranks at the step boundary with one small all_reduce, on a gloo group
even under NCCL so that it never waits for the GPU. Only rank 0 writes files.
"""

from __future__ import annotations

import contextlib
import logging
import math
import os
import sys
import time
import warnings
from collections.abc import Iterator
from collections.abc import Mapping
from collections.abc import Sequence
from pathlib import Path
from types import TracebackType
from typing import Any

import torch
import torch.distributed as dist
from torch import nn
from torch.nn.parallel import DistributedDataParallel
from torch.utils.data import DataLoader
from torch.utils.data import Dataset

from gpudesk.training.amp import AmpPlan
from gpudesk.training.amp import plan_amp
from gpudesk.training.checkpoint import CheckpointError
from gpudesk.training.checkpoint import CheckpointInfo
from gpudesk.training.checkpoint import atomic_write_json
from gpudesk.training.checkpoint import checkpoint_at
from gpudesk.training.checkpoint import load_checkpoint
from gpudesk.training.checkpoint import newest_valid
from gpudesk.training.checkpoint import prune
from gpudesk.training.checkpoint import write_checkpoint
from gpudesk.training.data import ResumableSampler
from gpudesk.training.data import find_sampler
from gpudesk.training.data import steps_per_epoch
from gpudesk.training.env import AMP_ENV
from gpudesk.training.env import DistEnv
from gpudesk.training.env import TrainingWarning
from gpudesk.training.env import resolve_interval
from gpudesk.training.env import resolve_resume_from
from gpudesk.training.env import resolve_run_dir
from gpudesk.training.rng import capture_rng
from gpudesk.training.rng import restore_rng
from gpudesk.training.rng import seed_everything
from gpudesk.training.spot import SPOT_NOTICE_FILE
from gpudesk.training.spot import SpotWatcher

log = logging.getLogger("gpudesk.training")
PROGRESS_FILE = "progress.json"
# progress.json's mark that every rank got past finish()'s final barrier: the run finished,
# whatever its processes' exit status then says (the run launcher reads it too)
ALL_RANKS_FINISHED = "all_ranks_finished"
# What a DistributedDataParallel wrapper holds the process group by
DDP_GROUP_HOLDERS = ("reducer", "logger", "process_group")


def _ensure_log_handler() -> None:
    """Show our lines even when the script configured no logging."""
    if log.level == logging.NOTSET:
        log.setLevel(logging.INFO)
    if not log.handlers and not logging.getLogger().handlers:
        handler = logging.StreamHandler()
        handler.setFormatter(logging.Formatter("[gpudesk] %(message)s"))
        log.addHandler(handler)


def _import_group_defaults() -> None:
    """Import torch.distributed.nn.functional before the group exists: its functions'
    ``group=group.WORLD`` defaults are evaluated at import, and taken after
    ``init_process_group`` they would hold the group past ``destroy_process_group``."""
    with contextlib.suppress(ImportError):
        import torch.distributed.nn.functional  # noqa: F401


def _clear_group_defaults() -> None:
    """Default arguments that hold a process group (torch.distributed.nn.functional's, when
    imported after the group existed) become None, which means the same default group."""
    module = sys.modules.get("torch.distributed.nn.functional")
    if module is None:
        return
    for value in vars(module).values():
        defaults = getattr(value, "__defaults__", None)
        if defaults and any(isinstance(d, dist.ProcessGroup) for d in defaults):
            value.__defaults__ = tuple(None if isinstance(d, dist.ProcessGroup) else d
                                       for d in defaults)


class Session:
    """Set up the process (call first, before building the model), then train with it.

    ``amp`` is "bf16", "fp16" or "off" (default: ``$GPUDESK_AMP``, else off).
    Checkpoints go to ``run_dir`` (default ``$GPUDESK_RUN_DIR``, else
    ``./checkpoints``) every ``checkpoint_every_s`` seconds and/or
    ``checkpoint_every_steps`` steps (default ``$GPUDESK_CHECKPOINT_EVERY_MIN``,
    else 10 minutes), on a spot notice, and at ``finish()``.
    """

    def __init__(self, *, seed: int = 0, amp: str | None = None,
                 run_dir: str | os.PathLike[str] | None = None,
                 checkpoint_every_s: float | None = None,
                 checkpoint_every_steps: int | None = None, keep_last: int = 3,
                 log_every: int = 10, resume: bool = True, deterministic: bool = False,
                 backend: str | None = None) -> None:
        if keep_last < 1 or log_every < 1:
            raise ValueError("keep_last and log_every must be at least 1")
        _ensure_log_handler()
        self.env = DistEnv.from_environ()
        self.seed = seed
        self.run_dir = resolve_run_dir(run_dir)
        self.interval = resolve_interval(checkpoint_every_s, checkpoint_every_steps)
        self.keep_last = keep_last
        self.log_every = log_every
        self._resume_enabled = resume
        cuda = torch.cuda.is_available()
        if cuda:  # one GPU per local rank; index 0 when each process sees only its own GPU
            self.device = torch.device("cuda", self.env.local_rank % torch.cuda.device_count())
            torch.cuda.set_device(self.device)
        else:
            self.device = torch.device("cpu")
        self.backend = backend or ("nccl" if cuda else "gloo")
        self._owns_group = False
        self._group: Any = None  # for our own small collectives: gloo, CPU tensors
        if self.env.is_distributed:
            if not dist.is_initialized():
                _import_group_defaults()
                dist.init_process_group(self.backend, rank=self.env.rank,
                                        world_size=self.env.world_size)
                self._owns_group = True
            self.backend = str(dist.get_backend())
            if dist.get_backend() != "gloo":
                self._group = dist.new_group(backend="gloo")
        seed_everything(seed + self.env.rank, deterministic=deterministic)
        self.amp: AmpPlan = plan_amp(
            amp if amp is not None else os.environ.get(AMP_ENV),
            device_type=self.device.type,
            bf16_supported=cuda and torch.cuda.is_bf16_supported(),
        )
        if self.amp.note and self.is_main:
            warnings.warn(self.amp.note, TrainingWarning, stacklevel=2)
        self.scaler = torch.amp.GradScaler("cuda") if self.amp.use_scaler else None
        if self.is_main:
            self.run_dir.mkdir(parents=True, exist_ok=True)
        self.spot = SpotWatcher(self.run_dir, watch_file=self.env.local_rank == 0)
        self.module: nn.Module | None = None  # the bare model (what checkpoints hold)
        self.model: nn.Module | None = None  # the model to call: DDP-wrapped when distributed
        self.optimizer: torch.optim.Optimizer | None = None
        self.scheduler: Any = None
        self.extra: dict[str, Any] = {}  # plain values saved and restored with checkpoints
        self.step_count = 0  # optimizer steps completed
        self.start_step = 0
        self.max_steps: int | None = None
        self.resumed_from: Path | None = None
        self.last_checkpoint: Path | None = None
        self._clock = time.monotonic  # tests move time forward without waiting
        self._last_ckpt_step = 0
        self._last_ckpt_time = self._clock()
        self._pending_rng: dict[str, Any] | None = None
        self._last_loss: torch.Tensor | float | None = None
        self._own_loaders: set[int] = set()
        self._epoch = 0
        self._t0: float | None = None  # when this process's first step began
        self._closed = False
        self.log(f"{self.env.world_size} process(es), backend "
                 f"{self.backend if self.env.is_distributed else 'none'}, device "
                 f"{self.device.type}, amp {self.amp.mode}, run folder {self.run_dir}")

    # ------------------------------------------------------------------ facts

    @property
    def rank(self) -> int:
        return self.env.rank

    @property
    def world_size(self) -> int:
        return self.env.world_size

    @property
    def is_main(self) -> bool:
        return self.env.is_main

    def log(self, message: str) -> None:
        """Log on rank 0 only."""
        if self.is_main:
            log.info(message)

    # ------------------------------------------------------------------ setup

    def prepare(self, model: nn.Module, optimizer: torch.optim.Optimizer,
                scheduler: Any = None) -> nn.Module:
        """Move to the device, resume from the newest valid checkpoint, wrap in DDP.

        Returns the model to call in the training loop (``self.model``).
        """
        self.module = model.to(self.device)
        self.optimizer = optimizer
        self.scheduler = scheduler
        if self._resume_enabled:
            self._resume()
        if self.env.is_distributed:
            ids = [self.device.index] if self.device.type == "cuda" else None
            self.model = DistributedDataParallel(self.module, device_ids=ids)
        else:
            self.model = self.module
        return self.model

    def sampler(self, dataset: Dataset[Any], *, shuffle: bool = True) -> ResumableSampler[Any]:
        """This rank's shard of ``dataset``, in an order fixed by the seed and epoch."""
        return ResumableSampler(dataset, num_replicas=self.world_size, rank=self.rank,
                                shuffle=shuffle, seed=self.seed)

    def loader(self, dataset: Dataset[Any], batch_size: int, *, shuffle: bool = True,
               drop_last: bool = True, **kwargs: Any) -> DataLoader[Any]:
        """A DataLoader over this rank's shard that ``steps()`` can resume mid-epoch."""
        generator = torch.Generator()
        generator.manual_seed(self.seed)
        kwargs.setdefault("pin_memory", self.device.type == "cuda")
        loader: DataLoader[Any] = DataLoader(
            dataset, batch_size=batch_size, sampler=self.sampler(dataset, shuffle=shuffle),
            drop_last=drop_last, generator=generator, **kwargs)
        self._own_loaders.add(id(loader))
        return loader

    def to_device(self, obj: Any) -> Any:
        """Tensors (also inside tuples, lists and dicts) moved to this rank's device."""
        if isinstance(obj, torch.Tensor):
            return obj.to(self.device, non_blocking=self.device.type == "cuda")
        if isinstance(obj, Mapping):
            return {k: self.to_device(v) for k, v in obj.items()}
        if isinstance(obj, tuple) and hasattr(obj, "_fields"):  # a namedtuple
            return type(obj)(*(self.to_device(v) for v in obj))
        if isinstance(obj, tuple | list):
            return type(obj)(self.to_device(v) for v in obj)
        return obj

    # ------------------------------------------------------------------ the loop

    def steps(self, loader: DataLoader[Any], max_steps: int) -> Iterator[tuple[int, Any]]:
        """Yield ``(step, batch)`` until ``max_steps`` steps are done, epoch after epoch.

        Starts where the resumed checkpoint stopped, with the same batches and
        random state an uninterrupted run would have had. Call ``step()`` once
        per batch.
        """
        if self.model is None:
            raise RuntimeError("call Session.prepare(model, optimizer) before steps()")
        self.max_steps = max_steps
        per_epoch = steps_per_epoch(loader)
        if per_epoch == 0:
            raise ValueError("the loader yields no batches (dataset smaller than one batch?)")
        sampler = find_sampler(loader)
        if self.step_count and per_epoch is None:
            self.log("the loader has no length: the resumed run restarts its data order")
        while self.step_count < max_steps:
            skip = 0
            if per_epoch is not None:
                self._epoch, skip = divmod(self.step_count, per_epoch)
            set_epoch = getattr(sampler, "set_epoch", None)
            if callable(set_epoch):
                set_epoch(self._epoch)
            if skip and isinstance(sampler, ResumableSampler) and loader.batch_size:
                sampler.skip(skip * loader.batch_size)
                skip = 0
            if id(loader) in self._own_loaders and loader.generator is not None:
                loader.generator.manual_seed(self.seed * 1_000_003 + self._epoch)
            # Starting an iterator draws from the global RNG; keep that out of the run's state.
            with torch.random.fork_rng(devices=[]):
                batches = iter(loader)
                for _ in range(skip):
                    next(batches, None)
            if self._pending_rng is not None:
                restore_rng(self._pending_rng, self.device)
                self._pending_rng = None
            if self._t0 is None:
                self._t0 = time.monotonic()
            for batch in batches:
                before = self.step_count
                yield before, batch
                if self.step_count == before:
                    raise RuntimeError("call Session.step() once for every batch from steps()")
                if self.step_count >= max_steps:
                    return
            if per_epoch is None:
                self._epoch += 1

    def autocast(self) -> contextlib.AbstractContextManager[Any]:
        """The forward pass's autocast context (a no-op with amp off)."""
        if self.amp.mode == "off":
            return contextlib.nullcontext()
        dtype = torch.bfloat16 if self.amp.mode == "bf16" else torch.float16
        return torch.autocast(device_type=self.device.type, dtype=dtype)

    def backward(self, loss: torch.Tensor) -> None:
        """``loss.backward()``, scaled when fp16 needs it."""
        if self.scaler is not None:
            torch.autograd.backward(self.scaler.scale(loss))
        else:
            torch.autograd.backward(loss)

    def step(self, loss: torch.Tensor | float | None = None, *,
             clip_grad_norm: float | None = None) -> str | None:
        """Optimizer (and scheduler) step, zero_grad, then the step boundary.

        ``loss`` only feeds the progress file and log. Returns why a checkpoint
        was written at this boundary ("interval", "spot notice"), else None.
        """
        opt = self.optimizer
        if opt is None or self.module is None:
            raise RuntimeError("call Session.prepare(model, optimizer) before step()")
        if self.scaler is not None:
            if clip_grad_norm is not None:
                self.scaler.unscale_(opt)
                nn.utils.clip_grad_norm_(self.module.parameters(), clip_grad_norm)
            self.scaler.step(opt)
            self.scaler.update()
        else:
            if clip_grad_norm is not None:
                nn.utils.clip_grad_norm_(self.module.parameters(), clip_grad_norm)
            opt.step()
        opt.zero_grad(set_to_none=True)
        if self.scheduler is not None:
            self.scheduler.step()
        self.step_count += 1
        if loss is not None:
            self._last_loss = loss.detach() if isinstance(loss, torch.Tensor) else loss
        return self._boundary()

    def _boundary(self) -> str | None:
        seen = self.spot.poll()
        time_due = (self.is_main and self.interval.seconds is not None
                    and self._clock() - self._last_ckpt_time >= self.interval.seconds)
        # [highest signalled rank + 1, a notice file seen on some node, rank 0's clock says due]
        flags = self._all_max([self.rank + 1 if seen == "signal" else 0,
                               int(seen == "file"), int(time_due)])
        steps_due = (self.interval.steps is not None
                     and self.step_count % self.interval.steps == 0)
        reason = None
        if flags[0] or flags[1]:
            reason = "spot notice"
            self.spot.acknowledge()  # a node that shares the folder must not act on it again
            self._log_notice(flags[0] - 1 if flags[0] else None, bool(flags[1]))
        elif steps_due or flags[2]:
            reason = "interval"
        if reason is not None:
            self.save(reason)
        if self.step_count % self.log_every == 0:
            self._report(log_line=True)
        return reason

    def _log_notice(self, signalled_rank: int | None, file_seen: bool) -> None:
        if not self.is_main:
            return
        sources = []
        if signalled_rank is not None:
            sources.append(f"SIGUSR1 on rank {signalled_rank}")
        if file_seen:
            notice = self.spot.read_notice()
            detail = ", ".join(f"{k}={v}" for k, v in list(notice.items())[:4])
            sources.append(SPOT_NOTICE_FILE + (f" ({detail})" if detail else ""))
        log.warning("spot notice: %s; checkpointing at step %d and carrying on",
                    " and ".join(sources), self.step_count)

    # ------------------------------------------------------------------ checkpoints

    def save(self, reason: str = "manual") -> Path | None:
        """Write a checkpoint of this step on rank 0. Collective: every rank must call it."""
        if self.module is None or self.optimizer is None:
            raise RuntimeError("call Session.prepare(model, optimizer) before save()")
        states = self._gather(capture_rng(self.device))
        error: Exception | None = None
        if self.is_main:
            payload = {
                "step": self.step_count,
                "world_size": self.world_size,
                "epoch": self._epoch,
                "model": self.module.state_dict(),
                "optimizer": self.optimizer.state_dict(),
                "scaler": self.scaler.state_dict() if self.scaler is not None else None,
                "scheduler": self.scheduler.state_dict() if self.scheduler is not None else None,
                "rng": states,
                "extra": dict(self.extra),
                "amp": self.amp.mode,
            }
            try:
                info = write_checkpoint(self.run_dir, self.step_count, payload,
                                        meta={"rank": self.rank, "reason": reason,
                                              "world_size": self.world_size})
                prune(self.run_dir, self.keep_last)
            except Exception as exc:  # told to every rank below instead of leaving them waiting
                log.error("checkpoint at step %d failed: %s", self.step_count, exc)
                error = exc
            else:
                self.last_checkpoint = info.path
                log.info("checkpoint (%s) at step %d: %s", reason, self.step_count, info.path)
                self._report()
        # Doubles as the barrier: nobody runs ahead of a checkpoint being written.
        if self._all_max([error is not None])[0]:
            raise CheckpointError(f"rank 0 could not write the checkpoint at step "
                                  f"{self.step_count} to {self.run_dir}") from error
        self._last_ckpt_step = self.step_count
        self._last_ckpt_time = self._clock()
        return self.last_checkpoint if self.is_main else None

    def _resume_from(self) -> tuple[CheckpointInfo, dict[str, Any]] | None:
        """``$GPUDESK_RESUME_FROM`` (the bucket's latest) when it is set and verifies,
        else the newest valid checkpoint in the run folder."""
        wanted = resolve_resume_from()
        if wanted is not None:
            info = checkpoint_at(wanted)
            try:
                if info is None:
                    raise CheckpointError(f"{wanted.name} is not named like a checkpoint")
                return info, load_checkpoint(info)
            except (CheckpointError, OSError) as exc:
                log.warning("GPUDESK_RESUME_FROM=%s cannot be used (%s); resuming from the "
                            "newest checkpoint in %s instead", wanted, exc, self.run_dir)
        return newest_valid(self.run_dir)

    def _resume(self) -> None:
        found = self._resume_from() if self.is_main else None
        # a bare name inside the run folder; a full path elsewhere (run_dir / abs == abs)
        name = self._broadcast(None if found is None else found[0].path.name
                               if found[0].path.parent == self.run_dir
                               else str(found[0].path))
        if name is None:
            self.log(f"no checkpoint in {self.run_dir}: starting at step 0")
            return
        payload = found[1] if found else self._load_local(self.run_dir / name)
        if self.env.is_distributed and not self._all_min([payload is not None])[0]:
            # Another node has no copy of the file: rank 0 sends it.
            payload = self._broadcast(payload if self.is_main else None)
        assert payload is not None and self.module is not None and self.optimizer is not None
        self.module.load_state_dict(payload["model"])
        self.optimizer.load_state_dict(payload["optimizer"])
        if self.scaler is not None and payload.get("scaler"):
            self.scaler.load_state_dict(payload["scaler"])
        if self.scheduler is not None and payload.get("scheduler"):
            self.scheduler.load_state_dict(payload["scheduler"])
        self.extra.update(payload.get("extra") or {})
        self.step_count = self.start_step = self._last_ckpt_step = int(payload["step"])
        self._epoch = int(payload.get("epoch", 0))
        self.resumed_from = self.last_checkpoint = self.run_dir / name
        states: list[Any] = payload.get("rng") or []
        if len(states) == self.world_size:
            self._pending_rng = states[self.rank]
        else:
            seed_everything(self.seed + self.rank + 7919 * self.step_count)
            if self.is_main:
                warnings.warn(f"the checkpoint was written by {len(states)} processes, this run "
                              f"has {self.world_size}: random state and data order are new",
                              TrainingWarning, stacklevel=3)
        self.log(f"resumed from {name} at step {self.step_count}")

    def _load_local(self, path: Path) -> dict[str, Any] | None:
        info = checkpoint_at(path)
        try:
            return load_checkpoint(info) if info is not None else None
        except (CheckpointError, FileNotFoundError):
            return None

    def _report(self, status: str = "running", *, log_line: bool = False,
                all_ranks: bool = False) -> None:
        """Rewrite progress.json for gpudesk's window (rank 0 only). ``all_ranks``: every
        rank has finished (said past the final barrier, ``ALL_RANKS_FINISHED``)."""
        if not self.is_main:
            return
        loss = self._last_loss
        loss_value = float(loss) if loss is not None else None
        if loss_value is not None and not math.isfinite(loss_value):
            loss_value = None
        elapsed = time.monotonic() - self._t0 if self._t0 is not None else 0.0
        done = self.step_count - self.start_step
        rate = done / elapsed if elapsed > 0 else 0.0
        atomic_write_json(self.run_dir / PROGRESS_FILE, {
            "status": status, "step": self.step_count, "max_steps": self.max_steps,
            "loss": loss_value, "time": time.time(), "elapsed_s": round(elapsed, 3),
            "steps_per_s": round(rate, 3), "world_size": self.world_size, "amp": self.amp.mode,
            "checkpoint": str(self.last_checkpoint) if self.last_checkpoint else None,
            "checkpoint_step": self._last_ckpt_step if self.last_checkpoint else None,
            "resumed_from": str(self.resumed_from) if self.resumed_from else None,
            "pid": os.getpid(), **({ALL_RANKS_FINISHED: True} if all_ranks else {}),
        }, durable=False)
        if log_line:
            shown = f"{loss_value:.4g}" if loss_value is not None else "-"
            log.info("step %d/%s  loss %s  %.2f steps/s", self.step_count,
                     self.max_steps or "?", shown, rate)

    # ------------------------------------------------------------------ the end

    def finish(self) -> None:
        """Final checkpoint (unless this step has one), progress 'finished', leave the group."""
        if self._closed:
            return
        if self.module is not None and self.step_count > self._last_ckpt_step:
            self.save("final")
        self._report("finished")
        self.log(f"finished at step {self.step_count}")
        all_ranks = not self.env.is_distributed
        if self._owns_group and dist.is_initialized() and dist.get_world_size() > 1:
            # Every rank past its last collective before any tears down (only on this
            # normal path: a failing rank must not wait for peers that are still training).
            # A rank that destroyed gloo while a peer still had work in flight was seen to
            # abort ("terminate called without an active exception", exit status 134).
            dist.barrier()
            all_ranks = True
        if all_ranks:
            # Past the barrier every rank has written (rank 0) and reported its final step:
            # the launcher's status shows the run finished even if an exit then goes wrong.
            self._report("finished", all_ranks=True)
        if self._owns_group:
            self._release_group_holders()
        self.close()

    def _release_group_holders(self) -> None:
        """Let destroy_process_group end the group now, not at interpreter exit.

        Whatever still holds the process group keeps it alive past ``destroy_process_group``
        (which only unregisters it): gloo's group and threads then die while Python shuts
        down, where they can abort ("terminate called without an active exception",
        SIGABRT) after a finished run. Two holders are known: the DDP wrapper the script
        keeps (its reducer, logger and ``process_group``), and the default arguments
        (``group=group.WORLD``) of torch.distributed.nn.functional when that module was
        first imported after the group existed (DDP imports torch._dynamo, which imports
        it). Past the final barrier nothing is in flight: both let go, and the wrapper
        calls the bare model from now on, so evaluation after ``finish()`` still works."""
        ddp = self.model
        if isinstance(ddp, DistributedDataParallel):
            for name in DDP_GROUP_HOLDERS:
                ddp.__dict__.pop(name, None)
            ddp.__dict__["forward"] = ddp.module.forward
            self.model = self.module
        _clear_group_defaults()

    def close(self) -> None:
        """Leave the process group and restore the signal handler; no checkpoint."""
        if self._closed:
            return
        self._closed = True
        self.spot.close()
        if self._owns_group and dist.is_initialized():
            dist.destroy_process_group()

    def __enter__(self) -> Session:
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        if kind is None:
            self.finish()
        else:
            with contextlib.suppress(Exception):
                self._report("failed")
            self.close()

    # ------------------------------------------------------------------ collectives

    def _all_max(self, values: Sequence[int]) -> list[int]:
        if not self.env.is_distributed:
            return list(values)
        tensor = torch.tensor(list(values), dtype=torch.int64)
        dist.all_reduce(tensor, op=dist.ReduceOp.MAX, group=self._group)
        return [int(v) for v in tensor.tolist()]

    def _all_min(self, flags: Sequence[bool]) -> list[int]:
        return [-v for v in self._all_max([-int(f) for f in flags])]

    def _broadcast(self, obj: Any) -> Any:
        if not self.env.is_distributed:
            return obj
        box = [obj]
        dist.broadcast_object_list(box, src=0, group=self._group)
        return box[0]

    def _gather(self, obj: Any) -> list[Any]:
        if not self.env.is_distributed:
            return [obj]
        out: list[Any] = [None] * self.world_size
        dist.all_gather_object(out, obj, group=self._group)
        return out
