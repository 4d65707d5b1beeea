"""gpudesk quickstart: a small classifier on synthetic data, with DDP, AMP and resume.

    torchrun --standalone --nproc-per-node 2 train.py     # 2 processes: CPU (gloo) or GPUs (NCCL)
    python train.py                                       # one process
    gpudesk run --on TARGET --project . --nproc 2 --amp bf16 -- train.py

Stop it at any point and start it again: it carries on from its newest
checkpoint in ./checkpoints (or $GPUDESK_RUN_DIR when gpudesk runs it).
"""

from __future__ import annotations

import argparse

import torch
from torch import nn
from torch.nn import functional as F  # noqa: N812
from torch.utils.data import TensorDataset

from gpudesk.training import Session

DIM, CLASSES = 32, 10


def make_data(rows: int, seed: int) -> TensorDataset:
    """Gaussian blobs around fixed class centres: easy to learn, nothing to download."""
    centres = torch.randn(CLASSES, DIM, generator=torch.Generator().manual_seed(0)) * 0.6
    g = torch.Generator().manual_seed(seed)
    labels = torch.randint(CLASSES, (rows,), generator=g)
    return TensorDataset(centres[labels] + torch.randn(rows, DIM, generator=g), labels)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--steps", type=int, default=300)
    p.add_argument("--batch-size", type=int, default=64, help="per process")
    p.add_argument("--lr", type=float, default=3e-3)
    p.add_argument("--amp", default=None, help="bf16, fp16 or off (default: $GPUDESK_AMP, off)")
    p.add_argument("--checkpoint-every-steps", type=int, default=None,
                   help="default: $GPUDESK_CHECKPOINT_EVERY_MIN minutes, else 10 minutes")
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args()

    # 1. The session first: it joins the other processes, picks the device and seeds.
    s = Session(seed=args.seed, amp=args.amp, checkpoint_every_steps=args.checkpoint_every_steps)

    # 2. Your model and optimizer, as usual; prepare() resumes them and wraps them in DDP.
    model = nn.Sequential(nn.Linear(DIM, 128), nn.GELU(), nn.Dropout(0.1),
                          nn.Linear(128, CLASSES))
    optimizer = torch.optim.AdamW(model.parameters(), lr=args.lr, weight_decay=0.01)
    scheduler = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=args.steps)
    ddp_model = s.prepare(model, optimizer, scheduler)

    # 3. Each process reads its own shard; steps() starts where the checkpoint stopped.
    loader = s.loader(make_data(8192, seed=1), batch_size=args.batch_size)
    for _step, batch in s.steps(loader, max_steps=args.steps):
        x, y = s.to_device(batch)
        with s.autocast():
            loss = F.cross_entropy(ddp_model(x), y)
        s.backward(loss)
        s.step(loss, clip_grad_norm=1.0)  # optimizer + scheduler, checkpoints, progress.json
    s.finish()

    if s.is_main:
        x, y = s.to_device(make_data(2048, seed=2).tensors)
        model.eval()
        with torch.no_grad(), s.autocast():
            accuracy = (model(x).argmax(dim=1) == y).float().mean().item()
        print(f"validation accuracy {accuracy:.3f} after {s.step_count} steps", flush=True)


if __name__ == "__main__":
    main()
