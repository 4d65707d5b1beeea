"""GPU memory and time-to-finish maths for one training or inference job.

Pure Python, no Qt and no torch: the planner, the CLI and the window all call
this, and it must answer in well under a frame. Every formula is stated next
to the code that uses it; ``shared/reference/memory.md`` lists the sources.

All byte counts are *per GPU*. ``batch`` is the per-GPU micro-batch.
"""

from __future__ import annotations

import functools
import math
from dataclasses import asdict
from dataclasses import dataclass
from dataclasses import field
from dataclasses import replace
from typing import Any
from typing import Literal

from gpudesk.calc import finetune as ft
from gpudesk.calc.model import ModelKind as ModelKind
from gpudesk.calc.model import ModelSpec as ModelSpec
from gpudesk.calc.model import SizingError as SizingError
from gpudesk.i18n_marks import QT_TRANSLATE_NOOP

Precision = Literal["fp32", "amp-fp16", "amp-bf16", "fp16", "bf16", "int8", "int4"]
OptimizerName = Literal["sgd", "sgd-momentum", "adam", "adamw", "adafactor", "adam-8bit",
                        "paged-adamw-8bit"]
Attention = Literal["eager", "sdpa", "flash"]
Fsdp = Literal["none", "full", "grad-op", "hybrid"]
Mode = Literal["train", "inference"]

PRECISIONS: tuple[str, ...] = ("fp32", "amp-fp16", "amp-bf16", "fp16", "bf16", "int8", "int4")
TRAIN_PRECISIONS: tuple[str, ...] = ("fp32", "amp-fp16", "amp-bf16", "fp16", "bf16")
OPTIMIZERS: tuple[str, ...] = ("sgd", "sgd-momentum", "adam", "adamw", "adafactor", "adam-8bit",
                               "paged-adamw-8bit")
# eager keeps the a·s² score matrix; sdpa (PyTorch >= 2 and current Hugging Face
# default) and FlashAttention-2 run fused kernels that keep one value per row.
ATTENTIONS: tuple[str, ...] = ("eager", "sdpa", "flash")
FSDP_MODES: tuple[str, ...] = ("none", "full", "grad-op", "hybrid")
# HYBRID_SHARD shards within a node and replicates across nodes.
GPUS_PER_NODE = 8

MIB = 1024**2
GIB = 1024**3
# Context + cuBLAS/cuDNN workspaces that nvidia-smi counts but torch's allocator
# does not: ~287 MB with lazy module loading, 300-500 MB typical on CUDA >= 11.7.
DEFAULT_CUDA_CONTEXT_BYTES = 500 * MIB
# DeepSpeed's estimators multiply CPU-offloaded states by this buffer factor.
OFFLOAD_BUFFER_FACTOR = 1.5
# Every nn.Linear in DDP lands in a 25 MiB gradient bucket copy by default.
DDP_BUCKET_NOTE = QT_TRANSLATE_NOOP(
    "SizingNote", "DDP gradient buckets (gradient_as_bucket_view=False)")


_ERR_POSITIVE = QT_TRANSLATE_NOOP(
    "SizingError", "must be a whole number of at least {minimum}")
_ERR_NUMBER = QT_TRANSLATE_NOOP(
    "SizingError", "must be a number above zero")
_ERR_HEADS = QT_TRANSLATE_NOOP(
    "SizingError", "{heads} heads do not divide hidden size {hidden}")
_ERR_KV = QT_TRANSLATE_NOOP(
    "SizingError", "{kv_heads} KV heads do not divide {heads} heads")
_ERR_PRESET = QT_TRANSLATE_NOOP(
    "SizingError", "unknown preset '{name}'; choose one of {choices}")
_ERR_CHOICE = QT_TRANSLATE_NOOP(
    "SizingError", "'{value}' is not one of {choices}")
_ERR_INT_TRAIN = QT_TRANSLATE_NOOP(
    "SizingError", "{precision} weights are for inference only; train in fp32, amp or bf16"
)
_ERR_ZERO = QT_TRANSLATE_NOOP(
    "SizingError", "must be 0 (plain DDP), 1, 2 or 3")
_ERR_MFU = QT_TRANSLATE_NOOP(
    "SizingError", "must be between 0 and 1 (e.g. 0.35 for 35%)")
_ERR_PATCH = QT_TRANSLATE_NOOP(
    "SizingError", "image size {image} is not a multiple of patch size {patch}"
)
_ERR_SEQ_LIMIT = QT_TRANSLATE_NOOP(
    "SizingError", "{seq} tokens exceed this model's {limit}-token position table"
)
_ERR_FSDP_ZERO = QT_TRANSLATE_NOOP(
    "SizingError", "FSDP and DeepSpeed ZeRO both shard the model: choose one (ZeRO 0 with FSDP)")


# --------------------------------------------------------------------------- presets
# ModelSpec and SizingError live in gpudesk/calc/model.py (finetune.py needs them too)
# and are re-exported here: sizing.ModelSpec, sizing.SizingError.


def _decoder(name: str, source: str, **kw: Any) -> ModelSpec:
    return ModelSpec(name=name, kind="decoder", source=source, **kw)


