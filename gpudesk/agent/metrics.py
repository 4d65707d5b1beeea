"""The metrics file: append-only JSON lines with bounded size, read back by sequence number.

Record schema (one compact JSON object per line)::

    {"seq": 17,                 # +1 per record, continued across agent restarts
     "t": 1700000000.123,       # unix time of the sample
     "src": "nvidia-smi",       # or "nvml"
     "gpus": [{"index": 0, "uuid": "GPU-…", "name": "NVIDIA A100-SXM4-40GB",
               "util": 99, "mem_used_mib": 30994, "mem_total_mib": 32480,
               "temp_c": 61, "power_w": 250.5, "power_limit_w": 400}],
     "procs": [{"pid": 4242, "gpu_uuid": "GPU-…", "gpu_index": 0,
                "name": "python3", "mem_used_mib": 6265}]}

Any value the driver did not give is ``null`` (never 0). ``procs`` is the
latest per-process list (polled every few seconds, so it repeats between
polls); ``[]`` when nothing runs or it is not known yet.

Files: ``metrics.jsonl`` is written; when it would pass ``max_bytes`` it
becomes ``metrics.1.jsonl``, the older ones shift up to ``metrics.<keep>.jsonl``
and the oldest is deleted, so the folder never holds more than
``(keep + 1) × max_bytes``. The desktop backfills a gap with
``read_since(folder, last_seq_it_has)``; what was rotated away is gone, which
it sees as the first returned seq being more than one past its own.
"""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path
from typing import Any
from typing import Dict
from typing import Iterable
from typing import List
from typing import Optional

from .clock import SYSTEM_CLOCK
from .clock import Clock
from .smi import GpuSample
from .smi import ProcSample

METRICS_FILE = "metrics.jsonl"
# An 8-GPU record with 8 processes is ~2.6 kB: 32 MiB ≈ 3.5 h at 1 Hz, all 9 files ≈ 31 h.
DEFAULT_MAX_BYTES = 32 * 1024 * 1024
DEFAULT_KEEP = 8
_TAIL = 64 * 1024

Record = Dict[str, Any]


def rotated_name(k: int) -> str:
    return METRICS_FILE if k == 0 else f"metrics.{k}.jsonl"


def metrics_files(folder: Path) -> List[Path]:
    """The existing metrics files, oldest first (metrics.N … metrics.1, metrics.jsonl)."""
    found = []
    for name in os.listdir(folder) if folder.is_dir() else []:
        if name == METRICS_FILE:
            found.append((0, name))
        elif name.startswith("metrics.") and name.endswith(".jsonl"):
            middle = name[len("metrics."):-len(".jsonl")]
            if middle.isdigit() and middle.isascii():
                found.append((int(middle), name))
    return [folder / name for _, name in sorted(found, reverse=True)]


def _parse(line: bytes) -> Record | None:
    try:
        rec = json.loads(line)
    except ValueError:
        return None
    if isinstance(rec, dict) and isinstance(rec.get("seq"), int):
        return rec
    return None


def _first_seq(path: Path) -> int | None:
    try:
        with open(path, "rb") as f:
            rec = _parse(f.readline())
    except OSError:
        return None
    return None if rec is None else int(rec["seq"])


def _last_seq_of(path: Path) -> int | None:
    try:
        with open(path, "rb") as f:
            f.seek(0, os.SEEK_END)
            size = f.tell()
            f.seek(max(0, size - _TAIL))
            lines = f.read().split(b"\n")
    except OSError:
        return None
    for line in reversed(lines):
        rec = _parse(line)
        if rec is not None:
            return int(rec["seq"])
    return None


def last_seq(folder: Path) -> int:
    """The newest seq on disk (0 when there is none), so a restarted agent continues it."""
    for path in reversed(metrics_files(folder)):
        seq = _last_seq_of(path)
        if seq is not None:
            return seq
    return 0


def _read_records(path: Path, since: int) -> Iterable[Record]:
    with open(path, "rb") as f:
        for line in f:
            if line.endswith(b"\n"):  # a line still being written is read next time
                rec = _parse(line)
                if rec is not None and rec["seq"] > since:
                    yield rec


