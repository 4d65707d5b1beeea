"""Find the bundled ``resources/`` folder (icons, catalog, translations).

Three layouts, tried in order:

1. a source checkout or editable install (``pip install -e .``): ``<repo>/resources``;
2. a PyInstaller bundle: ``sys._MEIPASS/resources`` (the spec bundles the folder
   as ``resources``);
3. a plain wheel (``pip install .``, ``pipx install``): the data files that
   ``pyproject.toml`` installs under ``<prefix>/share/gpudesk/resources``
   (``prefix`` being the environment's, or the user base for ``--user``).
"""

from __future__ import annotations

import site
import sys
from pathlib import Path

_PACKAGE_DIR = Path(__file__).resolve().parent
_SHARE = ("share", "gpudesk", "resources")


def candidates() -> list[Path]:
    found = [_PACKAGE_DIR.parent / "resources"]
    frozen = getattr(sys, "_MEIPASS", None)
    if frozen:
        found.append(Path(frozen) / "resources")
    for prefix in (sys.prefix, sys.base_prefix, getattr(site, "USER_BASE", None)):
        if prefix:
            found.append(Path(prefix).joinpath(*_SHARE))
    return found


def resources_root() -> Path:
    """The folder that holds the resources, or the source location if none exists."""
    options = candidates()
    for candidate in options:
        if (candidate / "catalog").is_dir():
            return candidate
    return options[0]


def resource_path(*parts: str) -> Path:
    """Path of a bundled resource, e.g. ``resource_path("translations", "gpudesk_zh_CN.qm")``.

    The path may not exist; callers decide whether a missing file is an error.
    """
    return resources_root().joinpath(*parts)
