"""Where gpudesk keeps its files: per-user config, data, log and cache folders.

The folders come from :mod:`platformdirs` (app name ``gpudesk``). Setting the
environment variable ``GPUDESK_HOME`` moves all of them at once, to
``$GPUDESK_HOME/{config,data,log,cache}``; tests use it so that they never touch
the user's real files. The variable is read on every call, so it can be changed
at run time. Each function creates its folder if needed.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import platformdirs

APP_NAME = "gpudesk"
HOME_ENV = "GPUDESK_HOME"


def _home_override() -> Path | None:
    value = os.environ.get(HOME_ENV, "").strip()
    return Path(value).expanduser() if value else None


def _user_dir(sub: str, platform_dir: Callable[..., str]) -> Path:
    """``$GPUDESK_HOME/<sub>`` when set, else the platform's folder; created if needed."""
    home = _home_override()
    path = home / sub if home is not None else Path(platform_dir(APP_NAME, appauthor=False))
    path.mkdir(parents=True, exist_ok=True)
    return path


def config_dir() -> Path:
    """Settings live here (``settings.json``)."""
    return _user_dir("config", platformdirs.user_config_dir)


def data_dir() -> Path:
    """The state database and other durable data live here."""
    return _user_dir("data", platformdirs.user_data_dir)


def log_dir() -> Path:
    """Rotating log files live here."""
    return _user_dir("log", platformdirs.user_log_dir)


def cache_dir() -> Path:
    """Disposable files (downloaded catalogs, traces) live here."""
    return _user_dir("cache", platformdirs.user_cache_dir)


def settings_file() -> Path:
    return config_dir() / "settings.json"


def log_file() -> Path:
    return log_dir() / "gpudesk.log"
