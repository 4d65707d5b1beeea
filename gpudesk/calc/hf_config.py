"""A model from its Hugging Face ``config.json``: the shape, never the weights.

Reads the families researchers fine-tune (LLaMA, Mistral, Qwen2, Gemma, GPT-2,
BERT, ViT and their near relatives) into a :class:`gpudesk.calc.model.ModelSpec`.
Field names are those of each ``transformers`` configuration class
(``LlamaConfig``, ``GPT2Config``, ``BertConfig``, ``ViTConfig``…), with that
class's default when a file leaves a field out. An unknown ``model_type`` is
read as a LLaMA-style decoder when the common fields are all there, and is
otherwise refused with the list of what is missing.

Pure Python and no network: the window reads the file off the GUI thread.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from gpudesk.calc.model import ModelSpec
from gpudesk.calc.model import SizingError
from gpudesk.i18n_marks import QT_TRANSLATE_NOOP

__all__ = ["KNOWN_TYPES", "load_config", "model_from_config"]

_ERR_READ = QT_TRANSLATE_NOOP(
    "SizingError", "{path} is not a readable config.json ({detail})")
_ERR_MISSING = QT_TRANSLATE_NOOP(
    "SizingError", "this {model_type} config lacks {missing}")
_ERR_UNKNOWN = QT_TRANSLATE_NOOP(
    "SizingError", "model_type '{model_type}' is not one gpudesk knows and the file lacks "
    "{missing}; known: {known}")

# Dense decoders with LlamaConfig's field names and a gated MLP (MoE models are not).
_LLAMA_LIKE = ("llama", "mistral", "qwen2", "gemma", "gemma2", "phi3", "olmo", "yi")
KNOWN_TYPES: tuple[str, ...] = (*_LLAMA_LIKE, "gpt2", "bert", "roberta", "vit", "deit")
# Tied input/output embeddings by default in each transformers config class.
_TIED_BY_DEFAULT = {"gemma", "gemma2"}
_DECODER_FIELDS = ("hidden_size", "num_hidden_layers", "num_attention_heads",
                   "intermediate_size", "vocab_size")


def load_config(path: str | Path) -> dict[str, Any]:
    """Read a config.json (blocking I/O: call it off the GUI thread)."""
    p = Path(path).expanduser()
    try:
        data = json.loads(p.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise SizingError("config", _ERR_READ, path=p.name, detail=str(exc)) from None
    if not isinstance(data, dict):
        raise SizingError("config", _ERR_READ, path=p.name, detail="not a JSON object")
    data.setdefault("_gpudesk_name", p.parent.name or p.stem)
    return data


def _require(cfg: dict[str, Any], model_type: str, fields: tuple[str, ...]) -> None:
    missing = [f for f in fields if not isinstance(cfg.get(f), int) or isinstance(cfg.get(f), bool)]
    if missing:
        if model_type in KNOWN_TYPES:
            raise SizingError("config", _ERR_MISSING, model_type=model_type,
                              missing=", ".join(missing))
        raise SizingError("config", _ERR_UNKNOWN, model_type=model_type or "(none)",
                          missing=", ".join(missing), known=", ".join(KNOWN_TYPES))


def _name(cfg: dict[str, Any]) -> str:
    return str(cfg.get("_name_or_path") or cfg.get("_gpudesk_name") or "config.json")


def _num_labels(cfg: dict[str, Any], default: int) -> int:
    labels = cfg.get("id2label")
    if isinstance(labels, dict) and labels:
        return len(labels)
    value = cfg.get("num_labels")
    return value if isinstance(value, int) and value > 0 else default


def model_from_config(cfg: dict[str, Any], source: str = "config.json") -> ModelSpec:
    """The ModelSpec a config describes; raises SizingError naming missing fields."""
    if isinstance(cfg.get("text_config"), dict) and "hidden_size" not in cfg:
        cfg = {**cfg["text_config"], "_gpudesk_name": _name(cfg)}  # multimodal wrapper
    model_type = str(cfg.get("model_type", "")).lower()
    if model_type == "gpt2":
        return _gpt2(cfg, source)
    if model_type in ("bert", "roberta"):
        return _bert(cfg, model_type, source)
    if model_type in ("vit", "deit"):
        return _vit(cfg, model_type, source)
    _require(cfg, model_type, _DECODER_FIELDS)
    heads = cfg["num_attention_heads"]
    kv = cfg.get("num_key_value_heads") or heads
    hidden = cfg["hidden_size"]
    head_dim = cfg.get("head_dim")
    act = str(cfg.get("hidden_act") or cfg.get("hidden_activation") or "silu")
    tied = cfg.get("tie_word_embeddings", model_type in _TIED_BY_DEFAULT)
    return ModelSpec(
        name=_name(cfg), kind="decoder", layers=cfg["num_hidden_layers"], hidden=hidden,
        heads=heads, kv_heads=kv, ffn=cfg["intermediate_size"], vocab=cfg["vocab_size"],
        gated_ffn=model_type in _LLAMA_LIKE or "silu" in act or "gelu_pytorch_tanh" in act,
        tied_embeddings=bool(tied), biases=False, dropout=False, norm_fp32=True,
        head_size=head_dim if isinstance(head_dim, int) and head_dim * heads != hidden else 0,
        source=source,
    )


def _gpt2(cfg: dict[str, Any], source: str) -> ModelSpec:
    _require(cfg, "gpt2", ("n_embd", "n_layer", "n_head", "vocab_size"))
    h = cfg["n_embd"]
    return ModelSpec(
        name=_name(cfg), kind="decoder", layers=cfg["n_layer"], hidden=h, heads=cfg["n_head"],
        kv_heads=cfg["n_head"], ffn=cfg.get("n_inner") or 4 * h, vocab=cfg["vocab_size"],
        max_positions=cfg.get("n_positions", 1024), source=source)


def _bert(cfg: dict[str, Any], model_type: str, source: str) -> ModelSpec:
    _require(cfg, model_type, _DECODER_FIELDS)
    heads = cfg["num_attention_heads"]
    return ModelSpec(
        name=_name(cfg), kind="encoder", layers=cfg["num_hidden_layers"],
        hidden=cfg["hidden_size"], heads=heads, kv_heads=heads, ffn=cfg["intermediate_size"],
        vocab=cfg["vocab_size"], max_positions=cfg.get("max_position_embeddings", 512),
        token_types=cfg.get("type_vocab_size", 2), pooler=True,
        num_classes=_num_labels(cfg, 2), source=source)


def _vit(cfg: dict[str, Any], model_type: str, source: str) -> ModelSpec:
    _require(cfg, model_type, ("hidden_size", "num_hidden_layers", "num_attention_heads",
                               "intermediate_size"))
    heads = cfg["num_attention_heads"]
    return ModelSpec(
        name=_name(cfg), kind="vit", layers=cfg["num_hidden_layers"],
        hidden=cfg["hidden_size"], heads=heads, kv_heads=heads, ffn=cfg["intermediate_size"],
        image_size=cfg.get("image_size", 224), patch_size=cfg.get("patch_size", 16),
        channels=cfg.get("num_channels", 3), num_classes=_num_labels(cfg, 1000), source=source)
