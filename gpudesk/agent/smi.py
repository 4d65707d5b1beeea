"""Reading the GPUs: nvidia-smi's CSV (parsed defensively) or NVML when pynvml imports.

nvidia-smi runs as ONE long-lived child (``--query-gpu=... -lms N``) that prints
one row per GPU every interval; starting a process per sample would cost more
CPU than the sampling is worth. Per-process memory (``--query-compute-apps``)
is a separate short query, polled every few seconds.

Parsing rule: a field that is ``[N/A]``, ``[Not Supported]``, bare ``N/A``,
out of range or not a number becomes ``None`` for that field only; the other
fields of the row are still read, and no input makes the parser raise. Units
are accepted when a driver prints them despite ``nounits`` ("99 %", "30994 MiB",
"43.2 W", "16 GiB"); nvidia-smi's "MB" has always meant MiB.
"""

from __future__ import annotations

import errno
import importlib
import logging
import math
import os
import re
import select
import subprocess
import threading
import time
from dataclasses import asdict
from dataclasses import dataclass
from typing import Any
from typing import Callable
from typing import Dict
from typing import List
from typing import Optional
from typing import Sequence

from .clock import SYSTEM_CLOCK
from .clock import Clock

log = logging.getLogger("gpudesk.agent")

QUERY_FIELDS = (
    "index", "uuid", "name", "utilization.gpu", "memory.used", "memory.total",
    "temperature.gpu", "power.draw", "power.limit",
)
PROC_FIELDS = ("gpu_uuid", "pid", "used_memory", "process_name")
CSV_FORMAT = "--format=csv,noheader,nounits"

_MISSING = frozenset({"", "n/a", "na", "-", "none", "unknown", "not supported", "err!"})
_NUM = re.compile(r"^([-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d{1,3})?)\s*([A-Za-z%]*)$", re.ASCII)
_INDEX = re.compile(r"^\d{1,4}$", re.ASCII)
_PID = re.compile(r"^\d{1,10}$", re.ASCII)
_GPU_LINE = re.compile(r"^GPU \d+:", re.ASCII)

# kind -> (accepted units and their factor to the canonical unit, lowest, highest)
_UNITS: Dict[str, Any] = {
    "pct": ({"": 1.0, "%": 1.0}, 0.0, 100.0),
    "mib": ({"": 1.0, "mib": 1.0, "mb": 1.0, "gib": 1024.0, "gb": 1024.0,
             "kib": 1 / 1024, "kb": 1 / 1024}, 0.0, 1e9),
    "w": ({"": 1.0, "w": 1.0, "mw": 1e-3, "kw": 1e3}, 0.0, 1e5),
    "c": ({"": 1.0, "c": 1.0}, -100.0, 250.0),
}


def is_missing(token: str) -> bool:
    """nvidia-smi's ways of saying "no value": any bracketed token, N/A, empty, "-"."""
    t = token.strip()
    return (t.startswith("[") and t.endswith("]")) or t.lower() in _MISSING


def _tidy(value: float) -> float:
    """An integral value as int (so JSON shows 99, not 99.0); else 3 decimals."""
    if value.is_integer() and abs(value) < 2**53:
        return int(value)
    return round(value, 3)