def _llama(name: str, layers: int, hidden: int, heads: int, kv: int, ffn: int, vocab: int,
           source: str) -> ModelSpec:
    return _decoder(name, source, layers=layers, hidden=hidden, heads=heads, kv_heads=kv,
                    ffn=ffn, vocab=vocab, gated_ffn=True, tied_embeddings=False, biases=False,
                    dropout=False, norm_fp32=True)


def _gpt2(name: str, layers: int, hidden: int, heads: int) -> ModelSpec:
    return _decoder(name, f"huggingface.co/{name}/config.json", layers=layers, hidden=hidden,
                    heads=heads, kv_heads=heads, ffn=4 * hidden, vocab=50257,
                    max_positions=1024)


def _bert(name: str, layers: int, hidden: int, heads: int) -> ModelSpec:
    return ModelSpec(name=name, kind="encoder", layers=layers, hidden=hidden, heads=heads,
                     kv_heads=heads, ffn=4 * hidden, vocab=30522, max_positions=512,
                     token_types=2, pooler=True, num_classes=2,
                     source=f"huggingface.co/{name}/config.json")


def _vit(name: str, layers: int, hidden: int, heads: int, source: str) -> ModelSpec:
    return ModelSpec(name=name, kind="vit", layers=layers, hidden=hidden, heads=heads,
                     kv_heads=heads, ffn=4 * hidden, image_size=224, patch_size=16,
                     num_classes=1000, source=source)


PRESETS: dict[str, ModelSpec] = {
    m.name: m
    for m in (
        _bert("bert-base-uncased", 12, 768, 12),
        _bert("bert-large-uncased", 24, 1024, 16),
        _gpt2("gpt2", 12, 768, 12),
        _gpt2("gpt2-medium", 24, 1024, 16),
        _gpt2("gpt2-large", 36, 1280, 20),
        _gpt2("gpt2-xl", 48, 1600, 25),
        _llama("llama-2-7b", 32, 4096, 32, 32, 11008, 32000, "meta-llama/Llama-2-7b-hf"),
        _llama("llama-2-13b", 40, 5120, 40, 40, 13824, 32000, "meta-llama/Llama-2-13b-hf"),
        _llama("llama-3-8b", 32, 4096, 32, 8, 14336, 128256, "meta-llama/Meta-Llama-3-8B"),
        _llama("llama-3-70b", 80, 8192, 64, 8, 28672, 128256, "meta-llama/Meta-Llama-3-70B"),
        _llama("mistral-7b", 32, 4096, 32, 8, 14336, 32000, "mistralai/Mistral-7B-v0.1"),
        _decoder("starcoder-15b", "bigcode/starcoder (GPTBigCode, multi-query attention)",
                 layers=40, hidden=6144, heads=48, kv_heads=1, ffn=24576, vocab=49152,
                 max_positions=8192),
        _vit("vit-b-16", 12, 768, 12, "google/vit-base-patch16-224 (Dosovitskiy et al.)"),
        _vit("vit-l-16", 24, 1024, 16, "google/vit-large-patch16-224 (Dosovitskiy et al.)"),
        _vit("deit-s", 12, 384, 6, "facebook/deit-small-patch16-224 (Touvron et al.)"),
        _vit("deit-ti", 12, 192, 3, "facebook/deit-tiny-patch16-224 (Touvron et al.)"),
        ModelSpec(
            name="resnet50", kind="cnn", params_override=25_557_032, image_size=224,
            num_classes=1000,
            # Elements saved for backward per 224² image, counted on CPU with
            # torch.autograd.graph.saved_tensors_hooks (unique storages) on a
            # standard torchvision-layout ResNet-50.
            cnn_act_elements_per_image=2.14e7,
            # 4.09 GMACs per 224² image (He et al. 2016) = 8.18 GFLOPs.
            cnn_forward_flops_per_image=8.18e9,
            source="He et al. 2016; torchvision resnet50 (25,557,032 parameters)",
        ),
    )
}


def preset(name: str) -> ModelSpec:
    try:
        return PRESETS[name]
    except KeyError:
        raise SizingError("model", _ERR_PRESET, name=name,
                          choices=", ".join(sorted(PRESETS))) from None


def params_model(params: float, *, layers: int = 0, hidden: int = 0) -> ModelSpec:
    """A model known only by its size (e.g. ``--params 7.5e9``)."""
    if not params > 0 or not math.isfinite(params):
        raise SizingError("params", _ERR_NUMBER)
    return ModelSpec(name=f"{params:.3g} parameters", kind="params",
                     params_override=int(round(params)), layers=layers, hidden=hidden)


# --------------------------------------------------------------------------- setup


