"""Which autocast dtype and scaler an AMP request really gets on this device.

Torch-free decision logic: fp16 needs a GradScaler and is only worth it on
CUDA; CPU autocast is bf16; GPUs before Ampere have no fast bf16.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

AmpMode = Literal["bf16", "fp16", "off"]

_ALIASES: dict[str, AmpMode] = {
    "bf16": "bf16", "amp-bf16": "bf16", "bfloat16": "bf16",
    "fp16": "fp16", "amp-fp16": "fp16", "float16": "fp16", "half": "fp16",
    "off": "off", "none": "off", "fp32": "off", "float32": "off", "no": "off", "": "off",
}


@dataclass(frozen=True)
class AmpPlan:
    """What autocast will do; ``note`` says why it differs from what was asked."""

    requested: str
    mode: AmpMode
    device_type: str
    use_scaler: bool
    note: str | None = None

    @property
    def dtype_name(self) -> str | None:
        return {"bf16": "bfloat16", "fp16": "float16"}.get(self.mode)


def parse_amp(value: str | None) -> AmpMode:
    key = (value or "").strip().lower()
    if key not in _ALIASES:
        raise ValueError(f"amp={value!r}: choose bf16, fp16 or off")
    return _ALIASES[key]


def plan_amp(value: str | None, *, device_type: str, bf16_supported: bool) -> AmpPlan:
    """Resolve ``value`` for ``device_type`` ("cuda" or "cpu")."""
    mode = parse_amp(value)
    requested = value or "off"
    if mode == "fp16" and device_type != "cuda":
        return AmpPlan(requested, "bf16", device_type, False,
                       "fp16 autocast needs CUDA (GradScaler); using bf16 autocast on the CPU")
    if mode == "bf16" and device_type == "cuda" and not bf16_supported:
        return AmpPlan(requested, "fp16", device_type, True,
                       "this GPU has no bf16 support; using fp16 autocast with a GradScaler")
    return AmpPlan(requested, mode, device_type, mode == "fp16")
