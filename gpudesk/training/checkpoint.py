"""Checkpoint files: written atomically, verified on load, the last K kept.

Each checkpoint is ``ckpt-<step>.pt`` (``torch.save``) plus a small
``ckpt-<step>.json`` with its SHA-256 and size, written after it. The hash is
taken while the bytes stream out, so a big model is never held twice in
memory. On resume a file whose hash, size or zip structure is wrong (a copy cut
short, a disk that filled up) is skipped for the one before it.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import re
import socket
import time
from dataclasses import dataclass
from pathlib import Path
from typing import IO
from typing import Any
from typing import cast

import torch

log = logging.getLogger("gpudesk.training")

_NAME = re.compile(r"^ckpt-(\d{9,})\.pt$")
_TMP = re.compile(r"^\.ckpt-.*\.tmp-\d+$")
FORMAT = "gpudesk-checkpoint"
VERSION = 1


def checkpoint_name(step: int) -> str:
    return f"ckpt-{step:09d}.pt"


@dataclass(frozen=True)
class CheckpointInfo:
    path: Path
    step: int

    @property
    def sidecar(self) -> Path:
        return self.path.with_suffix(".json")


class _HashingWriter:
    """A write-only file that hashes what passes through it."""

    def __init__(self, raw: IO[bytes]) -> None:
        self.raw = raw
        self.digest = hashlib.sha256()
        self.size = 0

    def write(self, data: bytes) -> int:
        self.digest.update(data)
        self.size += len(data)
        return self.raw.write(data)

    def flush(self) -> None:
        self.raw.flush()


def _fsync_dir(folder: Path) -> None:
    with contextlib.suppress(OSError):  # not possible on Windows; rename is still atomic
        fd = os.open(folder, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def _tmp_path(target: Path) -> Path:
    return target.with_name(f".{target.name}.tmp-{os.getpid()}")


def atomic_write_bytes(path: Path, data: bytes, *, durable: bool = True) -> None:
    """Readers see the old file or the new one, never half of one."""
    tmp = _tmp_path(path)
    try:
        with open(tmp, "wb") as fh:
            fh.write(data)
            if durable:
                fh.flush()
                os.fsync(fh.fileno())
        os.replace(tmp, path)
    finally:
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()


def atomic_write_json(path: Path, data: dict[str, Any], *, durable: bool = True) -> None:
    atomic_write_bytes(path, (json.dumps(data, indent=1) + "\n").encode(), durable=durable)


def write_checkpoint(run_dir: Path, step: int, payload: dict[str, Any],
                     meta: dict[str, Any] | None = None) -> CheckpointInfo:
    """Save ``payload`` as the checkpoint for ``step`` (replacing one of that step)."""
    run_dir.mkdir(parents=True, exist_ok=True)
    info = CheckpointInfo(run_dir / checkpoint_name(step), step)
    tmp = _tmp_path(info.path)
    began = time.monotonic()  # how long a checkpoint takes: issue 33's checkpoint cost
    try:
        with open(tmp, "wb") as fh:
            writer = _HashingWriter(fh)
            torch.save({"format": FORMAT, "version": VERSION, **payload}, cast(IO[bytes], writer))
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, info.path)
    finally:
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()
    sidecar = {
        "step": step,
        "file": info.path.name,
        "bytes": writer.size,
        "sha256": writer.digest.hexdigest(),
        "time": time.time(),
        "write_s": round(time.monotonic() - began, 3),
        "host": socket.gethostname(),
        "pid": os.getpid(),
        **(meta or {}),
    }
    atomic_write_json(info.sidecar, sidecar)
    _fsync_dir(run_dir)
    return info


def list_checkpoints(run_dir: Path) -> list[CheckpointInfo]:
    """Checkpoint files by step, oldest first (not yet verified)."""
    try:
        names = os.listdir(run_dir)
    except OSError:
        return []
    found = [CheckpointInfo(run_dir / n, int(m.group(1))) for n in names if (m := _NAME.match(n))]
    return sorted(found, key=lambda c: c.step)


class CheckpointError(RuntimeError):
    """A checkpoint file that cannot be trusted."""


def _check_sidecar(info: CheckpointInfo) -> bool:
    """Raise if the sidecar disagrees with the file; False if there is no sidecar."""
    try:
        meta = json.loads(info.sidecar.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return False
    except (OSError, ValueError) as exc:
        raise CheckpointError(f"{info.sidecar.name} is unreadable: {exc}") from exc
    size = info.path.stat().st_size
    if meta.get("bytes") != size:
        raise CheckpointError(f"{info.path.name} has {size} bytes, expected {meta.get('bytes')}")
    with open(info.path, "rb") as fh:
        digest = hashlib.file_digest(fh, "sha256").hexdigest()
    if digest != meta.get("sha256"):
        raise CheckpointError(f"{info.path.name} does not match its SHA-256")
    return True


def load_checkpoint(info: CheckpointInfo) -> dict[str, Any]:
    """The verified payload on the CPU; raises CheckpointError for a bad file."""
    try:
        verified = _check_sidecar(info)
        payload = torch.load(info.path, map_location="cpu", weights_only=True)
    except CheckpointError:
        raise
    except Exception as exc:  # torch raises RuntimeError, EOFError, UnpicklingError...
        raise CheckpointError(f"{info.path.name} cannot be read: {exc}") from exc
    if not isinstance(payload, dict) or payload.get("format") != FORMAT:
        raise CheckpointError(f"{info.path.name} is not a gpudesk checkpoint")
    if payload.get("step") != info.step:
        raise CheckpointError(f"{info.path.name} holds step {payload.get('step')}")
    if not verified:
        log.warning("%s has no .json sidecar; loaded it without a hash check", info.path.name)
    return payload


def newest_valid(run_dir: Path) -> tuple[CheckpointInfo, dict[str, Any]] | None:
    """The newest checkpoint that verifies and loads, skipping (and logging) bad ones."""
    for info in reversed(list_checkpoints(run_dir)):
        try:
            return info, load_checkpoint(info)
        except CheckpointError as exc:
            log.warning("skipping checkpoint: %s", exc)
    return None


def prune(run_dir: Path, keep_last: int) -> list[Path]:
    """Delete all but the newest ``keep_last`` checkpoints, and stale temporary files."""
    removed: list[Path] = []
    for info in list_checkpoints(run_dir)[:-keep_last] if keep_last > 0 else []:
        for path in (info.path, info.sidecar):
            with contextlib.suppress(FileNotFoundError):
                path.unlink()
                removed.append(path)
    mine = f".tmp-{os.getpid()}"
    for name in os.listdir(run_dir):
        if _TMP.match(name) and not name.endswith(mine):
            with contextlib.suppress(FileNotFoundError):
                (run_dir / name).unlink()
                removed.append(run_dir / name)
    return removed


def checkpoint_at(path: Path) -> CheckpointInfo | None:
    """The CheckpointInfo for a file named like a checkpoint, else None."""
    match = _NAME.match(path.name)
    return CheckpointInfo(path, int(match.group(1))) if match else None
