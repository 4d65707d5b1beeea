"""The one atomic file write every state file uses, and the one tolerant JSON read.

A crash mid-write must leave the old file or the new one, never half of either,
and never a file readable by other users: settings, pins, budgets and ssh
config all hold something a stranger should not read or a torn write would
lose.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any


def atomic_write_bytes(path: Path, data: bytes, mode: int = 0o600) -> None:
    """Temp file beside ``path``, fsync, chmod, rename over, fsync the folder."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    if hasattr(os, "O_DIRECTORY"):  # the rename itself survives a power cut
        dir_fd = os.open(path.parent, os.O_RDONLY | os.O_DIRECTORY)
        try:
            os.fsync(dir_fd)
        finally:
            os.close(dir_fd)


def atomic_write_text(path: Path, text: str, mode: int = 0o600) -> None:
    """:func:`atomic_write_bytes` of UTF-8 text with ``\\n`` line ends on every OS."""
    atomic_write_bytes(path, text.encode("utf-8"), mode)


def write_json_object(path: Path, data: dict[str, Any]) -> None:
    """A cache or registry file: ``data`` as indented, sorted JSON, written atomically."""
    atomic_write_text(path, json.dumps(data, indent=1, sort_keys=True) + "\n")


def read_json_object(path: Path) -> dict[str, Any]:
    """A cache or registry file's JSON object; {} when it is missing, torn or not an object
    (a cache is rebuilt, never a reason to fail)."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}
