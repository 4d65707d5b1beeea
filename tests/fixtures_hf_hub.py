"""A stand-in Hugging Face Hub on 127.0.0.1 (``GPUDESK_HF_ENDPOINT``): Qwen2-0.5B's real
config.json, a gated Llama (401) and 404 for the rest; the fixture yields the paths asked."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from local_get import serve_get

from gpudesk.calc import hf_hub

DATA = Path(__file__).parent / "data" / "hf_configs"


@pytest.fixture
def hub(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    asked: list[str] = []

    def answer(path: str) -> tuple[int, bytes]:
        asked.append(path)
        if path == "/Qwen/Qwen2-0.5B/resolve/main/config.json":
            return 200, (DATA / "qwen2-0.5b" / "config.json").read_bytes()
        if path.startswith("/meta-llama/"):
            return 401, b"gated"
        return 404, b"not found"

    with serve_get(answer) as url:
        monkeypatch.setenv(hf_hub.ENDPOINT_ENV, url)
        yield asked
