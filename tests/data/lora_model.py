"""A PEFT-style LoRA-wrapped MLP for tests/test_tracing.py (no peft needed).

Each base ``nn.Linear`` is frozen and gets A (r × d_in) and B (d_out × r), as
``peft.tuners.lora.Linear`` does, with a dropout on the adapter's input.
"""

from __future__ import annotations

import torch
from torch import nn

RANK = 4


class LoraLinear(nn.Module):
    def __init__(self, d_in: int, d_out: int, rank: int = RANK) -> None:
        super().__init__()
        self.base_layer = nn.Linear(d_in, d_out)
        self.base_layer.requires_grad_(False)
        self.lora_A = nn.Linear(d_in, rank, bias=False)
        self.lora_B = nn.Linear(rank, d_out, bias=False)
        self.lora_dropout = nn.Dropout(0.05)
        self.scaling = 2.0

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.base_layer(x) + self.lora_B(self.lora_A(self.lora_dropout(x))) * self.scaling


def make_lora_mlp() -> nn.Module:
    return nn.Sequential(LoraLinear(256, 512), nn.ReLU(), LoraLinear(512, 512), nn.ReLU(),
                         LoraLinear(512, 10))
