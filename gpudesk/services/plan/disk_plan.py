"""The disk a job's machine needs: its dataset, the checkpoints it keeps, the environment
and some headroom (issue 32, "Disk that fits").

Pure, no Qt and no bucket: the Plan page, the Launch dialog and ``gpudesk launch`` print
the same parts and refuse the same too-small disk with the same words before any cloud
is asked. The parts:

- **data**: the dataset's bytes once. The machine's fetch (``agent/data_fetch.py``)
  writes into ``<sha>.part`` and renames it to ``<sha>`` on the same disk, so the data is
  never there twice.
- **checkpoints**: the checkpoints kept, plus the one being written: a trainer that keeps
  N (Hugging Face's ``save_total_limit``, the usual "keep the last N") saves the new one
  before it deletes the oldest, so N + 1 are on the disk for a while. One checkpoint's
  size comes from :func:`checkpoint_bytes` (``calc.sizing``'s own figures).
- **environment**: the operating system, the NVIDIA driver, CUDA and one PyTorch
  environment: :data:`ENVIRONMENT_GB`, an estimate (see there).
- **headroom**: :data:`HEADROOM` of the rest, for logs, outputs, pip's cache and the
  like; a rule of thumb, not a measured figure.

Units: "GB" is the Launch dialog's and ``--disk-gb``'s unit, which the clouds size as
GiB (EC2's ``VolumeSize`` and ECS's ``SystemDisk.Size`` are GiB), so every figure here
is bytes / 2^30: the same number ``gpudesk data ls`` prints for a dataset, and never a
disk smaller than the bytes.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from dataclasses import replace
from typing import Any

from gpudesk.calc import sizing
from gpudesk.i18n_marks import QT_TRANSLATE_NOOP
from gpudesk.services.core.errors import TemplatedError
from gpudesk.services.core.said import Said

CONTEXT = "DiskPlan"
GIB = 1024**3
# An estimate, not one image's measured size: Ubuntu with the NVIDIA driver, one CUDA
# toolkit and one PyTorch environment with its CUDA libraries (cuDNN, cuBLAS, NCCL) is
# some 20-30 GB installed; the clouds' own deep-learning images carry several CUDA
# toolkits and can be larger. The firm lower bound for an image is its own snapshot size,
# which the AWS launch checks against the disk besides this (providers/aws.py,
# ``MSG_DISK_BELOW_IMAGE``).
ENVIRONMENT_GB = 30
HEADROOM = 0.10  # of data + checkpoints + environment: logs, outputs, caches
MIN_DISK_GB = 30  # the Launch dialog's smallest disk

MSG_ALL = QT_TRANSLATE_NOOP(
    "DiskPlan", "data {data} + {count} checkpoints × {checkpoint} ({kept} kept, 1 being "
    "written) + environment {environment} (an estimate) + headroom {headroom} = {total}")
MSG_NO_DATA = QT_TRANSLATE_NOOP(
    "DiskPlan", "{count} checkpoints × {checkpoint} ({kept} kept, 1 being written) + "
    "environment {environment} (an estimate) + headroom {headroom} = {total}")
MSG_NO_CHECKPOINTS = QT_TRANSLATE_NOOP(
    "DiskPlan", "data {data} + environment {environment} (an estimate) + headroom "
    "{headroom} = {total}")
MSG_ENVIRONMENT_ONLY = QT_TRANSLATE_NOOP(
    "DiskPlan", "environment {environment} (an estimate) + headroom {headroom} = {total}")
MSG_NEEDED = QT_TRANSLATE_NOOP(
    "DiskPlan", "Disk needed: {parts}")
MSG_TOO_SMALL = QT_TRANSLATE_NOOP(
    "DiskPlan", "A {disk_gb} GB disk is too small for this job: {parts}. Choose a bigger "
    "disk (at least {minimum} GB).")
MSG_BAD_KEPT = QT_TRANSLATE_NOOP(
    "DiskPlan", "Checkpoints kept must be a whole number from 0 to {maximum} (got {value}).")
MSG_BAD_SIZE = QT_TRANSLATE_NOOP(
    "DiskPlan", "A size must be a number of GB of at least 0 (got {value}).")
MAX_KEPT = 1000


class DiskTooSmall(TemplatedError):
    """A disk that cannot hold the job; said before any cloud is asked."""

    translation_context = CONTEXT


class DiskPlanError(TemplatedError):
    """Bad input to the disk plan (a negative size, checkpoints kept out of range)."""

    translation_context = CONTEXT


BIG_GB = 100_000  # above this a size is no disk a cloud sells: said in scaling units


def gb_text(n_bytes: float) -> str:
    """Bytes in the disk field's GB (2^30 bytes), one decimal: ``42.0 GB``; a size no disk
    has (an absurd model) in TB, PB, EB, then powers of ten, so it never runs off a line."""
    gb = n_bytes / GIB
    if gb < BIG_GB:
        return f"{gb:,.1f} GB"
    for unit in ("TB", "PB", "EB"):
        gb /= 1024
        if gb < 1024:
            return f"{gb:,.1f} {unit}"
    return f"{n_bytes:.3g} bytes"


def gb_bytes(gb: float) -> int:
    """A typed size in the disk field's GB, as bytes; raises DiskPlanError below 0."""
    if not math.isfinite(gb) or gb < 0:
        raise DiskPlanError(MSG_BAD_SIZE, value=gb)
    return int(round(gb * GIB))