@dataclass(frozen=True)
class Setup:
    """How the model is run: the knobs a researcher turns in the Plan page."""

    batch: int = 1
    seq: int = 512
    image_size: int = 0  # 0 = the preset's native resolution
    mode: Mode = "train"
    precision: Precision = "amp-bf16"
    optimizer: OptimizerName = "adamw"
    grad_checkpointing: bool = False
    flash_attention: bool = False  # kept for old plans and --flash-attention: = "flash"
    gpus: int = 1
    zero: int = 0  # 0 = plain DDP (or a single GPU)
    offload: bool = False  # ZeRO-Offload / FSDP CPUOffload: states to CPU RAM
    gen_tokens: int = 0  # inference: tokens generated after a ``seq``-token prompt
    cuda_context_bytes: int = DEFAULT_CUDA_CONTEXT_BYTES
    attention: Attention = "sdpa"
    finetune: ft.Method = "full"
    lora_rank: int = 8
    lora_alpha: int = 16  # scales the update (alpha / rank); no memory effect
    lora_targets: tuple[str, ...] = ft.DEFAULT_TARGETS
    quantize: ft.Quantization = "none"  # base weights as stored (train: QLoRA; inference)
    fsdp: Fsdp = "none"

    def __post_init__(self) -> None:
        # A plan read back from JSON has a list here; the estimate cache needs a tuple.
        targets: object = self.lora_targets
        if not isinstance(targets, tuple) and isinstance(targets, (list, str)):
            object.__setattr__(self, "lora_targets", ft.parse_targets(targets))

    @property
    def attention_impl(self) -> str:
        return "flash" if self.flash_attention else self.attention

    @property
    def weight_quantization(self) -> str:
        """The base's storage; QLoRA with none chosen is the paper's NF4 + double quant."""
        if self.finetune == "qlora" and self.quantize == "none":
            return "nf4-dq"
        return self.quantize if self.mode == "inference" or self.finetune != "full" else "none"


@dataclass(frozen=True)
class Estimate:
    """Per-GPU memory, each line separately, in bytes."""

    weights_bytes: int
    gradients_bytes: int
    optimizer_bytes: int
    activations_bytes: int
    kv_cache_bytes: int
    cuda_context_bytes: int
    comm_buffer_bytes: int  # DDP buckets / ZeRO-3 / FSDP working set: allocated by torch
    params: int
    cpu_offload_bytes: int = 0
    notes: tuple[str, ...] = field(default_factory=tuple)
    autocast_cache_bytes: int = 0  # 16-bit weight copies torch.autocast keeps in forward
    trainable_params: int = 0
    quantized_params: int = 0  # stored quantized (the rest is 16-bit or wider)
    quantized_bytes: int = 0  # those parameters' bytes, scales included

    @property
    def overhead_bytes(self) -> int:
        return self.cuda_context_bytes + self.comm_buffer_bytes

    @property
    def model_states_bytes(self) -> int:
        """What the ZeRO paper counts: weights + gradients + optimizer state."""
        return self.weights_bytes + self.gradients_bytes + self.optimizer_bytes

    @property
    def allocated_bytes(self) -> int:
        """Comparable to ``torch.cuda.max_memory_allocated`` (no CUDA context)."""
        return self.total_bytes - self.cuda_context_bytes

    @property
    def total_bytes(self) -> int:
        """Comparable to nvidia-smi "used" (allocator + CUDA context)."""
        return (self.model_states_bytes + self.activations_bytes + self.kv_cache_bytes
                + self.autocast_cache_bytes + self.overhead_bytes)

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["notes"] = list(self.notes)
        data["overhead_bytes"] = self.overhead_bytes
        data["total_bytes"] = self.total_bytes
        data["model_states_bytes"] = self.model_states_bytes
        data["allocated_bytes"] = self.allocated_bytes
        return data


def _bytes_per_value(precision: str) -> int:
    return 4 if precision == "fp32" else 2


def _weight_bytes_per_param(precision: str) -> float:
    # int4 with a 16-bit scale per group of 128 weights (GPTQ/AWQ/bnb nf4 style).
    return {"fp32": 4.0, "int8": 1.0 + 2 / 128, "int4": 0.5 + 2 / 128}.get(precision, 2.0)


def _moment_bytes(optimizer: str, value_bytes: int, params: int, hidden: int) -> float:
    """Optimizer moments per parameter (master weights are counted apart)."""
    if optimizer == "sgd":
        return 0.0
    if optimizer == "sgd-momentum":
        return float(value_bytes)
    if optimizer in ("adam", "adamw"):
        return 2.0 * value_bytes
    if optimizer in ("adam-8bit", "paged-adamw-8bit"):
        # bitsandbytes: two uint8 moments + one fp32 absmax per 2048-value block.
        return 2.0 + 2 * 4 / 2048
    # Adafactor without momentum keeps a row and a column second-moment vector
    # per matrix: ~ (rows + cols) / (rows * cols) ≈ 2 / hidden values per weight.
    d = hidden or max(256, int(math.sqrt(max(params, 1) / 12)))
    return 4.0 * 2.0 / d


def _check_int(field_name: str, value: int, minimum: int = 1) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise SizingError(field_name, _ERR_POSITIVE, minimum=minimum)


def _check_choice(field_name: str, value: str, choices: tuple[str, ...]) -> None:
    if value not in choices:
        raise SizingError(field_name, _ERR_CHOICE, value=value, choices=", ".join(choices))


