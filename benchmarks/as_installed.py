"""Run gpudesk in a benchmark as an installed copy runs: from byte-compiled modules.

``pip install`` and the frozen app both ship .pyc files. A checkout run with
``PYTHONDONTWRITEBYTECODE`` set (as on our build machines) compiles every
gpudesk module from source at each start instead, which no user's start does.
"""

from __future__ import annotations

import compileall
import os
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def installed_env(base: dict[str, str] | None = None) -> dict[str, str]:
    """Byte-compile gpudesk and return ``base`` (default: os.environ) allowing .pyc use."""
    compileall.compile_dir(REPO / "gpudesk", quiet=1)
    env = dict(os.environ if base is None else base)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    return env
