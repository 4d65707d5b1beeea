"""Which datasets this computer knows: their store, region and size (``datasets.json``).

Apart from ``datasets`` (the pushing, hashing and listing) because the Plan page reads it
to size a machine's disk while the window starts, and needs none of the rest.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING
from typing import Any

from gpudesk.services.core.files import read_json_object
from gpudesk.services.core.files import write_json_object

if TYPE_CHECKING:
    from gpudesk.services.storage.uri import StoreUri


def registry_path() -> Path:
    from gpudesk.services.core import paths

    return paths.data_dir() / "datasets.json"


def known() -> dict[str, tuple[str, str]]:
    """Dataset name -> (store URI, region) for the datasets pushed or used here."""
    out: dict[str, tuple[str, str]] = {}
    for name, entry in read_json_object(registry_path()).items():
        if isinstance(entry, dict):
            out[name] = (str(entry.get("store", "")), str(entry.get("region", "")))
    return out


def remember(name: str, store: StoreUri, region: str, size: int | None = None) -> None:
    """Keep where ``name`` lives, and its size in bytes where known (the Plan page and
    ``gpudesk launch --data`` size a machine's disk from it without asking the bucket)."""
    data = read_json_object(registry_path())
    entry: dict[str, Any] = {"store": str(store), "region": region}
    if size is not None:
        entry["bytes"] = int(size)
    data[name] = entry
    write_json_object(registry_path(), data)


def known_bytes() -> dict[str, int]:
    """Dataset name -> its size in bytes, for the datasets whose size this computer keeps."""
    out: dict[str, int] = {}
    for name, entry in read_json_object(registry_path()).items():
        size = entry.get("bytes") if isinstance(entry, dict) else None
        if isinstance(size, int) and not isinstance(size, bool) and size >= 0:
            out[name] = size
    return out


def forget(name: str) -> None:
    data = read_json_object(registry_path())
    if data.pop(name, None) is not None:
        write_json_object(registry_path(), data)