def validate(model: ModelSpec, setup: Setup) -> None:
    """Raise SizingError naming the first field that makes no sense."""
    if model.is_transformer:
        for name in ("layers", "hidden", "heads", "ffn"):
            _check_int(name, getattr(model, name))
        _check_int("kv_heads", model.kv_heads)
        if model.hidden % model.heads and not model.head_size:
            raise SizingError("heads", _ERR_HEADS, heads=model.heads, hidden=model.hidden)
        if model.heads % model.kv_heads:
            raise SizingError("kv_heads", _ERR_KV, kv_heads=model.kv_heads, heads=model.heads)
        if model.kind != "vit":
            _check_int("vocab", model.vocab)
    elif model.parameter_count() <= 0:
        raise SizingError("params", _ERR_NUMBER)
    _check_int("batch", setup.batch)
    _check_int("gpus", setup.gpus)
    _check_choice("mode", setup.mode, ("train", "inference"))
    _check_choice("precision", setup.precision, PRECISIONS)
    _check_choice("optimizer", setup.optimizer, OPTIMIZERS)
    if setup.zero not in (0, 1, 2, 3) or isinstance(setup.zero, bool):
        raise SizingError("zero", _ERR_ZERO)
    _check_int("gen_tokens", setup.gen_tokens, minimum=0)
    _check_int("cuda_context_bytes", setup.cuda_context_bytes, minimum=0)
    if model.kind in ("vit", "cnn"):
        _check_int("image_size", setup.image_size, minimum=0)
        if model.kind == "vit":
            size = setup.image_size or model.image_size
            if size % model.patch_size:
                raise SizingError("image_size", _ERR_PATCH, image=size, patch=model.patch_size)
    else:
        _check_int("seq", setup.seq)
        total = setup.seq + (setup.gen_tokens if setup.mode == "inference" else 0)
        if model.max_positions and total > model.max_positions:
            raise SizingError("seq", _ERR_SEQ_LIMIT, seq=total, limit=model.max_positions)
    if setup.mode == "train" and setup.precision in ("int8", "int4"):
        raise SizingError("precision", _ERR_INT_TRAIN, precision=setup.precision)
    _check_choice("attention", setup.attention, ATTENTIONS)
    _check_choice("finetune", setup.finetune, ft.METHODS)
    _check_choice("quantize", setup.quantize, ft.QUANTIZATIONS)
    _check_choice("fsdp", setup.fsdp, FSDP_MODES)
    if setup.fsdp != "none" and setup.zero:
        raise SizingError("fsdp", _ERR_FSDP_ZERO)
    if setup.mode == "train" and setup.finetune in ("lora", "qlora"):
        if not model.is_transformer:
            raise SizingError("finetune", ft._ERR_LORA_SHAPE)
        _check_int("lora_rank", setup.lora_rank)
        _check_int("lora_alpha", setup.lora_alpha)
        ft.parse_targets(setup.lora_targets)
    quant = setup.weight_quantization
    if setup.mode == "train" and setup.finetune == "qlora" and quant not in ft.FOUR_BIT:
        raise SizingError("quantize", ft._ERR_QLORA, quantize=quant)
    if (setup.mode == "train" and setup.finetune == "full" and setup.quantize != "none"):
        raise SizingError("quantize", ft._ERR_QUANT_FULL)
    if quant != "none" and model.kind == "cnn":
        raise SizingError("quantize", ft._ERR_QUANT_SHAPE)


# --------------------------------------------------------------------------- activations


def _layer_activation_bytes(model: ModelSpec, setup: Setup, s: int) -> float:
    """Bytes one transformer block keeps for backward (Korthikanti et al. 2022).

    The paper's 34·sbh + 5·as²b (16-bit values, 1-byte dropout masks, FFN=4h)
    decomposed into saved tensors so that GQA, other FFN sizes, gated FFNs,
    fp32, autocast and fused attention each change only their own term:
    attention keeps its input, Q, K, V and the projection input; the FFN its
    input and every intermediate; the two norms their inputs. Under autocast
    norms and softmax run in fp32 (4 bytes) and the fp16 copy of the softmax
    output is kept for the V matmul. A LLaMA-style RMSNorm keeps its fp32
    upcast input (4 bytes) whatever the precision. With frozen base weights
    (LoRA, QLoRA) the linear layers' own inputs drop out; see
    :func:`gpudesk.calc.finetune.frozen_layer_activation_elems`.
    """
    b, h, a = setup.batch, model.hidden, model.heads
    amp = setup.precision.startswith("amp")
    v = _bytes_per_value(setup.precision)
    sbh = s * b * h
    kv_ratio = model.kv_heads / model.heads
    frozen = setup.mode == "train" and setup.finetune in ("lora", "qlora")
    norm_bytes = 4 if amp or model.norm_fp32 else v
    if model.norm_fp32 and not amp and not frozen:
        norm_bytes += v  # the normalised 16-bit copy, for the norm weight's gradient
    masks = 2 if model.dropout else 0  # after attention projection and after FFN
    if frozen:
        body = ft.frozen_layer_activation_elems(
            model, setup.finetune, setup.weight_quantization, setup.lora_targets, v)
    else:
        qd = model.heads * model.head_dim / h
        attn_elems = 1 + 2 * qd + 2 * kv_ratio  # input, Q, proj input + K, V
        ffn_elems = 1 + (4 if model.gated_ffn else 2) * model.ffn / h
        body = (attn_elems + ffn_elems) * v
    total = sbh * (body + 2 * norm_bytes + masks)
    if setup.attention_impl == "eager":
        as2b = a * s * s * b
        soft = 4 if amp else v
        scores = soft + (2 if amp else 0)  # softmax output (+ its fp16 cast)
        if model.dropout:
            scores += soft + 1  # dropout output and its mask
        total += as2b * scores
    else:
        total += 4 * a * s * b  # log-sum-exp per row
    return total