def check_number(value: Any, kind: str) -> float | None:
    """``value`` as a finite number within the sane range for ``kind``, else None."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    _, low, high = _UNITS[kind]
    v = float(value)
    if not math.isfinite(v) or not low <= v <= high:
        return None
    return _tidy(v)


def parse_number(token: str, kind: str) -> float | None:
    """One numeric field ("99", "30994 MiB", "[N/A]") in the canonical unit of ``kind``."""
    if is_missing(token):
        return None
    m = _NUM.match(token.strip())
    if m is None:
        return None
    factor = _UNITS[kind][0].get(m.group(2).lower())
    if factor is None:
        return None
    try:
        value = float(m.group(1)) * factor
    except (ValueError, OverflowError):
        return None
    return check_number(value, kind)


def parse_index(token: str) -> int | None:
    t = token.strip()
    return int(t) if _INDEX.match(t) else None


def parse_text(token: str, limit: int = 128) -> str | None:
    """A name or UUID: control characters dropped, missing markers → None."""
    if is_missing(token):
        return None
    t = "".join(ch for ch in token if ch.isprintable()).strip()[:limit]
    return t or None


@dataclass(frozen=True)
class GpuSample:
    """One GPU at one moment; None wherever the driver had no (sane) value."""

    index: Optional[int] = None
    uuid: Optional[str] = None
    name: Optional[str] = None
    util: Optional[float] = None  # %
    mem_used_mib: Optional[float] = None
    mem_total_mib: Optional[float] = None
    temp_c: Optional[float] = None
    power_w: Optional[float] = None
    power_limit_w: Optional[float] = None

    def to_json(self) -> Dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class ProcSample:
    """One compute process and the GPU memory it holds."""

    pid: int
    gpu_uuid: Optional[str] = None
    gpu_index: Optional[int] = None
    name: Optional[str] = None
    mem_used_mib: Optional[float] = None

    def to_json(self) -> Dict[str, Any]:
        return asdict(self)


_NUMERIC_KINDS = (("util", "pct"), ("mem_used_mib", "mib"), ("mem_total_mib", "mib"),
                  ("temp_c", "c"), ("power_w", "w"), ("power_limit_w", "w"))


def parse_gpu_line(line: str) -> GpuSample | None:
    """One ``--query-gpu`` row in QUERY_FIELDS order; None for blanks, headers and noise.

    A line counts as a GPU row when its index or at least one numeric field
    parses; otherwise it is an error message or garbage and is skipped.
    """
    parts = [p.strip() for p in line.strip().split(",")]
    if len(parts) == 1 and not parts[0] or parts[0].lower().startswith("index"):
        return None
    n = len(QUERY_FIELDS)
    if len(parts) > n:  # a name with commas in it: the numeric tail is fixed-width
        tail = n - 3
        parts = parts[:2] + [", ".join(parts[2:len(parts) - tail])] + parts[len(parts) - tail:]
    parts += [""] * (n - len(parts))
    numbers = {key: parse_number(parts[3 + i], kind) for i, (key, kind) in
               enumerate(_NUMERIC_KINDS)}
    index = parse_index(parts[0])
    if index is None and all(v is None for v in numbers.values()):
        return None
    return GpuSample(index=index, uuid=parse_text(parts[1]), name=parse_text(parts[2]),
                     **numbers)


def parse_proc_line(line: str) -> ProcSample | None:
    """One ``--query-compute-apps`` row in PROC_FIELDS order (the name last: it may hold commas)."""
    parts = [p.strip() for p in line.strip().split(",", 3)]
    if len(parts) < 2 or parts[0].lower().startswith(("gpu_uuid", "pid")):
        return None
    parts += [""] * (4 - len(parts))
    pid = parts[1]
    if not _PID.match(pid):
        return None
    return ProcSample(pid=int(pid), gpu_uuid=parse_text(parts[0]),
                      mem_used_mib=parse_number(parts[2], "mib"),
                      name=parse_text(parts[3], limit=256))


def parse_gpu_csv(text: str) -> List[GpuSample]:
    return [s for s in map(parse_gpu_line, text.splitlines()) if s is not None]


def parse_procs_csv(text: str) -> List[ProcSample]:
    return [p for p in map(parse_proc_line, text.splitlines()) if p is not None]


def count_gpus(list_output: str) -> int:
    """Physical GPUs in ``nvidia-smi -L`` output (MIG devices are indented lines below them)."""
    return sum(1 for line in list_output.splitlines() if _GPU_LINE.match(line))


def query_gpu_argv(exe: str = "nvidia-smi", interval_ms: int | None = None) -> List[str]:
    argv = [exe, "--query-gpu=" + ",".join(QUERY_FIELDS), CSV_FORMAT]
    if interval_ms is not None:
        argv += ["-lms", str(int(interval_ms))]
    return argv


def query_procs_argv(exe: str = "nvidia-smi") -> List[str]:
    return [exe, "--query-compute-apps=" + ",".join(PROC_FIELDS), CSV_FORMAT]


MISSING_RECHECK_S = 300.0  # how often a missing nvidia-smi is looked for again
NO_GPU_MESSAGE = "No NVIDIA GPU or driver on this machine"
NO_GPU_SRC = "no-gpu"  # the ``src`` of the record that says so (it has no GPUs)
_missing_until: Dict[str, float] = {}  # exe -> monotonic time of the next look
_missing_lock = threading.Lock()


def smi_missing(exe: str = "nvidia-smi") -> bool:
    """True while ``exe`` was not found (no NVIDIA driver here), until it is looked for again."""
    with _missing_lock:
        return exe in _missing_until


def _skip_missing(exe: str, now: float) -> bool:
    """True when ``exe`` is known missing and it is not yet time to look again."""
    with _missing_lock:
        until = _missing_until.get(exe)
        return until is not None and now < until


def note_missing(exe: str, exc: OSError, now: float) -> None:
    """Say once that there is no driver, then look again only every MISSING_RECHECK_S."""
    with _missing_lock:
        first = exe not in _missing_until
        _missing_until[exe] = now + MISSING_RECHECK_S
    if first:
        log.warning("%s: %s was not found (%s); looking again every %.0f s", NO_GPU_MESSAGE,
                    exe, exc.strerror or exc, MISSING_RECHECK_S)


def note_found(exe: str) -> None:
    with _missing_lock:
        was = _missing_until.pop(exe, None) is not None
    if was:
        log.warning("%s is there now; sampling the GPUs", exe)


def _is_missing_error(exc: BaseException) -> bool:
    return isinstance(exc, OSError) and exc.errno in (errno.ENOENT, errno.EACCES, errno.ENOEXEC)


def _run_text(argv: Sequence[str], timeout: float) -> str | None:
    now = time.monotonic()
    if _skip_missing(argv[0], now):
        return None
    try:
        done = subprocess.run(list(argv), stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                              stdin=subprocess.DEVNULL, timeout=timeout, check=False)
    except (OSError, subprocess.SubprocessError) as exc:
        if isinstance(exc, OSError) and _is_missing_error(exc):
            note_missing(argv[0], exc, now)
        else:
            log.warning("%s failed: %s", argv[0], exc)
        return None
    note_found(argv[0])
    if done.returncode != 0:
        log.warning("%s exited with %s", " ".join(argv[:2]), done.returncode)
        return None
    return done.stdout.decode("utf-8", "replace")


def gpu_count(exe: str = "nvidia-smi", timeout: float = 15.0) -> int | None:
    text = _run_text([exe, "-L"], timeout)
    n = count_gpus(text) if text is not None else 0
    return n or None


def sample_once(exe: str = "nvidia-smi", timeout: float = 15.0) -> List[GpuSample] | None:
    text = _run_text(query_gpu_argv(exe), timeout)
    return None if text is None else parse_gpu_csv(text)


def poll_procs(exe: str = "nvidia-smi", timeout: float = 15.0) -> List[ProcSample] | None:
    """The compute processes now; None when the query failed (not "no processes")."""
    text = _run_text(query_procs_argv(exe), timeout)
    return None if text is None else parse_procs_csv(text)


class RowGrouper:
    """Cuts the row stream into samples: one row per GPU per interval.

    A sample is complete when ``expected`` rows arrived, when a GPU index
    repeats (the next interval began), or ``gap_s`` after its last row (the
    rows of one interval arrive within milliseconds of each other).
    """

    def __init__(self, expected: int | None, gap_s: float) -> None:
        self.expected = expected if expected is not None and expected > 0 else None
        self.gap_s = gap_s
        self._rows: List[GpuSample] = []
        self._last = 0.0

    def feed(self, row: GpuSample, now: float) -> List[List[GpuSample]]:
        done = []
        if row.index is not None and any(r.index == row.index for r in self._rows):
            done.append(self._take())
        self._rows.append(row)
        self._last = now
        if self.expected is not None and len(self._rows) >= self.expected:
            done.append(self._take())
        return done

    def flush_due(self, now: float, force: bool = False) -> List[GpuSample] | None:
        if self._rows and (force or now - self._last >= self.gap_s):
            return self._take()
        return None

    def deadline(self) -> float | None:
        return self._last + self.gap_s if self._rows else None

    def _take(self) -> List[GpuSample]:
        rows, self._rows = self._rows, []
        return rows


SampleCallback = Callable[[List[GpuSample]], object]


class SmiStream:
    """Runs ``nvidia-smi --query-gpu=... -lms N`` once and turns its rows into samples.

    The child is restarted (with backoff) if it exits; ``stop()`` terminates
    and reaps it. If the agent is killed outright, the child dies of SIGPIPE at
    its next write.
    """

    kind = "nvidia-smi"
    _MAX_LINE = 1 << 20

    def __init__(self, on_sample: SampleCallback, *, exe: str = "nvidia-smi",
                 interval_ms: int = 1000, expected: int | None = None,
                 clock: Clock = SYSTEM_CLOCK) -> None:
        self.exe = exe
        self.interval_ms = max(10, int(interval_ms))
        self.expected = expected
        self.on_sample = on_sample
        self.clock = clock
        self.spawned = 0
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._proc: subprocess.Popen[bytes] | None = None
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="nvidia-smi", daemon=True)
        self._thread.start()

    def stop(self, timeout: float = 10.0) -> None:
        self._stop.set()
        with self._lock:
            proc = self._proc
        if proc is not None and proc.poll() is None:
            proc.terminate()
        if self._thread is not None:
            self._thread.join(timeout)

    @property
    def child_pid(self) -> int | None:
        with self._lock:
            return None if self._proc is None else self._proc.pid

    def procs(self) -> List[ProcSample] | None:
        return poll_procs(self.exe)

    def _run(self) -> None:
        backoff = 1.0
        while not self._stop.is_set():
            try:
                proc = subprocess.Popen(query_gpu_argv(self.exe, self.interval_ms),
                                        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                        stdin=subprocess.DEVNULL, close_fds=True)
            except OSError as exc:
                if _is_missing_error(exc):  # no driver here: said once, looked for rarely
                    note_missing(self.exe, exc, time.monotonic())
                    self._stop.wait(MISSING_RECHECK_S)
                else:
                    log.warning("cannot start %s: %s", self.exe, exc)
                    self._stop.wait(30.0)
                continue
            note_found(self.exe)
            with self._lock:
                self._proc = proc
            self.spawned += 1
            if self._stop.is_set():
                proc.terminate()
            try:
                samples = self._pump(proc)
            finally:
                self._reap(proc)
            if self._stop.is_set():
                break
            backoff = 1.0 if samples else min(backoff * 2, 30.0)
            log.warning("%s exited (%s); restarting in %.0f s", self.exe, proc.returncode, backoff)
            self._stop.wait(backoff)

    def _pump(self, proc: subprocess.Popen[bytes]) -> int:
        """Read rows until EOF; returns how many samples were emitted."""
        assert proc.stdout is not None
        fd = proc.stdout.fileno()
        grouper = RowGrouper(self.expected, gap_s=min(0.3, self.interval_ms / 2000))
        buf = b""
        emitted = 0
        while True:
            deadline = grouper.deadline()
            wait = 1.0 if deadline is None else max(0.0, deadline - self.clock.monotonic())
            ready, _, _ = select.select([fd], [], [], min(wait, 1.0))
            if ready:
                chunk = os.read(fd, 65536)
                if not chunk:
                    break
                buf += chunk
                *lines, buf = buf.split(b"\n")
                if len(buf) > self._MAX_LINE:
                    buf = b""
                for raw in lines:
                    row = parse_gpu_line(raw.decode("utf-8", "replace"))
                    if row is not None:
                        for rows in grouper.feed(row, self.clock.monotonic()):
                            emitted += self._emit(rows)
            rows_due = grouper.flush_due(self.clock.monotonic())
            if rows_due is not None:
                emitted += self._emit(rows_due)
        last = grouper.flush_due(0.0, force=True)
        if last is not None and not self._stop.is_set():
            emitted += self._emit(last)
        return emitted

    def _emit(self, rows: List[GpuSample]) -> int:
        try:
            self.on_sample(rows)
        except Exception:
            log.exception("handling a sample failed")
        return 1

    def _reap(self, proc: subprocess.Popen[bytes]) -> None:
        if proc.poll() is None:
            proc.terminate()
        try:
            proc.wait(3.0)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        if proc.stdout is not None:
            proc.stdout.close()
        with self._lock:
            self._proc = None


def load_nvml() -> Any | None:
    """The initialised pynvml module, or None when it is absent or finds no driver."""
    try:
        nvml = importlib.import_module("pynvml")
        nvml.nvmlInit()
    except Exception:  # ImportError, NVMLError_LibraryNotFound, DriverNotLoaded, ...
        return None
    return nvml


def _try(fn: Callable[..., Any], *args: Any) -> Any:
    """One NVML query; an unsupported field is None for that field only (as nvitop does)."""
    try:
        return fn(*args)
    except Exception:
        return None


def _text(value: Any) -> str | None:
    if isinstance(value, bytes):
        value = value.decode("utf-8", "replace")
    return parse_text(value) if isinstance(value, str) else None


def _scaled(value: Any, factor: float, kind: str) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return check_number(value * factor, kind)


class NvmlSampler:
    """Samples every interval through NVML, with the same record shape as SmiStream."""

    kind = "nvml"

    def __init__(self, nvml: Any, on_sample: SampleCallback, *, interval_ms: int = 1000,
                 clock: Clock = SYSTEM_CLOCK) -> None:
        self.nvml = nvml
        self.on_sample = on_sample
        self.interval_s = max(10, int(interval_ms)) / 1000
        self.clock = clock
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def _handles(self) -> List[Any]:
        n = _try(self.nvml.nvmlDeviceGetCount)
        handles = []
        for i in range(n if isinstance(n, int) else 0):
            h = _try(self.nvml.nvmlDeviceGetHandleByIndex, i)
            if h is not None:
                handles.append((i, h))
        return handles

    def sample(self) -> List[GpuSample]:
        nv = self.nvml
        rows = []
        for i, h in self._handles():
            util = _try(nv.nvmlDeviceGetUtilizationRates, h)
            mem = _try(nv.nvmlDeviceGetMemoryInfo, h)
            rows.append(GpuSample(
                index=i,
                uuid=_text(_try(nv.nvmlDeviceGetUUID, h)),
                name=_text(_try(nv.nvmlDeviceGetName, h)),
                util=_scaled(getattr(util, "gpu", None), 1, "pct"),
                mem_used_mib=_scaled(getattr(mem, "used", None), 1 / 2**20, "mib"),
                mem_total_mib=_scaled(getattr(mem, "total", None), 1 / 2**20, "mib"),
                temp_c=_scaled(_try(nv.nvmlDeviceGetTemperature, h,
                                    getattr(nv, "NVML_TEMPERATURE_GPU", 0)), 1, "c"),
                power_w=_scaled(_try(nv.nvmlDeviceGetPowerUsage, h), 1e-3, "w"),
                power_limit_w=_scaled(_try(nv.nvmlDeviceGetEnforcedPowerLimit, h), 1e-3, "w"),
            ))
        return rows

    def procs(self) -> List[ProcSample] | None:
        nv = self.nvml
        out = []
        for i, h in self._handles():
            uuid = _text(_try(nv.nvmlDeviceGetUUID, h))
            for p in _try(nv.nvmlDeviceGetComputeRunningProcesses, h) or []:
                pid = getattr(p, "pid", None)
                if not isinstance(pid, int):
                    continue
                out.append(ProcSample(pid=pid, gpu_uuid=uuid, gpu_index=i, name=_proc_name(pid),
                                      mem_used_mib=_scaled(getattr(p, "usedGpuMemory", None),
                                                           1 / 2**20, "mib")))
        return out

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="nvml", daemon=True)
        self._thread.start()

    def stop(self, timeout: float = 10.0) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout)

    def _run(self) -> None:
        while not self._stop.is_set():
            began = self.clock.monotonic()
            try:
                self.on_sample(self.sample())
            except Exception:
                log.exception("NVML sample failed")
            self.clock.wait(self._stop, self.interval_s - (self.clock.monotonic() - began))
        _try(self.nvml.nvmlShutdown)


def _proc_name(pid: int) -> str | None:
    try:
        with open(f"/proc/{pid}/comm", encoding="utf-8", errors="replace") as f:
            return parse_text(f.read())
    except OSError:
        return None
