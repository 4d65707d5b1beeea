from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest

from gpudesk.services.core import paths
from gpudesk.services.core.settings import SETTINGS_VERSION
from gpudesk.services.core.settings import Settings
from gpudesk.services.core.settings import load_settings
from gpudesk.services.core.settings import save_settings


def test_paths_follow_gpudesk_home(gpudesk_home: Path) -> None:
    assert paths.config_dir() == gpudesk_home / "config"
    assert paths.data_dir() == gpudesk_home / "data"
    assert paths.log_dir() == gpudesk_home / "log"
    assert paths.cache_dir() == gpudesk_home / "cache"
    assert paths.settings_file() == gpudesk_home / "config" / "settings.json"
    assert all(p.is_dir() for p in (paths.config_dir(), paths.log_dir()))


def test_missing_file_gives_defaults() -> None:
    assert not paths.settings_file().exists()
    assert load_settings() == Settings()


def test_round_trip() -> None:
    original = Settings(
        language="zh_CN",
        theme="dark",
        currency="CNY",
        default_region="ap-shanghai",
        mfu=0.5,
        last_plan={"model": "llama-7b", "batch": 4, "zero": [1, 2], "nested": {"a": None}},
    )
    written = save_settings(original)
    assert written == paths.settings_file()
    on_disk = json.loads(written.read_text(encoding="utf-8"))
    assert on_disk["version"] == SETTINGS_VERSION
    assert on_disk["language"] == "zh_CN"
    assert load_settings() == original


def test_default_instances_do_not_share_last_plan() -> None:
    a, b = Settings(), Settings()
    a.last_plan["x"] = 1
    assert b.last_plan == {}


def test_unknown_keys_dropped_with_warning(caplog: pytest.LogCaptureFixture) -> None:
    paths.settings_file().write_text(
        json.dumps({"version": 1, "language": "en", "colour": "blue", "api_key": "x"}),
        encoding="utf-8",
    )
    with caplog.at_level(logging.WARNING, logger="gpudesk.services.core.settings"):
        settings = load_settings()
    assert settings == Settings(language="en")
    messages = " ".join(r.getMessage() for r in caplog.records)
    assert "'colour'" in messages and "'api_key'" in messages


@pytest.mark.parametrize(
    ("key", "bad"),
    [
        ("language", "fr"),
        ("language", 3),
        ("theme", None),
        ("currency", 12),
        ("currency", "dollars"),
        ("default_region", ["us-east-1"]),
        ("mfu", "0.4"),
        ("mfu", True),
        ("mfu", 0),
        ("mfu", 1.5),
        ("last_plan", [1, 2]),
    ],
)
def test_wrong_values_replaced_by_defaults(
    key: str, bad: object, caplog: pytest.LogCaptureFixture
) -> None:
    paths.settings_file().write_text(
        json.dumps({"theme": "light", key: bad}) if key != "theme" else json.dumps({key: bad}),
        encoding="utf-8",
    )
    with caplog.at_level(logging.WARNING, logger="gpudesk.services.core.settings"):
        settings = load_settings()
    assert getattr(settings, key) == getattr(Settings(), key)
    if key != "theme":
        assert settings.theme == "light", "the valid fields next to a bad one are kept"
    assert any(repr(key) in r.getMessage() for r in caplog.records)


def test_integer_mfu_is_read_as_float() -> None:
    paths.settings_file().write_text(json.dumps({"mfu": 1}), encoding="utf-8")
    settings = load_settings()
    assert settings.mfu == 1.0
    assert isinstance(settings.mfu, float)


@pytest.mark.parametrize("content", ["{not json", "[1, 2, 3]", '"just a string"', ""])
def test_corrupt_file_moved_aside(content: str, caplog: pytest.LogCaptureFixture) -> None:
    target = paths.settings_file()
    target.write_text(content, encoding="utf-8")
    with caplog.at_level(logging.WARNING, logger="gpudesk.services.core.settings"):
        settings = load_settings()
    assert settings == Settings()
    assert not target.exists()
    bad = target.with_name("settings.json.bad")
    assert bad.read_text(encoding="utf-8") == content
    assert any("corrupt" in r.getMessage() for r in caplog.records)
    # The next save works and the next load reads it back.
    save_settings(Settings(language="en"))
    assert load_settings().language == "en"


def test_non_utf8_file_moved_aside() -> None:
    target = paths.settings_file()
    target.write_bytes(b"\xff\xfe\x00garbage")
    assert load_settings() == Settings()
    assert target.with_name("settings.json.bad").exists()