def activation_bytes(model: ModelSpec, setup: Setup) -> tuple[int, tuple[str, ...]]:
    """Training activations per GPU at the backward-pass peak.

    torch.autocast's 16-bit weight cache is not in here: it is its own line
    (:func:`autocast_cache_bytes`).
    """
    acts, notes = _stored_activation_bytes(model, setup)
    quant = setup.weight_quantization
    if quant != "none":
        acts += ft.quant_split(model, quant).largest_dequantized_bytes
        notes += (ft.NOTE_DEQUANT,)
    return acts, notes


def autocast_cache_bytes(model: ModelSpec, setup: Setup, trainable: int) -> int:
    """torch.autocast keeps a 16-bit copy of every fp32 weight it casts until the
    forward pass ends: 2 bytes per fp32 parameter. A frozen 16-bit base is not
    cast; FSDP's MixedPrecision gathers 16-bit parameters, so nothing is cached."""
    if setup.mode != "train" or not setup.precision.startswith("amp") or setup.fsdp != "none":
        return 0
    fp32_params = model.parameter_count() if setup.finetune == "full" else trainable
    return int(2.0 * fp32_params / _weight_shards(setup))


def _stored_activation_bytes(model: ModelSpec, setup: Setup) -> tuple[int, tuple[str, ...]]:
    """What autograd saves for backward, plus the loss head's logits."""
    notes: list[str] = []
    b = setup.batch
    v = _bytes_per_value(setup.precision)
    if model.kind == "cnn":
        size = setup.image_size or model.image_size
        scale = (size / model.image_size) ** 2
        elems = model.cnn_act_elements_per_image * scale * b
        if setup.grad_checkpointing:
            elems *= 0.25  # checkpointing every stage keeps ~a quarter (√-style)
            notes.append(QT_TRANSLATE_NOOP(
                "SizingNote", "checkpointing: CNN activations taken as 1/4 (segment boundaries)"))
        inputs = b * model.channels * size * size * 4
        return int(elems * v + inputs), tuple(notes)
    if model.kind == "params":
        if not (model.layers and model.hidden):
            notes.append(QT_TRANSLATE_NOOP(
                "SizingNote", "activations need a shape (layers, hidden); counted as 0"))
            return 0, tuple(notes)
        model = replace(model, kind="decoder", heads=max(1, model.hidden // 128),
                        kv_heads=max(1, model.hidden // 128), ffn=4 * model.hidden, vocab=1)
        notes.append(QT_TRANSLATE_NOOP(
            "SizingNote", "activations from layers/hidden with FFN=4h and 128-wide heads"))
    s = model.tokens_per_sample(setup.seq, setup.image_size)
    h = model.hidden
    if setup.finetune == "head":
        # Nothing below the head needs a gradient, so autograd saves nothing
        # there: the forward's transient working set, the head's input and loss.
        body_t = _inference_activation_bytes(model, replace(setup, mode="inference"))
        head_t = b * s * model.vocab * (v + 4 + 4) if model.kind == "decoder" else 0
        notes.append(ft.NOTE_HEAD)
        return int(body_t + s * b * h * v + head_t), tuple(notes)
    layer = _layer_activation_bytes(model, setup, s)
    if setup.grad_checkpointing:
        # Full recomputation keeps each block's input, plus one block live.
        per_layer_kept = s * b * h * (4 if setup.precision.startswith("amp") else v)
        body = model.layers * per_layer_kept + layer
    else:
        body = model.layers * layer
    # Embedding output (+ its dropout mask) and the final norm's input.
    edges = s * b * h * (2 * v + (1 if model.dropout else 0))
    if model.kind == "vit":
        edges += b * model.channels * (setup.image_size or model.image_size) ** 2 * 4
    head = 0.0
    if model.kind == "decoder":
        # LM head: logits, their fp32 log-softmax for the loss, and its
        # gradient at the start of backward - b·s·V each.
        head = b * s * model.vocab * (v + 4 + 4)
    return int(body + edges + head), tuple(notes)


def _weight_shards(setup: Setup) -> int:
    if setup.fsdp in ("full", "hybrid"):
        return _fsdp_group(setup)
    return setup.gpus if setup.zero == 3 else 1


def _fsdp_group(setup: Setup) -> int:
    """GPUs one FSDP shard group spans: all of them, or one node for HYBRID_SHARD."""
    if setup.fsdp == "hybrid":
        return min(setup.gpus, GPUS_PER_NODE)
    return setup.gpus if setup.fsdp != "none" else 1


def _inference_activation_bytes(model: ModelSpec, setup: Setup) -> int:
    """The prefill's transient peak: one block's widest tensors plus logits."""
    if not model.is_transformer:
        size = setup.image_size or model.image_size
        return int(model.cnn_act_elements_per_image * (size / max(model.image_size, 1)) ** 2
                   * setup.batch * 2 * 0.1)
    b, s, h = setup.batch, model.tokens_per_sample(setup.seq, setup.image_size), model.hidden
    v = 2 if setup.precision != "fp32" else 4
    widest = b * s * max(model.ffn * (2 if model.gated_ffn else 1), 3 * h) * v
    scores = b * model.heads * s * s * v if setup.attention_impl == "eager" else 0
    logits = b * model.vocab * 4 if model.kind == "decoder" else 0
    return int(widest + scores + 2 * b * s * h * v + logits)


def kv_cache_bytes(model: ModelSpec, setup: Setup) -> int:
    """2 × layers × kv_heads × head_dim × tokens × batch × bytes."""
    if setup.mode != "inference" or model.kind != "decoder":
        return 0
    tokens = setup.seq + setup.gen_tokens
    v = 4 if setup.precision == "fp32" else 2
    per_gpu = 2 * model.layers * model.kv_heads * model.head_dim * tokens * setup.batch * v
    return int(per_gpu // setup.gpus) if setup.gpus > 1 else int(per_gpu)


# --------------------------------------------------------------------------- estimate


@functools.lru_cache(maxsize=4096)
def estimate(model: ModelSpec, setup: Setup) -> Estimate:
    """Per-GPU memory for ``model`` under ``setup``; raises SizingError.

    Cached: inputs and result are frozen, and the Plan page asks for the same
    (model, setup) once per offer with the same GPU count on every keystroke.
    """
    validate(model, setup)
    psi = model.parameter_count()
    n = setup.gpus
    notes: list[str] = []
    quant = setup.weight_quantization
    split = ft.quant_split(model, quant) if quant != "none" else None
    q_params, q_bytes = (split.quantized_params, split.quantized_bytes) if split else (0, 0)
    if split is not None:
        notes.append(ft.NOTE_QUANT[quant])
        if setup.finetune == "qlora" and setup.quantize == "none" and setup.mode == "train":
            notes.append(ft.NOTE_QLORA_DEFAULT)
    if setup.mode == "inference":
        # Inference: tensor-parallel sharding across ``gpus`` when more than one.
        if split is not None:
            weights = split.total_bytes / n
            acts = _inference_activation_bytes(model, setup) + split.largest_dequantized_bytes
            notes.append(ft.NOTE_DEQUANT)
        else:
            weights = psi * _weight_bytes_per_param(setup.precision) / n
            acts = _inference_activation_bytes(model, setup)
        kv = kv_cache_bytes(model, setup)
        return Estimate(int(weights), 0, 0, acts, kv, setup.cuda_context_bytes, 0, psi,
                        notes=tuple(notes), quantized_params=q_params, quantized_bytes=q_bytes)

    p = setup.precision
    hidden = model.hidden
    cpu = 0.0
    comm = 0.0
    method = setup.finetune
    if method == "full":
        trainable, frozen = psi, 0
    elif method == "head":
        trainable = ft.head_params(model)
        frozen = psi - trainable
    else:  # LoRA adds A/B next to every frozen base weight
        trainable = ft.lora_params(model, setup.lora_rank, setup.lora_targets)
        frozen = psi
        notes.append(ft.NOTE_LORA)
    if p.startswith("amp") and setup.zero >= 1:
        # DeepSpeed mixed precision (the ZeRO paper): 16-bit weights and
        # gradients, fp32 master weights + fp32 moments = K·Ψ, K = 12 for Adam.
        w, g = 2.0, 2.0
        opt = 4.0 + _moment_bytes(setup.optimizer, 4, trainable, hidden)
        notes.append(QT_TRANSLATE_NOOP(
            "SizingNote", "DeepSpeed mixed precision: 16-bit weights/grads, fp32 master + moments"))
    elif p.startswith("amp"):
        # torch.autocast + GradScaler (or FSDP MixedPrecision) keep fp32 weights,
        # grads and moments.
        w, g = 4.0, 4.0
        opt = _moment_bytes(setup.optimizer, 4, trainable, hidden)
    else:
        v = _bytes_per_value(p)
        w, g = float(v), float(v)
        opt = _moment_bytes(setup.optimizer, v, trainable, hidden)
    if setup.optimizer == "paged-adamw-8bit":
        notes.append(ft.NOTE_PAGED)
    # A frozen base stays in the 16-bit load dtype (fp32 only for an fp32 run),
    # or as stored by bitsandbytes.
    p16 = 4.0 if p == "fp32" else 2.0
    frozen_bytes = float(split.total_bytes) if split is not None else p16 * frozen
    weights = frozen_bytes + w * trainable
    grads, optim = g * trainable, opt * trainable
    if setup.zero >= 1:
        optim /= n
    if setup.zero >= 2:
        grads /= n
    if setup.zero >= 3:
        weights /= n
        # DeepSpeed's ZeRO-3 estimator: 4 × the largest layer's parameters live.
        largest = _largest_layer_params(model)
        comm += 4 * largest * 2
        notes.append(QT_TRANSLATE_NOOP(
            "SizingNote", "ZeRO-3 working set: 4 × largest layer's 16-bit parameters"))
    if setup.offload and setup.zero >= 1:
        cpu += optim * OFFLOAD_BUFFER_FACTOR
        optim = 0.0
        if setup.zero >= 3:
            cpu += weights * OFFLOAD_BUFFER_FACTOR
            weights = 0.0
        notes.append(QT_TRANSLATE_NOOP(
            "SizingNote", "ZeRO-Offload: states on CPU RAM with DeepSpeed's 1.5× buffer"))
    if setup.fsdp != "none":
        weights, grads, optim, fsdp_comm, fsdp_cpu = _fsdp_states(
            model, setup, weights, grads, optim, frozen_bytes + p16 * trainable,
            g * trainable / max(psi, 1), notes)
        comm += fsdp_comm
        cpu += fsdp_cpu
    if n > 1 and setup.zero == 0 and setup.fsdp == "none":
        comm += g * trainable
        notes.append(DDP_BUCKET_NOTE)
    acts, act_notes = activation_bytes(model, setup)
    notes.extend(act_notes)
    return Estimate(
        weights_bytes=int(round(weights)), gradients_bytes=int(round(grads)),
        optimizer_bytes=int(round(optim)), activations_bytes=acts, kv_cache_bytes=0,
        cuda_context_bytes=setup.cuda_context_bytes, comm_buffer_bytes=int(comm), params=psi,
        cpu_offload_bytes=int(cpu), notes=tuple(notes),
        autocast_cache_bytes=autocast_cache_bytes(model, setup, trainable),
        trainable_params=trainable, quantized_params=q_params, quantized_bytes=q_bytes,
    )


def _fsdp_states(model: ModelSpec, setup: Setup, weights: float, grads: float, optim: float,
                 unsharded: float, grad_per_param: float,
                 notes: list[str]) -> tuple[float, float, float, float, float]:
    """PyTorch FSDP on the ZeRO footing (Zhao et al. 2023, arXiv 2304.11277).

    FULL_SHARD ≈ ZeRO-3: weights, gradients and optimizer state divided by the
    shard group; the working set is two transformer blocks gathered in the
    16-bit compute dtype (the one running and the one prefetched), the root
    module's parameters (embeddings, head) which stay gathered for the whole
    step, and one block's unsharded gradients before their reduce-scatter.
    HYBRID_SHARD is FULL_SHARD within one node. SHARD_GRAD_OP ≈ ZeRO-2: the
    parameters stay gathered from forward to the end of backward, so the full
    16-bit model is on each GPU next to its fp32 shard. CPUOffload moves the
    shards (parameters, gradients, optimizer step) to CPU RAM.
    Returns weights, gradients, optimizer, communication working set, CPU bytes.
    """
    group = _fsdp_group(setup)
    psi = model.parameter_count()
    if model.is_transformer:
        unit = model.layer_params()
        root = max(0, psi - model.layers * unit)
    else:
        unit, root = _largest_layer_params(model), 0
    p16 = 4.0 if setup.precision == "fp32" else 2.0
    grads /= group
    optim /= group
    if setup.fsdp == "grad-op":
        weights = weights / group + unsharded
        comm = unit * grad_per_param
        notes.append(QT_TRANSLATE_NOOP(
            "SizingNote", "FSDP SHARD_GRAD_OP: gradients and optimizer sharded, 16-bit "
            "parameters gathered through forward and backward"))
    else:
        weights /= group
        comm = (2 * unit + root) * p16 + unit * grad_per_param
        notes.append(QT_TRANSLATE_NOOP(
            "SizingNote", "FSDP FULL_SHARD: states sharded; working set = 2 gathered blocks "
            "+ the root module + one block's gradients"))
    cpu = 0.0
    if setup.offload:
        cpu = (weights if setup.fsdp != "grad-op" else weights - unsharded) + grads + optim
        weights = unsharded if setup.fsdp == "grad-op" else 0.0
        grads = optim = 0.0
        notes.append(QT_TRANSLATE_NOOP(
            "SizingNote", "FSDP CPUOffload: parameter, gradient and optimizer shards on CPU RAM"))
    return weights, grads, optim, comm, cpu


def _largest_layer_params(model: ModelSpec) -> int:
    if model.is_transformer:
        h = model.hidden
        emb = model.vocab * h if model.kind != "vit" else 0
        return max(emb, h * model.ffn, h * h)
    return int(math.sqrt(model.parameter_count())) * 64


# --------------------------------------------------------------------------- questions


def fits(model: ModelSpec, setup: Setup, gpu_bytes: int) -> bool:
    return estimate(model, setup).total_bytes <= gpu_bytes


def largest_batch(model: ModelSpec, setup: Setup, gpu_bytes: int, limit: int = 1 << 16) -> int:
    """The largest per-GPU batch that fits (0 if not even batch 1 does)."""
    if not fits(model, replace(setup, batch=1), gpu_bytes):
        return 0
    lo, hi = 1, 2
    while hi <= limit and fits(model, replace(setup, batch=hi), gpu_bytes):
        lo, hi = hi, hi * 2
    hi = min(hi, limit + 1)
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if fits(model, replace(setup, batch=mid), gpu_bytes):
            lo = mid
        else:
            hi = mid
    return lo


@dataclass(frozen=True)
class ParallelPlan:
    gpus: int
    zero: int
    offload: bool
    estimate: Estimate
    fsdp: str = "none"


def smallest_parallel_plan(model: ModelSpec, setup: Setup, gpu_bytes: int,
                           max_gpus: int = 512) -> ParallelPlan | None:
    """Fewest GPUs (then the lowest ZeRO stage, then no offload) that fit.

    Lower stages communicate less, so for the same GPU count they win. A job
    set up for FSDP is tried with FSDP's strategies (plain DDP, SHARD_GRAD_OP,
    FULL_SHARD), never mixed with ZeRO.
    """
    counts = [1]
    while counts[-1] < max_gpus:
        counts.append(counts[-1] * 2)
    stages: tuple[tuple[int, Fsdp], ...]
    if setup.mode == "inference":
        stages = ((0, "none"),)
    elif setup.fsdp != "none":
        stages = ((0, "none"), (0, "grad-op"), (0, "full"))
    else:
        stages = ((0, "none"), (1, "none"), (2, "none"), (3, "none"))
    for n in counts:
        for offload in (False, True):
            for stage, fsdp in stages:
                if offload and stage == 0 and fsdp == "none":
                    continue
                trial = replace(setup, gpus=n, zero=stage, offload=offload, fsdp=fsdp)
                est = estimate(model, trial)
                if est.total_bytes <= gpu_bytes:
                    return ParallelPlan(n, stage, offload, est, fsdp)
    return None


# --------------------------------------------------------------------------- time


@dataclass(frozen=True)
class Workload:
    """How much work finishing the job is: tokens for text, samples for images."""

    tokens: float = 0.0  # training tokens (all epochs) or tokens generated
    samples: float = 0.0  # images (all epochs) for vision models
    mfu: float = 0.35  # model FLOPs utilisation the user expects

    def __post_init__(self) -> None:
        if not 0 < self.mfu <= 1:
            raise SizingError("mfu", _ERR_MFU)
        if self.tokens < 0 or self.samples < 0:
            raise SizingError("tokens", _ERR_NUMBER)


FLOPS_FORMULA = {
    "transformer-train": "6·Ψ·tokens + 12·layers·hidden·seq·tokens (attention); ×4/3 with "
                         "gradient checkpointing (one extra forward)",
    "lora-train": "(4·Ψ + 6·trainable)·tokens + attention: frozen weights get no weight "
                  "gradients (2/3 of a full step); checkpointing adds 2·Ψ + attention/3",
    "qlora-dequant": "+ steps × passes × 4-bit weights × 256 FLOP-equivalents: each 4-bit "
                     "weight dequantized once per forward and once per backward (+1 with "
                     "checkpointing), memory-bound, at ~100 FLOP per byte moved",
    "head-train": "(2·Ψ + 2·head)·tokens + forward attention: only the head's weight gradient",
    "cnn-train": "3 × forward FLOPs per image × images (backward ≈ 2× forward)",
    "inference": "2·Ψ per generated token (+ 2·Ψ·prompt per request)",
}


def job_flops(model: ModelSpec, setup: Setup, work: Workload) -> float:
    """Total FLOPs to finish; formulas in FLOPS_FORMULA."""
    psi = model.parameter_count()
    if setup.mode == "inference":
        if setup.gen_tokens:
            requests = work.tokens / setup.gen_tokens
            return 2.0 * psi * (work.tokens + requests * setup.seq)
        return 2.0 * psi * work.tokens
    recompute = 4 / 3 if setup.grad_checkpointing else 1.0
    if model.kind == "cnn":
        size = setup.image_size or model.image_size
        fwd = model.cnn_forward_flops_per_image * (size / model.image_size) ** 2
        return 3.0 * fwd * work.samples * recompute
    if model.kind == "vit":
        tokens = work.samples * model.tokens_per_sample(0, setup.image_size)
        s = model.tokens_per_sample(0, setup.image_size)
    else:
        tokens, s = work.tokens, setup.seq
    attn = 12.0 * model.layers * model.hidden * s
    if setup.finetune == "full":
        return (6.0 * psi + attn) * tokens * recompute
    if setup.finetune == "head":
        return (2.0 * psi + 2.0 * ft.head_params(model) + attn / 3) * tokens
    trainable = ft.lora_params(model, setup.lora_rank, setup.lora_targets)
    per_token = 4.0 * psi + 6.0 * trainable + attn
    if setup.grad_checkpointing:
        per_token += 2.0 * psi + attn / 3
    total = per_token * tokens
    quant = setup.weight_quantization
    if quant != "none":
        steps = tokens / (setup.batch * s)
        passes = 3 if setup.grad_checkpointing else 2
        total += (steps * passes * ft.quant_split(model, quant).quantized_params
                  * ft.DEQUANT_FLOPS_PER_WEIGHT)
    return total


def hours_to_finish(flops: float, gpus: int, peak_tflops: float, mfu: float) -> float:
    """Wall-clock hours at ``mfu`` of the GPUs' dense peak at this precision."""
    if peak_tflops <= 0 or gpus <= 0:
        return math.inf
    return flops / (gpus * peak_tflops * 1e12 * mfu) / 3600.0
