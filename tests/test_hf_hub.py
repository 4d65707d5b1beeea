"""``--config ORG/NAME``: the config.json fetched once from the Hub (here a local server), then
read from the cache with no network; gated models and failures said in words."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from fixtures_hf_hub import DATA  # noqa: F401
from fixtures_hf_hub import hub  # noqa: F401

from gpudesk.calc import hf_hub
from gpudesk.calc.sizing import SizingError
from gpudesk.cli.entry import main


def test_model_id_is_fetched_once_then_read_from_the_cache(
        hub: list[str], capsys: pytest.CaptureFixture[str]) -> None:  # noqa: F811
    args = ["size", "--config", "Qwen/Qwen2-0.5B", "--batch", "1", "--seq", "512", "--json"]
    assert main(args) == 0
    first = json.loads(capsys.readouterr().out)
    assert hub == ["/Qwen/Qwen2-0.5B/resolve/main/config.json"]
    assert main(["size", "--config", str(DATA / "qwen2-0.5b" / "config.json"), "--batch", "1",
                 "--seq", "512", "--json"]) == 0
    from_file = json.loads(capsys.readouterr().out)
    assert first["total_bytes"] == from_file["total_bytes"]  # the same file, the same answer
    assert main(args) == 0  # cached: the hub is not asked again
    assert json.loads(capsys.readouterr().out)["total_bytes"] == first["total_bytes"]
    assert len(hub) == 1
    assert hf_hub.cached_path("Qwen/Qwen2-0.5B").is_file()


def test_gated_and_missing_models_say_what_to_do(hub: list[str]) -> None:  # noqa: F811
    with pytest.raises(SizingError, match="gated"):
        hf_hub.fetch_config("meta-llama/Llama-2-7b-hf")
    with pytest.raises(SizingError, match="HTTP 404"):
        hf_hub.fetch_config("nobody/nothing")
    assert not hf_hub.cached_path("nobody/nothing").exists()


def test_a_path_is_never_taken_for_a_model_id(tmp_path: Path,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    assert hf_hub.looks_like_model_id("Qwen/Qwen2-0.5B")
    (tmp_path / "Qwen").mkdir()
    (tmp_path / "Qwen" / "Qwen2-0.5B").write_text("{}")
    assert not hf_hub.looks_like_model_id("Qwen/Qwen2-0.5B")
    assert not hf_hub.looks_like_model_id("../etc/passwd")
    assert not hf_hub.looks_like_model_id("config.json")
