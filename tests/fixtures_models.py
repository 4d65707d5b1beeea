"""Small models for tests/test_tracing.py and benchmarks/bench_sizing_accuracy.py.

Each public ``make_*`` function takes no arguments and returns an ``nn.Module``,
so it can be named as a trace target: ``tests.fixtures_models:make_mlp``.
``TinyGPT`` is laid out so that ``gpudesk.calc.sizing.ModelSpec(kind="decoder")``
counts its parameters exactly (GPT-2 style: learned positions, tied embeddings,
biases, dropout, FFN = 4h). ``resnet50`` follows torchvision's layout.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F  # noqa: N812
from torch import nn

# --------------------------------------------------------------------------- MLP

MLP_IN = 256


def make_mlp() -> nn.Module:
    return nn.Sequential(
        nn.Linear(MLP_IN, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(), nn.Linear(512, 10)
    )


# --------------------------------------------------------------------------- GPT

GPT_CONFIG = {"layers": 2, "hidden": 64, "heads": 4, "ffn": 256, "vocab": 512,
              "max_positions": 128}


class Block(nn.Module):
    def __init__(self, hidden: int, heads: int, ffn: int, dropout: float) -> None:
        super().__init__()
        self.heads = heads
        self.ln_1 = nn.LayerNorm(hidden)
        self.c_attn = nn.Linear(hidden, 3 * hidden)
        self.attn_proj = nn.Linear(hidden, hidden)
        self.ln_2 = nn.LayerNorm(hidden)
        self.c_fc = nn.Linear(hidden, ffn)
        self.mlp_proj = nn.Linear(ffn, hidden)
        self.attn_drop = nn.Dropout(dropout)
        self.resid_drop = nn.Dropout(dropout)
        self.mlp_drop = nn.Dropout(dropout)

    def attention(self, x: torch.Tensor) -> torch.Tensor:
        b, s, h = x.shape
        q, k, v = self.c_attn(x).split(h, dim=2)
        shape = (b, s, self.heads, h // self.heads)
        q, k, v = (t.view(shape).transpose(1, 2) for t in (q, k, v))
        scores = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(h // self.heads))
        causal = torch.ones(s, s, dtype=torch.bool, device=x.device).triu(1)
        probs = self.attn_drop(F.softmax(scores.masked_fill(causal, float("-inf")), dim=-1))
        y = (probs @ v).transpose(1, 2).reshape(b, s, h)
        return self.resid_drop(self.attn_proj(y))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + self.attention(self.ln_1(x))
        return x + self.mlp_drop(self.mlp_proj(F.gelu(self.c_fc(self.ln_2(x)))))


class TinyGPT(nn.Module):
    """forward(idx) -> (loss, logits); next-token cross-entropy on ``idx`` itself."""

    def __init__(self, layers: int, hidden: int, heads: int, ffn: int, vocab: int,
                 max_positions: int, dropout: float = 0.1) -> None:
        super().__init__()
        self.wte = nn.Embedding(vocab, hidden)
        self.wpe = nn.Embedding(max_positions, hidden)
        self.drop = nn.Dropout(dropout)
        self.blocks = nn.ModuleList(Block(hidden, heads, ffn, dropout) for _ in range(layers))
        self.ln_f = nn.LayerNorm(hidden)

    def forward(self, idx: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        pos = torch.arange(idx.shape[1], device=idx.device)
        x = self.drop(self.wte(idx) + self.wpe(pos))
        for block in self.blocks:
            x = block(x)
        logits = F.linear(self.ln_f(x), self.wte.weight)  # tied LM head
        targets = torch.roll(idx, -1, dims=1)
        loss = F.cross_entropy(logits.view(-1, logits.shape[-1]), targets.view(-1))
        return loss, logits


def make_gpt() -> nn.Module:
    return TinyGPT(**GPT_CONFIG)


# --------------------------------------------------------------------------- ResNet-50


class Bottleneck(nn.Module):
    expansion = 4

    def __init__(self, inplanes: int, planes: int, stride: int = 1,
                 downsample: nn.Module | None = None) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(inplanes, planes, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(planes)
        self.conv2 = nn.Conv2d(planes, planes, 3, stride=stride, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(planes)
        self.conv3 = nn.Conv2d(planes, planes * self.expansion, 1, bias=False)
        self.bn3 = nn.BatchNorm2d(planes * self.expansion)
        self.relu = nn.ReLU(inplace=True)
        self.downsample = downsample

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        identity = x
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.relu(self.bn2(self.conv2(out)))
        out = self.bn3(self.conv3(out))
        if self.downsample is not None:
            identity = self.downsample(x)
        out += identity
        return self.relu(out)


class ResNet(nn.Module):
    def __init__(self, layers: tuple[int, int, int, int], num_classes: int = 1000) -> None:
        super().__init__()
        self.inplanes = 64
        self.conv1 = nn.Conv2d(3, 64, 7, stride=2, padding=3, bias=False)
        self.bn1 = nn.BatchNorm2d(64)
        self.relu = nn.ReLU(inplace=True)
        self.maxpool = nn.MaxPool2d(kernel_size=3, stride=2, padding=1)
        self.layer1 = self._make_layer(64, layers[0])
        self.layer2 = self._make_layer(128, layers[1], stride=2)
        self.layer3 = self._make_layer(256, layers[2], stride=2)
        self.layer4 = self._make_layer(512, layers[3], stride=2)
        self.avgpool = nn.AdaptiveAvgPool2d((1, 1))
        self.fc = nn.Linear(512 * Bottleneck.expansion, num_classes)

    def _make_layer(self, planes: int, blocks: int, stride: int = 1) -> nn.Sequential:
        downsample = None
        if stride != 1 or self.inplanes != planes * Bottleneck.expansion:
            downsample = nn.Sequential(
                nn.Conv2d(self.inplanes, planes * Bottleneck.expansion, 1, stride=stride,
                          bias=False),
                nn.BatchNorm2d(planes * Bottleneck.expansion),
            )
        layers = [Bottleneck(self.inplanes, planes, stride, downsample)]
        self.inplanes = planes * Bottleneck.expansion
        layers += [Bottleneck(self.inplanes, planes) for _ in range(1, blocks)]
        return nn.Sequential(*layers)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.maxpool(self.relu(self.bn1(self.conv1(x))))
        x = self.layer4(self.layer3(self.layer2(self.layer1(x))))
        return self.fc(torch.flatten(self.avgpool(x), 1))


def resnet50() -> nn.Module:
    return ResNet((3, 4, 6, 3))


# --------------------------------------------------------------------------- failures


def raises() -> nn.Module:
    raise RuntimeError("checkpoint file not found")


def not_a_module() -> object:
    return {"not": "a module"}


def uses_item() -> nn.Module:
    """A model whose forward reads a value: impossible without real data."""

    class ItemModel(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.lin = nn.Linear(8, 8)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            y = self.lin(x)
            return y[: int((y > 0).sum().item())]

    return ItemModel()


# --------------------------------------------------------------------------- real measurement


def make_optimizer(name: str, params: list[nn.Parameter]) -> torch.optim.Optimizer:
    """The optimizer gpudesk.calc.tracing builds for ``name`` (foreach, as on CUDA)."""
    if name == "sgd":
        return torch.optim.SGD(params, lr=0.1, foreach=True)
    if name == "adam":
        return torch.optim.Adam(params, foreach=True)
    return torch.optim.AdamW(params, foreach=True)


def _loss(out: object) -> torch.Tensor:
    if isinstance(out, tuple):
        out = out[0]
    assert isinstance(out, torch.Tensor)
    return out if out.numel() == 1 else out.float().mean()


def _allocator_trace(fn: object) -> tuple[int, list[int]]:
    """Run ``fn`` under the profiler; return (peak, marks) of bytes the CPU allocator
    holds above what it held at the start. ``fn`` gets a ``mark()`` callable whose
    calls record the allocator's level at that moment."""
    from torch.profiler import ProfilerActivity
    from torch.profiler import profile
    from torch.profiler import record_function

    labels: list[str] = []

    def mark() -> None:
        labels.append(f"gpudesk-mark-{len(labels)}")
        with record_function(labels[-1]):
            pass

    with profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof:
        fn(mark)  # type: ignore[operator]
    events = sorted(prof.profiler.kineto_results.events(), key=lambda e: e.start_ns())
    level = peak = 0
    marks: list[int] = []
    for e in events:
        if e.name() == "[memory]":
            level += e.nbytes()
            peak = max(peak, level)
        elif e.name().startswith("gpudesk-mark-"):
            marks.append(level)
    return peak, marks


