"""Fine-tuning methods and quantized weights: what a LoRA/QLoRA job keeps per GPU.

Pure Python, no Qt, no torch; :mod:`gpudesk.calc.sizing` calls this for the parts
of an estimate that depend on *which* weights train and *how* they are stored.
Formulas and their sources sit next to the code; ``docs/sizing-finetune.md``
lists the published measurements they are checked against.

Methods (``Setup.finetune``):

- ``full``: every weight trains (the ZeRO-paper accounting in sizing.py).
- ``lora``: the base is frozen in the compute dtype; only the low-rank A/B
  matrices train (Hu et al. 2021, arXiv 2106.09685).
- ``qlora``: LoRA over a 4-bit base (Dettmers et al. 2023, arXiv 2305.14314):
  NF4 or FP4 with a scale per 64-weight block, optionally double-quantized.
- ``head``: freeze everything but the output head (linear probing).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from gpudesk.calc.model import ModelSpec
from gpudesk.calc.model import SizingError
from gpudesk.i18n_marks import QT_TRANSLATE_NOOP

Method = Literal["full", "lora", "qlora", "head"]
Quantization = Literal["none", "nf4", "nf4-dq", "fp4", "int8"]
METHODS: tuple[str, ...] = ("full", "lora", "qlora", "head")
QUANTIZATIONS: tuple[str, ...] = ("none", "nf4", "nf4-dq", "fp4", "int8")
FOUR_BIT: tuple[str, ...] = ("nf4", "nf4-dq", "fp4")
# LoRA targets by their Hugging Face module names (q_proj … down_proj).
LORA_TARGETS: tuple[str, ...] = ("q", "k", "v", "o", "gate", "up", "down")
TARGET_PRESETS: dict[str, tuple[str, ...]] = {
    "attention": ("q", "k", "v", "o"),
    "all-linear": LORA_TARGETS,
}
DEFAULT_TARGETS: tuple[str, ...] = ("q", "v")  # PEFT's and lit-gpt's LLaMA default

# bitsandbytes 4-bit (QLoRA paper §3): 4-bit codes + one fp32 absmax per block
# of 64 weights = 4 + 32/64 = 4.5 bits. Double quantization stores the absmax
# in 8 bits with one fp32 constant per 256 absmax values: 8/64 + 32/(64·256)
# = 0.127 bits instead of 0.5.
BLOCK = 64
DQ_BLOCK = 256
NF4_BYTES = 0.5 + 4 / BLOCK
NF4_DQ_BYTES = 0.5 + 1 / BLOCK + 4 / (BLOCK * DQ_BLOCK)
# LLM.int8 (Dettmers et al. 2022, arXiv 2208.07339; bitsandbytes Int8Params):
# one int8 per weight plus one fp32 scale per output row (SCB). Outlier
# columns are not stored apart: they are taken from the 16-bit activations and
# the matching weight rows dequantized during each matmul (a transient).
INT8_ROW_SCALE_BYTES = 4
# Each 4-bit weight is dequantized to 16 bits once per forward and once per
# backward (bitsandbytes MatMul4Bit), a memory-bound pass: 0.56 bytes read and
# 2 written per weight. Counted as dense-FLOP equivalents at ~100 FLOP per byte
# moved (an A100 does 312 TFLOPS on 1.55 TB/s; kernels reach half of that).
DEQUANT_FLOPS_PER_WEIGHT = 256.0

_ERR_TARGET = QT_TRANSLATE_NOOP(
    "SizingError", "unknown LoRA target '{name}'; use q, k, v, o, gate, up, down, "
    "'attention' or 'all-linear'")
_ERR_QLORA = QT_TRANSLATE_NOOP(
    "SizingError", "QLoRA trains on a 4-bit base: choose nf4, nf4-dq or fp4, not {quantize}")
_ERR_QUANT_SHAPE = QT_TRANSLATE_NOOP(
    "SizingError", "quantized weights need a transformer shape (layers, hidden, heads)")
_ERR_LORA_SHAPE = QT_TRANSLATE_NOOP(
    "SizingError", "LoRA needs a transformer shape (a preset, config.json or layers/hidden/heads)")
_ERR_QUANT_FULL = QT_TRANSLATE_NOOP(
    "SizingError", "quantized weights cannot be fully fine-tuned; choose LoRA or QLoRA")

NOTE_QUANT = {
    "nf4": QT_TRANSLATE_NOOP(
        "SizingNote", "NF4: linear layers in 4 bits + an fp32 scale per 64 weights; "
        "embeddings, norms, biases and the LM head stay 16-bit"),
    "nf4-dq": QT_TRANSLATE_NOOP(
        "SizingNote", "NF4 with double quantization: linear layers in 4 bits + 8-bit block "
        "scales; embeddings, norms, biases and the LM head stay 16-bit"),
    "fp4": QT_TRANSLATE_NOOP(
        "SizingNote", "FP4: linear layers in 4 bits + an fp32 scale per 64 weights; "
        "embeddings, norms, biases and the LM head stay 16-bit"),
    "int8": QT_TRANSLATE_NOOP(
        "SizingNote", "LLM.int8: linear layers in int8 + an fp32 scale per row, outliers "
        "multiplied in 16-bit; embeddings, norms, biases and the LM head stay 16-bit"),
}
NOTE_DEQUANT = QT_TRANSLATE_NOOP(
    "SizingNote", "includes one linear layer dequantized to 16-bit at a time")
NOTE_LORA = QT_TRANSLATE_NOOP(
    "SizingNote", "LoRA: frozen base has no gradients or optimizer state; adapters train")
NOTE_HEAD = QT_TRANSLATE_NOOP(
    "SizingNote", "only the head trains: the backbone keeps no activations for backward")
NOTE_QLORA_DEFAULT = QT_TRANSLATE_NOOP(
    "SizingNote", "QLoRA without a quantization chosen: NF4 with double quantization")
NOTE_PAGED = QT_TRANSLATE_NOOP(
    "SizingNote", "paged optimizer: its state can spill to CPU RAM under memory pressure")


def parse_targets(text: str | tuple[str, ...] | list[str]) -> tuple[str, ...]:
    """``"q,v"``, ``"attention"``, ``"all-linear"`` or a sequence of names, in canonical order."""
    parts = [p.strip().lower() for p in (text.split(",") if isinstance(text, str) else text)]
    names: set[str] = set()
    for part in filter(None, parts):
        part = part.removesuffix("_proj")
        if part in TARGET_PRESETS:
            names.update(TARGET_PRESETS[part])
        elif part in LORA_TARGETS:
            names.add(part)
        else:
            raise SizingError("lora_targets", _ERR_TARGET, name=part)
    if not names:
        raise SizingError("lora_targets", _ERR_TARGET, name=str(text))
    return tuple(t for t in LORA_TARGETS if t in names)


def linear_shapes(model: ModelSpec) -> dict[str, tuple[int, int]]:
    """(d_in, d_out) of each linear layer of one block, by LoRA target name.

    Models without a gated MLP have no ``gate``; ``up``/``down`` are then the
    two FFN matrices (GPT-2's c_fc/c_proj, BERT's intermediate/output).
    """
    h, q_out, kv_out = model.hidden, model.heads * model.head_dim, model.kv_heads * model.head_dim
    shapes = {"q": (h, q_out), "k": (h, kv_out), "v": (h, kv_out), "o": (q_out, h)}
    if model.gated_ffn:
        shapes["gate"] = (h, model.ffn)
    shapes |= {"up": (h, model.ffn), "down": (model.ffn, h)}
    return shapes


def lora_params(model: ModelSpec, rank: int, targets: tuple[str, ...]) -> int:
    """Trainable LoRA parameters: layers × Σ_targets r·(d_in + d_out) (A is r×d_in, B d_out×r)."""
    shapes = linear_shapes(model)
    return model.layers * sum(rank * (shapes[t][0] + shapes[t][1])
                              for t in targets if t in shapes)


def head_params(model: ModelSpec) -> int:
    """Parameters of the output head a linear probe trains."""
    h = model.hidden
    if model.kind == "decoder":
        return model.vocab * h  # the LM head (the embedding matrix when tied)
    if model.kind in ("encoder", "vit"):
        return model.num_classes * h + model.num_classes
    return max(1, model.parameter_count() // 100)  # bare count / CNN: the classifier, ~1 %


@dataclass(frozen=True)
class QuantSplit:
    """Which parameters are stored quantized, and the bytes on each side."""

    quantized_params: int
    kept_params: int  # embeddings, norms, biases, LM head: 16-bit
    quantized_bytes: int
    kept_bytes: int
    largest_dequantized_bytes: int  # one linear weight in 16-bit, live during its matmul

    @property
    def total_bytes(self) -> int:
        return self.quantized_bytes + self.kept_bytes


def quant_bytes_per_weight(quantize: str, d_in: int) -> float:
    if quantize in ("nf4", "fp4"):
        return NF4_BYTES
    if quantize == "nf4-dq":
        return NF4_DQ_BYTES
    return 1.0 + INT8_ROW_SCALE_BYTES / d_in  # int8


def quant_split(model: ModelSpec, quantize: str) -> QuantSplit:
    """Storage as bitsandbytes keeps it after ``from_pretrained(quantization_config=…)``.

    transformers converts every ``nn.Linear`` inside the blocks; the output
    head (``lm_head``, tied or not), embeddings, norms and biases are left in
    the 16-bit load dtype (``get_keys_to_not_convert``).
    """
    psi = model.parameter_count()
    if not model.is_transformer:
        # A bare parameter count: take every weight as a linear layer's.
        d = model.hidden or 4096
        return QuantSplit(psi, 0, int(psi * quant_bytes_per_weight(quantize, d)), 0,
                          2 * d * 4 * d)
    shapes = linear_shapes(model)
    quantized = model.layers * sum(i * o for i, o in shapes.values())
    q_bytes = model.layers * sum(i * o * quant_bytes_per_weight(quantize, i)
                                 for i, o in shapes.values())
    kept = psi - quantized
    largest = max(i * o for i, o in shapes.values()) * 2
    return QuantSplit(quantized, kept, int(round(q_bytes)), 2 * kept, largest)


def frozen_layer_activation_elems(model: ModelSpec, method: str, quantize: str,
                                  targets: tuple[str, ...], value_bytes: int) -> float:
    """Bytes per (s·b·h) one block saves for backward when its base weights are frozen.

    Against full fine-tuning (sizing._layer_activation_bytes) a frozen linear
    layer keeps no input for its weight gradient (autograd saves ``x`` of
    ``x @ Wᵀ`` only when W requires grad), so what stays is what the input
    gradients need: the norms' inputs, Q/K/V and the fused-attention output,
    the FFN's activation inputs (gated: gate, up, SiLU(gate); else the
    pre-GELU value). Each LoRA target adds its dropout output and its 1-byte
    mask (lora_dropout > 0, as in the QLoRA and lit-gpt recipes).
    bitsandbytes' MatMul4Bit and MatMul8bitLt save their input ``A`` whenever
    anything needs a gradient, so a quantized base keeps every linear input
    as full fine-tuning does: the attention input, the attention output, the
    FFN input and the down projection's input.
    """
    h, v = model.hidden, value_bytes
    f = model.ffn / h
    kv = model.kv_heads / model.heads
    qd = model.heads * model.head_dim / h
    attn = (2 * qd + 2 * kv) * v  # Q, K, V and the fused kernel's output
    ffn = (3 * f if model.gated_ffn else 1 * f) * v
    shapes = linear_shapes(model)
    lora = sum(shapes[t][0] / h * (v + 1) for t in targets if t in shapes)
    saved_inputs = 0.0
    if quantize != "none":
        saved_inputs = (1 + qd + 1 + f) * v  # attn input, o input, FFN input, down input
    return attn + ffn + (lora if method in ("lora", "qlora") else 0.0) + saved_inputs
