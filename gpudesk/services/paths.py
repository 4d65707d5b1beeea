"""Where gpudesk keeps its files: per-user config, data, log and cache folders.

The folders come from :mod:`platformdirs` (app name ``gpudesk``). Setting the
environment variable ``GPUDESK_HOME`` moves all of them at once, to
``$GPUDESK_HOME/{config,data,log,cache}``; tests use it so that they never touch
the user's real files. The variable is read on every call, so it can be changed
at run time. Each function creates its folder if needed.
"""

from __future__ import annotations

import os
from pathlib import Path

import platformdirs

APP_NAME = "gpudesk"
HOME_ENV = "GPUDESK_HOME"


def _home_override() -> Path | None:
    value = os.environ.get(HOME_ENV, "").strip()
    return Path(value).expanduser() if value else None


def _ensure(path: Path) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    return path


def config_dir() -> Path:
    """Settings live here (``settings.json``)."""
    home = _home_override()
    if home is not None:
        return _ensure(home / "config")
    return _ensure(Path(platformdirs.user_config_dir(APP_NAME, appauthor=False)))


def data_dir() -> Path:
    """The state database and other durable data live here."""
    home = _home_override()
    if home is not None:
        return _ensure(home / "data")
    return _ensure(Path(platformdirs.user_data_dir(APP_NAME, appauthor=False)))


def log_dir() -> Path:
    """Rotating log files live here."""
    home = _home_override()
    if home is not None:
        return _ensure(home / "log")
    return _ensure(Path(platformdirs.user_log_dir(APP_NAME, appauthor=False)))


def cache_dir() -> Path:
    """Disposable files (downloaded catalogs, traces) live here."""
    home = _home_override()
    if home is not None:
        return _ensure(home / "cache")
    return _ensure(Path(platformdirs.user_cache_dir(APP_NAME, appauthor=False)))


def settings_file() -> Path:
    return config_dir() / "settings.json"


def log_file() -> Path:
    return log_dir() / "gpudesk.log"