def test_newer_version_keeps_known_fields(caplog: pytest.LogCaptureFixture) -> None:
    paths.settings_file().write_text(
        json.dumps({"version": SETTINGS_VERSION + 1, "language": "en", "future": 1}),
        encoding="utf-8",
    )
    with caplog.at_level(logging.WARNING, logger="gpudesk.services.core.settings"):
        settings = load_settings()
    assert settings.language == "en"
    assert settings.version == SETTINGS_VERSION
    assert any("newer" in r.getMessage() for r in caplog.records)


def test_atomic_write_leaves_no_temp_files() -> None:
    folder = paths.config_dir()
    for i in range(5):
        save_settings(Settings(default_region=f"region-{i}"))
    assert sorted(p.name for p in folder.iterdir()) == ["settings.json"]
    assert load_settings().default_region == "region-4"


def test_failed_write_keeps_old_file_and_leaves_no_temp_files() -> None:
    save_settings(Settings(language="en"))
    before = paths.settings_file().read_bytes()
    unserialisable = Settings(last_plan={"when": object()})
    with pytest.raises(TypeError):
        save_settings(unserialisable)
    assert paths.settings_file().read_bytes() == before
    assert [p.name for p in paths.config_dir().iterdir()] == ["settings.json"]


def test_replace_failure_keeps_old_file(monkeypatch: pytest.MonkeyPatch) -> None:
    save_settings(Settings(language="en"))
    before = paths.settings_file().read_bytes()

    def refuse(src: object, dst: object) -> None:
        raise OSError("disk full")

    with monkeypatch.context() as patch:
        patch.setattr("gpudesk.services.core.settings.os.replace", refuse)
        with pytest.raises(OSError, match="disk full"):
            save_settings(Settings(language="zh_CN"))
    assert paths.settings_file().read_bytes() == before
    assert [p.name for p in paths.config_dir().iterdir()] == ["settings.json"]


def test_new_fields_round_trip() -> None:
    original = Settings(cny_per_usd=7.1, monthly_budget_usd=500.0, machine_budget_usd=40.0,
                        idle_gpu_percent=10.0, idle_minutes=45, idle_action="stop",
                        welcomed=True)
    save_settings(original)
    assert load_settings() == original


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("cny_per_usd", 0), ("cny_per_usd", -1.0), ("cny_per_usd", "7.2"),
        ("cny_per_usd", float("nan")), ("cny_per_usd", True),
        ("monthly_budget_usd", -5), ("monthly_budget_usd", "100"),
        ("machine_budget_usd", float("inf")), ("machine_budget_usd", None),
        ("idle_gpu_percent", 101), ("idle_gpu_percent", -0.5), ("idle_gpu_percent", False),
        ("idle_minutes", 0), ("idle_minutes", 1441), ("idle_minutes", 2.5),
        ("idle_minutes", True), ("idle_action", "reboot"), ("idle_action", 1),
        ("welcomed", "yes"), ("welcomed", 1),
    ],
)
def test_new_fields_invalid_values_fall_back(key: str, value: object,
                                             caplog: pytest.LogCaptureFixture) -> None:
    paths.settings_file().write_text(json.dumps({"version": 1, key: value}, allow_nan=True),
                                     encoding="utf-8")
    with caplog.at_level(logging.WARNING, logger="gpudesk.services.core.settings"):
        loaded = load_settings()
    assert getattr(loaded, key) == getattr(Settings(), key)
    assert key in caplog.text


def test_new_fields_integers_become_floats() -> None:
    paths.settings_file().write_text(
        json.dumps({"cny_per_usd": 7, "monthly_budget_usd": 100, "idle_gpu_percent": 0,
                    "idle_minutes": 1440}), encoding="utf-8")
    loaded = load_settings()
    assert isinstance(loaded.cny_per_usd, float) and loaded.cny_per_usd == 7.0
    assert isinstance(loaded.monthly_budget_usd, float)
    assert loaded.idle_gpu_percent == 0.0 and loaded.idle_minutes == 1440


def test_is_valid_matches_the_loader() -> None:
    from gpudesk.services.core.settings import is_valid

    assert is_valid("idle_action", "terminate") and not is_valid("idle_action", "halt")
    assert is_valid("cny_per_usd", 6.9) and not is_valid("cny_per_usd", 0.0)
    assert not is_valid("no_such_setting", 1)


def test_window_state_keeps_the_last_page() -> None:
    from gpudesk.services.core.window_state import load_state
    from gpudesk.services.core.window_state import state_file
    from gpudesk.services.core.window_state import update_state

    assert load_state().page == ""  # a first start opens on the first page
    update_state(page="instances")
    assert load_state().page == "instances"
    update_state(run_selected="r-1")  # other fields leave it alone
    assert load_state().page == "instances"
    state_file().write_text('{"page": 3, "watched": []}', encoding="utf-8")
    assert load_state().page == ""  # a wrong type is dropped, the window still starts
