"""Find the bundled ``resources/`` folder (icons, catalog, translations, styles).

Two layouts, tried in order:

1. a source checkout or editable install (``pip install -e .``): ``<repo>/resources``;
2. a PyInstaller bundle: ``sys._MEIPASS/resources`` (the spec must bundle the
   folder as ``resources``).

A plain (non-editable) wheel does not ship ``resources/`` yet.
"""

from __future__ import annotations

import sys
from pathlib import Path

_PACKAGE_DIR = Path(__file__).resolve().parent


def resources_root() -> Path:
    """The folder that holds the resources, or the source location if none exists."""
    candidates = [_PACKAGE_DIR.parent / "resources"]
    frozen = getattr(sys, "_MEIPASS", None)
    if frozen:
        candidates.append(Path(frozen) / "resources")
    for candidate in candidates:
        if candidate.is_dir():
            return candidate
    return candidates[0]


def resource_path(*parts: str) -> Path:
    """Path of a bundled resource, e.g. ``resource_path("translations", "gpudesk_zh_CN.qm")``.

    The path may not exist; callers decide whether a missing file is an error.
    """
    return resources_root().joinpath(*parts)
