"""A model id's ``config.json`` from the Hugging Face Hub, cached: the shape, never the weights.

``gpudesk size --config Qwen/Qwen2-0.5B`` reads the same file as ``--config
path/to/config.json`` once it has been fetched; later runs read the cache and
need no network. ``GPUDESK_HF_ENDPOINT`` points at a mirror (or, in tests, a
server on 127.0.0.1). Gated models (Llama 2, Gemma) answer 401 without a login:
the message says to download the file and pass its path instead.
"""

from __future__ import annotations

import re
from pathlib import Path

from gpudesk.calc.model import ModelSpec
from gpudesk.calc.model import SizingError
from gpudesk.i18n_marks import QT_TRANSLATE_NOOP

ENDPOINT_ENV = "GPUDESK_HF_ENDPOINT"
DEFAULT_ENDPOINT = "https://huggingface.co"
_ID = re.compile(r"^[A-Za-z0-9][\w.-]{0,95}/[A-Za-z0-9][\w.-]{0,95}$")

_ERR_GATED = QT_TRANSLATE_NOOP(
    "SizingError", "{model} is gated on Hugging Face (it needs a login): download its "
    "config.json from the model page and give its path instead")
_ERR_FETCH = QT_TRANSLATE_NOOP(
    "SizingError", "could not fetch the config.json of {model} ({detail}); give the path of "
    "a downloaded config.json instead")


def is_model_id(text: str) -> bool:
    """Shaped like a Hub model id, ``org/name``."""
    return bool(_ID.match(text))


def looks_like_model_id(text: str) -> bool:
    """``org/name`` that is not a file here (a path wins when both could be meant)."""
    return is_model_id(text) and not Path(text).expanduser().exists()


def cached_path(model_id: str) -> Path:
    from gpudesk.services.core import paths

    return paths.cache_dir() / "hf-configs" / model_id.replace("/", "--") / "config.json"


def fetch_config(model_id: str, *, refresh: bool = False, timeout: float = 20.0) -> Path:
    """The cached ``config.json`` of ``model_id``, fetched first when missing (blocking)."""
    import os
    import urllib.error
    import urllib.request

    from gpudesk.services.core.files import atomic_write_bytes

    target = cached_path(model_id)
    if target.is_file() and not refresh:
        return target
    base = os.environ.get(ENDPOINT_ENV, "").strip().rstrip("/") or DEFAULT_ENDPOINT
    url = f"{base}/{model_id}/resolve/main/config.json"
    try:
        with urllib.request.urlopen(url, timeout=timeout) as reply:  # noqa: S310 - https/local
            data = reply.read(2_000_000)
    except urllib.error.HTTPError as exc:
        if exc.code in (401, 403):
            raise SizingError("config", _ERR_GATED, model=model_id) from None
        raise SizingError("config", _ERR_FETCH, model=model_id,
                          detail=f"HTTP {exc.code}") from None
    except (OSError, ValueError) as exc:
        raise SizingError("config", _ERR_FETCH, model=model_id,
                          detail=type(exc).__name__) from None
    atomic_write_bytes(target, data, 0o644)
    return target


def model_from_hub(model_id: str) -> ModelSpec:
    """The model ``model_id`` names, from its cached (or now fetched) ``config.json``;
    named by its id (the uploader's ``_name_or_path`` is often a path on their disk)."""
    from gpudesk.calc import hf_config

    config = hf_config.load_config(fetch_config(model_id))
    config["_name_or_path"] = model_id
    return hf_config.model_from_config(config, source=model_id)