def read_since(folder: Path, since: int, limit: int | None = None) -> List[Record]:
    """Records with seq > ``since``, oldest first, across the rotated files.

    Files wholly older than ``since`` are skipped by their first line. A
    rotation during the read (a file renamed under us) is retried.
    """
    folder = Path(folder)
    out: List[Record] = []
    for _attempt in range(3):
        files = metrics_files(folder)
        firsts = [_first_seq(p) for p in files]
        by_seq: Dict[int, Record] = {}
        vanished = False
        for i, path in enumerate(files):
            nxt = firsts[i + 1] if i + 1 < len(files) else None
            if nxt is not None and nxt <= since + 1:
                continue
            try:
                for rec in _read_records(path, since):
                    by_seq[rec["seq"]] = rec
            except FileNotFoundError:
                vanished = True
        out = [by_seq[k] for k in sorted(by_seq)]
        contiguous = not out or out[-1]["seq"] - out[0]["seq"] + 1 == len(out)
        if not vanished and (contiguous or metrics_files(folder) == files):
            break
    return out if limit is None else out[:limit]


class MetricsWriter:
    """Appends records with the next seq and rotates by size. Thread-safe."""

    def __init__(self, folder: Path, *, max_bytes: int = DEFAULT_MAX_BYTES,
                 keep: int = DEFAULT_KEEP, clock: Clock = SYSTEM_CLOCK) -> None:
        self.folder = Path(folder)
        self.folder.mkdir(parents=True, exist_ok=True)
        self.max_bytes = max(1024, int(max_bytes))
        self.keep = max(1, int(keep))
        self.clock = clock
        self.rotations = 0
        self._lock = threading.Lock()
        self.seq = last_seq(self.folder)
        self._f = self._open()

    @property
    def path(self) -> Path:
        return self.folder / METRICS_FILE

    def _open(self) -> Any:
        f = open(self.path, "ab")  # noqa: SIM115 - kept open between appends
        if f.tell() > 0:  # the previous agent may have died mid-line: start a fresh line
            with open(self.path, "rb") as r:
                r.seek(-1, os.SEEK_END)
                if r.read(1) != b"\n":
                    f.write(b"\n")
        return f

    def append(self, gpus: List[GpuSample], procs: Optional[List[ProcSample]] = None, *,
               src: str = "nvidia-smi", t: float | None = None) -> Record:
        with self._lock:
            self.seq += 1
            rec: Record = {
                "seq": self.seq,
                "t": round(self.clock.time() if t is None else t, 3),
                "src": src,
                "gpus": [g.to_json() for g in gpus],
                "procs": [p.to_json() for p in procs or []],
            }
            line = (json.dumps(rec, separators=(",", ":"), allow_nan=False) + "\n").encode()
            if self._f.tell() > 0 and self._f.tell() + len(line) > self.max_bytes:
                self._rotate()
            self._f.write(line)
            self._f.flush()
            return rec

    def _rotate(self) -> None:
        self._f.close()
        oldest = self.folder / rotated_name(self.keep)
        if oldest.exists():
            oldest.unlink()
        for k in range(self.keep - 1, -1, -1):
            src = self.folder / rotated_name(k)
            if src.exists():
                os.replace(src, self.folder / rotated_name(k + 1))
        self.rotations += 1
        self._f = self._open()

    def close(self) -> None:
        with self._lock:
            self._f.close()


class Follower:
    """Yields new records as they are appended, across rotations (``tail -F`` by seq)."""

    def __init__(self, folder: Path, since: int) -> None:
        self.folder = Path(folder)
        self.last = since
        self._ino: int | None = None
        self._offset = 0

    def poll(self) -> List[Record]:
        try:
            f = open(self.folder / METRICS_FILE, "rb")  # noqa: SIM115 - closed below
        except FileNotFoundError:
            return []
        with f:
            st = os.fstat(f.fileno())
            out: List[Record] = []
            if self._ino != st.st_ino or st.st_size < self._offset:
                # First call, or rotated: catch up through the rotated files, then tail this one.
                if last_seq(self.folder) < self.last:
                    # The folder was emptied and the seq started again: every record in it
                    # is new to the reader (who sees the restart as seq going backwards).
                    self.last = 0
                out = read_since(self.folder, self.last)
                self._ino, self._offset = st.st_ino, 0
            f.seek(self._offset)
            data = f.read()
        end = data.rfind(b"\n") + 1
        self._offset += end
        for line in data[:end].split(b"\n"):
            rec = _parse(line)
            if rec is not None and rec["seq"] > (out[-1]["seq"] if out else self.last):
                out.append(rec)
        if out:
            self.last = out[-1]["seq"]
        return out
