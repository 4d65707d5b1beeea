"""Seeding and the random-number state a checkpoint must carry for an exact resume.

States are kept as plain ints, lists and tensors so that ``torch.load`` with
``weights_only=True`` accepts them.
"""

from __future__ import annotations

import os
import random
from typing import Any

import torch

try:
    import numpy as np
except ImportError:  # numpy is optional for the training helper
    np = None  # type: ignore[assignment]


def seed_everything(seed: int, *, deterministic: bool = False) -> None:
    """Seed python, numpy and torch (all CUDA devices); optionally force deterministic kernels."""
    random.seed(seed)
    if np is not None:
        np.random.seed(seed % 2**32)
    torch.manual_seed(seed)
    if deterministic:
        os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
        torch.backends.cudnn.benchmark = False
        torch.backends.cudnn.deterministic = True
        torch.use_deterministic_algorithms(True, warn_only=True)


def capture_rng(device: torch.device) -> dict[str, Any]:
    state: dict[str, Any] = {
        "python": random.getstate(),
        "torch": torch.get_rng_state(),
        "cuda": torch.cuda.get_rng_state(device) if device.type == "cuda" else None,
        "numpy": None,
    }
    if np is not None:
        kind, keys, pos, has_gauss, gauss = np.random.get_state(legacy=True)
        state["numpy"] = [str(kind), [int(k) for k in keys], int(pos), int(has_gauss),
                          float(gauss)]
    return state


def restore_rng(state: dict[str, Any], device: torch.device) -> None:
    version, internal, gauss_next = state["python"]
    random.setstate((version, tuple(internal), gauss_next))
    torch.set_rng_state(state["torch"])
    if device.type == "cuda" and state.get("cuda") is not None:
        torch.cuda.set_rng_state(state["cuda"], device)
    if np is not None and state.get("numpy") is not None:
        kind, keys, pos, has_gauss, gauss = state["numpy"]
        np.random.set_state((kind, np.asarray(keys, dtype=np.uint32), pos, has_gauss, gauss))
