"""The two things every calculator module shares: a model's published shape and the input error.

:class:`ModelSpec` is a model described by its configuration, never its
weights; :class:`SizingError` names the field whose input makes no sense.
Both live here, below :mod:`gpudesk.calc.sizing` and :mod:`gpudesk.calc.finetune`,
so that those two import downward only (sizing uses finetune, both use this).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any
from typing import Literal

ModelKind = Literal["decoder", "encoder", "vit", "cnn", "params"]


class SizingError(ValueError):
    """An input that makes no sense, naming the field so the UI can mark it.

    ``template`` is an English text with ``{placeholders}``; the window
    translates it (``QCoreApplication.translate("SizingError", template)``)
    before formatting, so the core stays Qt-free and both languages work.
    """

    def __init__(self, field_name: str, template: str, **values: Any) -> None:
        self.field = field_name
        self.template = template
        self.values = values
        super().__init__(f"{field_name}: {template.format(**values)}")


@dataclass(frozen=True)
class ModelSpec:
    """A model described by its published configuration, never its weights.

    ``kind="params"`` is a bare parameter count: model states are exact, but
    activations need a shape, so they are estimated from ``hidden``/``layers``
    when given and reported as zero (with a note) otherwise.
    """

    name: str
    kind: ModelKind
    layers: int = 0
    hidden: int = 0
    heads: int = 0
    kv_heads: int = 0
    ffn: int = 0
    vocab: int = 0
    max_positions: int = 0  # learned position table size; 0 = rotary/none
    gated_ffn: bool = False  # SwiGLU: three FFN matrices instead of two
    tied_embeddings: bool = True
    biases: bool = True
    dropout: bool = True  # stores a 1-byte mask per dropout, per Korthikanti
    token_types: int = 0  # BERT segment embeddings
    pooler: bool = False
    image_size: int = 0
    patch_size: int = 0
    channels: int = 3
    num_classes: int = 0
    params_override: int = 0  # for kind="params"/"cnn": the published count
    # CNNs: activation elements autograd keeps per image at image_size²
    # (measured; see benchmarks/../tests/test_sizing_cpu_measure.py).
    cnn_act_elements_per_image: float = 0.0
    cnn_forward_flops_per_image: float = 0.0
    source: str = ""
    head_size: int = 0  # per-head width when not hidden / heads (Gemma-7B: 256)
    # LLaMA-style RMSNorm upcasts its input to fp32 and keeps that copy for backward.
    norm_fp32: bool = False
    default_attention: str = "sdpa"  # what the model's framework runs by default

    @property
    def head_dim(self) -> int:
        if self.head_size:
            return self.head_size
        return self.hidden // self.heads if self.heads else 0

    @property
    def is_transformer(self) -> bool:
        return self.kind in ("decoder", "encoder", "vit")

    def tokens_per_sample(self, seq: int, image_size: int = 0) -> int:
        """Sequence length the transformer sees; for ViTs, patches + [CLS]."""
        if self.kind == "vit":
            size = image_size or self.image_size
            return (size // self.patch_size) ** 2 + 1
        return seq

    def layer_params(self) -> int:
        """Parameters of one transformer block (attention + FFN + norms)."""
        h, hd = self.hidden, self.head_dim
        kv, q = self.kv_heads * hd, self.heads * hd
        b = 1 if self.biases else 0
        attn = h * q + 2 * h * kv + q * h + b * (q + 2 * kv + h)
        n_mats = 3 if self.gated_ffn else 2
        ffn = n_mats * h * self.ffn + b * (self.ffn + h)
        norms = (4 if self.biases else 2) * h
        return attn + ffn + norms

    def parameter_count(self) -> int:
        if self.kind in ("params", "cnn"):
            return self.params_override
        h = self.hidden
        total = self.layers * self.layer_params()
        total += (4 if self.biases else 2) // 2 * h  # final norm (weight [+ bias])
        if self.kind == "vit":
            p = self.patch_size
            n_patches = (self.image_size // p) ** 2
            total += self.channels * p * p * h + h  # patch projection
            total += (n_patches + 1) * h + h  # position table + [CLS]
            total += self.num_classes * h + self.num_classes  # classifier head
            return total
        total += self.vocab * h
        total += self.max_positions * h + self.token_types * h
        if self.kind == "encoder":
            total += 2 * h  # embedding LayerNorm
        if self.pooler:
            total += h * h + h
        if not self.tied_embeddings:
            total += self.vocab * h
        return total
