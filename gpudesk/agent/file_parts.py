"""A file fetched in parts: ranged GETs written at their offsets, and the whole file's hash.

Shared by the fetch from the run's bucket (``data_fetch``) and from a public source
(``public_data``); the hash also checks a checkpoint (``store``) and the run's code
(``replacement``). Standard library only, like the rest of the agent.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

CHUNK = 1024 * 1024


class At:
    """A file-like writer that puts a ranged GET's body at its offset (``os.pwrite``)."""

    def __init__(self, fd: int, offset: int) -> None:
        self.fd, self.offset, self.written = fd, offset, 0

    def write(self, data: bytes) -> int:
        view = memoryview(data)
        while view:
            n = os.pwrite(self.fd, view, self.offset + self.written)
            self.written += n
            view = view[n:]
        return len(data)


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(CHUNK), b""):
            digest.update(chunk)
    return digest.hexdigest()