def checkpoint_bytes(model: sizing.ModelSpec, setup: sizing.Setup) -> int:
    """One training checkpoint of ``model`` under ``setup``: its trainable weights and the
    optimizer state, as ``sizing.estimate`` counts them for one unsharded GPU (a
    checkpoint holds the whole model whatever the GPU count or ZeRO stage). The trainable
    weights are taken as the gradients' bytes, which sizing counts with the weights' own
    dtype and count (g = w) without ZeRO; a LoRA or head-only checkpoint holds no frozen
    base (PEFT's ``save_pretrained`` writes the adapter). Inference saves none: 0."""
    if setup.mode != "train":
        return 0
    whole = replace(setup, gpus=1, zero=0, fsdp="none", offload=False)
    est = sizing.estimate(model, whole)
    return int(est.gradients_bytes + est.optimizer_bytes)


def check_kept(kept: int) -> int:
    if isinstance(kept, bool) or not isinstance(kept, int) or not 0 <= kept <= MAX_KEPT:
        raise DiskPlanError(MSG_BAD_KEPT, maximum=MAX_KEPT, value=kept)
    return kept


@dataclass(frozen=True)
class DiskNeed:
    """The parts of a job's disk, in bytes, and the disk (GB) that holds them."""

    data_bytes: int = 0
    checkpoints_kept: int = 0
    checkpoint_bytes: int = 0
    environment_bytes: int = ENVIRONMENT_GB * GIB
    headroom: float = HEADROOM
    data_name: str = ""  # the dataset's name, where one is named (for the record)

    @property
    def checkpoints_on_disk(self) -> int:
        """The kept ones and the one being written; none where none are kept."""
        return self.checkpoints_kept + 1 if self.checkpoints_kept and self.checkpoint_bytes \
            else 0

    @property
    def checkpoints_bytes(self) -> int:
        return self.checkpoints_on_disk * self.checkpoint_bytes

    @property
    def headroom_bytes(self) -> int:
        base = self.data_bytes + self.checkpoints_bytes + self.environment_bytes
        return int(math.ceil(base * self.headroom))

    @property
    def total_bytes(self) -> int:
        return (self.data_bytes + self.checkpoints_bytes + self.environment_bytes
                + self.headroom_bytes)

    @property
    def gb(self) -> int:
        """The smallest disk (whole GB, 2^30 bytes) that holds every part."""
        return int(math.ceil(self.total_bytes / GIB))

    @property
    def disk_gb(self) -> int:
        """The disk to ask for: :attr:`gb`, and never below the dialog's smallest."""
        return max(self.gb, MIN_DISK_GB)

    def parts(self) -> Said:
        """``data 42.0 GB + 4 checkpoints × 26.0 GB (3 kept, 1 being written) +
        environment 30.0 GB (an estimate) + headroom 17.6 GB = 194 GB``."""
        values: dict[str, Any] = {"environment": gb_text(self.environment_bytes),
                                  "headroom": gb_text(self.headroom_bytes),
                                  "total": (f"{self.gb} GB" if self.gb < BIG_GB
                                            else gb_text(self.total_bytes))}
        if self.checkpoints_on_disk:
            values.update(count=self.checkpoints_on_disk, kept=self.checkpoints_kept,
                          checkpoint=gb_text(self.checkpoint_bytes))
        if self.data_bytes:
            values["data"] = gb_text(self.data_bytes)
        template = (MSG_ALL if self.data_bytes and self.checkpoints_on_disk else
                    MSG_NO_DATA if self.checkpoints_on_disk else
                    MSG_NO_CHECKPOINTS if self.data_bytes else MSG_ENVIRONMENT_ONLY)
        return Said(CONTEXT, template, **values)

    def said(self) -> Said:
        """``Disk needed: …`` (the Plan page's line)."""
        return Said(CONTEXT, MSG_NEEDED, parts=self.parts())

    def check(self, disk_gb: int) -> None:
        """Raise DiskTooSmall, with every part, for a disk that cannot hold them."""
        if disk_gb < self.gb:
            raise DiskTooSmall(MSG_TOO_SMALL, disk_gb=disk_gb, parts=self.parts(),
                               minimum=self.gb)

    def to_json(self) -> dict[str, Any]:
        return {"data_bytes": self.data_bytes, "data_name": self.data_name,
                "checkpoints_kept": self.checkpoints_kept,
                "checkpoints_on_disk": self.checkpoints_on_disk,
                "checkpoint_bytes": self.checkpoint_bytes,
                "environment_bytes": self.environment_bytes,
                "headroom_bytes": self.headroom_bytes, "total_bytes": self.total_bytes,
                "disk_gb": self.gb, "environment_is_estimate": True}


def disk_need(*, data_bytes: int = 0, checkpoints_kept: int = 0, checkpoint_size: int = 0,
              data_name: str = "") -> DiskNeed:
    """The disk for a job; raises DiskPlanError for a negative size or a bad count."""
    if data_bytes < 0 or checkpoint_size < 0:
        raise DiskPlanError(MSG_BAD_SIZE, value=min(data_bytes, checkpoint_size) / GIB)
    return DiskNeed(data_bytes=int(data_bytes), checkpoints_kept=check_kept(checkpoints_kept),
                    checkpoint_bytes=int(checkpoint_size), data_name=data_name)