def measure_real_step(make: object, make_inputs: object, optimizer: str = "adam",
                      seed: int = 0) -> dict[str, int]:
    """Train ``make()`` for real on the CPU and measure its memory, three ways.

    A first step creates the optimizer state; the second (a steady-state step,
    as ``gpudesk.calc.tracing`` reports) runs under the profiler with
    ``profile_memory=True``, whose ``[memory]`` events are every allocation and
    free of the CPU allocator: ``peak_bytes`` = bytes held before the step
    (weights, buffers, optimizer state) + the highest level above that, and
    ``activations_bytes`` the level right after the forward pass. Independently,
    ``saved_bytes`` counts the unique non-parameter storages autograd saves for
    backward (``torch.autograd.graph.saved_tensors_hooks``).
    """
    torch.manual_seed(seed)
    model = make()  # type: ignore[operator]
    model.train()
    params = list(model.parameters())
    opt = make_optimizer(optimizer, params)
    _loss(model(*make_inputs())).backward()  # type: ignore[operator]
    opt.step()
    opt.zero_grad(set_to_none=True)

    def storages(tensors: list[torch.Tensor]) -> dict[int, int]:
        return {t.untyped_storage().data_ptr(): t.untyped_storage().nbytes() for t in tensors}

    weights = sum(storages(params).values())
    buffers = sum(storages(list(model.buffers())).values())
    opt_state = [v for s in opt.state.values() for k, v in s.items()
                 if isinstance(v, torch.Tensor) and not (k == "step" and v.dim() == 0)]
    opt_bytes = sum(storages(opt_state).values())
    param_ptrs = set(storages(params))
    saved: dict[int, int] = {}

    def pack(t: torch.Tensor) -> torch.Tensor:
        st = t.untyped_storage()
        if st.data_ptr() not in param_ptrs:
            saved[st.data_ptr()] = st.nbytes()
        return t

    def step(mark: object) -> None:
        inputs = make_inputs()  # type: ignore[operator]
        with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
            loss = _loss(model(*inputs))
        mark()  # type: ignore[operator]
        loss.backward()
        del loss
        mark()  # type: ignore[operator]
        opt.step()

    peak_above, (after_fw, _after_bw) = _allocator_trace(step)
    grads = sum(storages([p.grad for p in params if p.grad is not None]).values())
    return {"params": sum(p.numel() for p in params), "weights_bytes": weights,
            "buffers_bytes": buffers, "gradients_bytes": grads, "optimizer_bytes": opt_bytes,
            "activations_bytes": after_fw, "saved_bytes": sum(saved.values()),
            "peak_bytes": weights + buffers + opt_bytes + peak_above}


def saved_elements(model: nn.Module, x: torch.Tensor) -> tuple[int, int]:
    """(elements, bytes) of the unique non-parameter, non-input storages autograd
    saves for backward in one training-mode forward of ``model`` on ``x``."""
    model.train()
    skip = {p.untyped_storage().data_ptr() for p in model.parameters()}
    skip.add(x.untyped_storage().data_ptr())
    saved: dict[int, tuple[int, int]] = {}
    keep: list[torch.Tensor] = []

    def pack(t: torch.Tensor) -> torch.Tensor:
        st = t.untyped_storage()
        if st.data_ptr() not in skip and st.data_ptr() not in saved:
            saved[st.data_ptr()] = (st.nbytes() // t.element_size(), st.nbytes())
            keep.append(t)
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        out = model(x)
    del out
    keep.clear()
    return sum(e for e, _ in saved.values()), sum(b for _, b in saved.values())
