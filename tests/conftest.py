"""Shared test setup: no display, and never the user's real gpudesk files."""

from __future__ import annotations

import os

# Before anything imports Qt. setdefault: CI may choose xcb under Xvfb for screenshots.
os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

from pathlib import Path  # noqa: E402

import pytest  # noqa: E402


@pytest.fixture(autouse=True)
def gpudesk_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Point every gpudesk config/data/log/cache folder at a fresh temporary folder."""
    home = tmp_path / "gpudesk-home"
    monkeypatch.setenv("GPUDESK_HOME", str(home))
    return home
