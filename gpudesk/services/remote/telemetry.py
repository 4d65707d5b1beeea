"""Live GPU samples from a machine's agent over one SSH channel, with gaps backfilled.

A :class:`TelemetryStream` keeps one channel running the agent's
``--since LAST --follow`` (``AgentSite.follow_command``): the agent first
prints every record after ``LAST`` still in its metrics file, then each new
one. When the channel or the connection drops, the stream reconnects with
backoff and asks again from the last seq it delivered, so a disconnect costs
no samples unless the file rotated them away meanwhile; that is reported as a
:class:`Hole` (which samples, and why), never silently skipped.

The stream runs a plain thread and calls back from it; it knows no Qt (the
window wraps the callbacks into signals). One stream per machine; streams
share nothing, so several machines stream at once.
"""

from __future__ import annotations

import contextlib
import json
import logging
import math
import threading
import time
from collections.abc import Callable
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import paramiko

from gpudesk.i18n_marks import QT_TRANSLATE_NOOP
from gpudesk.services.core.errors import TemplatedError
from gpudesk.services.core.gil_pace import GilPace
from gpudesk.services.remote.host_keys import HostKeyError
from gpudesk.services.remote.ssh import SshAuthError
from gpudesk.services.remote.ssh import SshConnection
from gpudesk.services.remote.ssh import SshError

MSG_HOLE = QT_TRANSLATE_NOOP(
    "Telemetry", "{count} samples from {target} are missing (after sample {after}): the "
    "machine's metrics file had already rotated them away.")
MSG_REMOTE = QT_TRANSLATE_NOOP(
    "Telemetry", "The agent on {target} could not stream its samples (exit status {status}): "
    "{detail}")

log = logging.getLogger(__name__)

# States passed to ``on_state``. RESUMING: the follow channel ended while the connection
# held (the agent restarted, rules were pushed, a long quiet spell): it is simply opened
# again, and that is no dropped connection.
CONNECTING, STREAMING, RESUMING, DISCONNECTED, FAILED, STOPPED = (
    "connecting", "streaming", "resuming", "disconnected", "failed", "stopped")
EXIT_STATUS_WAIT_S = 2.0  # after the output ends, for the exit status (none: the link died)
NO_GPU_SRC = "no-gpu"  # the agent's record saying the machine has no NVIDIA GPU or driver


class TelemetryError(TemplatedError):
    translation_context = "Telemetry"


# --------------------------------------------------------------------------- samples

@dataclass(frozen=True)
class GpuReading:
    """One GPU in one sample; ``None`` wherever the driver gave no value."""

    time: float
    index: int | None
    name: str | None
    uuid: str | None
    util_pct: float | None
    mem_used_mib: float | None
    mem_total_mib: float | None
    temp_c: float | None
    power_w: float | None
    power_limit_w: float | None

    def to_json(self) -> dict[str, Any]:
        """The ``gpudesk watch --json-lines`` object."""
        return {"time": self.time, "gpu": self.index, "name": self.name,
                "util_pct": self.util_pct, "mem_used_mib": self.mem_used_mib,
                "mem_total_mib": self.mem_total_mib, "temp_c": self.temp_c,
                "power_w": self.power_w}


@dataclass(frozen=True)
class ProcReading:
    pid: int | None
    gpu_index: int | None
    gpu_uuid: str | None
    name: str | None
    mem_used_mib: float | None


@dataclass(frozen=True)
class TelemetrySample:
    seq: int
    time: float  # when the agent sampled (machine clock, unix seconds)
    received: float  # when this computer read it (unix seconds)
    src: str
    gpus: tuple[GpuReading, ...]
    procs: tuple[ProcReading, ...]

    @property
    def no_gpu(self) -> bool:
        """The agent found no nvidia-smi there: no NVIDIA GPU or driver on the machine."""
        return self.src == NO_GPU_SRC and not self.gpus

    @property
    def latency_s(self) -> float:
        """Sample to callback; includes any clock offset between the two machines."""
        return self.received - self.time


@dataclass(frozen=True)
class Hole:
    """Samples ``after+1 … next-1`` are gone from the machine; they cannot be backfilled."""

    target: str
    after: int
    next: int

    @property
    def count(self) -> int:
        return self.next - self.after - 1

    def message(self) -> str:
        return MSG_HOLE.format(count=self.count, target=self.target, after=self.after)


def _num(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return value if math.isfinite(value) else None


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _str(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def parse_record(rec: Any, received: float | None = None) -> TelemetrySample | None:
    """A metrics record (``gpudesk/agent/metrics.py``) as typed values; None if it is not one.

    A wrong field becomes ``None``, never an exception: one odd line must not end a stream.
    """
    if not isinstance(rec, Mapping):
        return None
    seq, t = _int(rec.get("seq")), _num(rec.get("t"))
    if seq is None or t is None:
        return None
    gpus = []
    for g in rec.get("gpus") or ():
        if isinstance(g, Mapping):
            gpus.append(GpuReading(
                time=float(t), index=_int(g.get("index")), name=_str(g.get("name")),
                uuid=_str(g.get("uuid")), util_pct=_num(g.get("util")),
                mem_used_mib=_num(g.get("mem_used_mib")),
                mem_total_mib=_num(g.get("mem_total_mib")), temp_c=_num(g.get("temp_c")),
                power_w=_num(g.get("power_w")), power_limit_w=_num(g.get("power_limit_w"))))
    # The agent's first process poll can precede its first sample: index by uuid here.
    by_uuid: dict[str | None, int | None] = {g.uuid: g.index for g in gpus if g.uuid}
    procs = []
    for p in rec.get("procs") or ():
        if isinstance(p, Mapping):
            uuid, index = _str(p.get("gpu_uuid")), _int(p.get("gpu_index"))
            procs.append(ProcReading(
                pid=_int(p.get("pid")), gpu_index=by_uuid.get(uuid) if index is None else index,
                gpu_uuid=uuid, name=_str(p.get("name")), mem_used_mib=_num(p.get("mem_used_mib"))))
    return TelemetrySample(seq=seq, time=float(t),
                           received=time.time() if received is None else received,
                           src=str(rec.get("src") or ""), gpus=tuple(gpus), procs=tuple(procs))


def parse_line(line: bytes, received: float | None = None) -> TelemetrySample | None:
    try:
        return parse_record(json.loads(line), received)
    except ValueError:
        return None


# --------------------------------------------------------------------------- the stream

@dataclass(frozen=True)
class Retry:
    """How long the stream waits before reconnecting (doubling from ``backoff_s`` up to
    ``backoff_max_s``), and how long a channel may stay quiet before it counts as stalled."""

    backoff_s: float = 0.5
    backoff_max_s: float = 10.0
    stall_s: float = 15.0


SampleFn = Callable[[TelemetrySample], None]
HoleFn = Callable[[Hole], None]
StateFn = Callable[[str, str], None]  # (state, detail)


class TelemetryStream:
    """One machine's samples, delivered in seq order to ``on_sample`` from a thread.

    ``since`` is the last seq the caller already has (0: everything on the
    machine). ``keeper`` runs before every reconnect and after a stall (no
    record for ``stall_s``): typically ``agent_deploy.ensure_running``, so a
    dead agent is started again. A refused host key or key ends the stream
    (state ``failed``, ``error`` set); anything else is retried with backoff.
    """

    def __init__(self, conn: SshConnection, follow_command: Callable[[int], str],
                 on_sample: SampleFn, *, on_hole: HoleFn | None = None,
                 on_state: StateFn | None = None, since: int = 0,
                 keeper: Callable[[], object] | None = None, backoff_s: float = 0.5,
                 backoff_max_s: float = 10.0, stall_s: float = 15.0) -> None:
        self.conn = conn
        self.target = str(conn.target)
        self.follow_command = follow_command
        self.on_sample = on_sample
        self.on_hole = on_hole
        self.on_state = on_state
        self.keeper = keeper
        self.retry = Retry(backoff_s, backoff_max_s, stall_s)
        self.last_seq = since
        self.last_time = 0.0  # of the newest sample delivered
        self.restarts = 0  # times the machine's seq started again (its metrics were wiped)
        self.channels = 0  # follow channels opened; more than one means it reconnected
        self.delivered = 0
        self.holes: list[Hole] = []
        self.error: BaseException | None = None
        self.state = STOPPED
        self._stop = threading.Event()
        self._chan: paramiko.Channel | None = None
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self._clean_end = False  # the last channel ended with the connection alive

    # ----------------------------------------------------------------- control

    def start(self) -> TelemetryStream:
        self._stop.clear()
        self._thread = threading.Thread(target=self._run, daemon=True,
                                        name=f"gpudesk-telemetry-{self.target}")
        self._thread.start()
        return self

    def stop(self, timeout: float = 10.0) -> None:
        self._stop.set()
        with self._lock:
            chan = self._chan
        if chan is not None:
            with contextlib.suppress(Exception):
                chan.close()
        thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout)

    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def __enter__(self) -> TelemetryStream:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # ----------------------------------------------------------------- the reader

    def _set_state(self, state: str, detail: str = "") -> None:
        self.state = state
        if self.on_state is not None:
            self.on_state(state, detail)

    def _run(self) -> None:
        delay = self.retry.backoff_s
        first = True
        dropped = True  # the first channel is "connecting"; so is one after a drop
        try:
            while not self._stop.is_set():
                detail = ""
                failed = True
                try:
                    if not first and self.keeper is not None:
                        self.keeper()
                    first = False
                    got = self._follow_once(announce=dropped)
                    failed = not self._clean_end
                    if got:
                        delay = self.retry.backoff_s
                except (HostKeyError, SshAuthError) as exc:
                    self.error = exc
                    self._set_state(FAILED, exc.message())
                    return
                except TelemetryError as exc:  # the remote command itself failed
                    detail = exc.message()
                except SshError as exc:
                    if self._stop.is_set() or self.conn._closed.is_set():
                        return
                    detail = exc.message()
                except (OSError, EOFError, paramiko.SSHException) as exc:
                    detail = f"{type(exc).__name__}: {exc}"[:200]
                except TemplatedError as exc:  # the keeper (agent start) failed; retry later
                    detail = exc.message()[:400]
                except Exception as exc:  # a bug (ours or a callback's): end loudly, not loop
                    log.exception("telemetry stream from %s failed", self.target)
                    self.error = exc
                    self._set_state(FAILED, f"{type(exc).__name__}: {exc}"[:400])
                    return
                if self._stop.is_set():
                    return
                dropped = failed
                self._set_state(DISCONNECTED if failed else RESUMING, detail)
                if self._stop.wait(delay if failed else min(delay, self.retry.backoff_s)):
                    return
                delay = min(delay * 2, self.retry.backoff_max_s)
        finally:
            if self.state != FAILED:
                self._set_state(STOPPED)

    def _follow_once(self, announce: bool = True) -> bool:
        """One channel's life; True when it delivered at least one new sample. Reopened
        after a clean end (``announce`` False) it says nothing until it streams again."""
        if announce:
            self._set_state(CONNECTING)
        self._clean_end = False
        chan = self.conn.start(self.follow_command(self.last_seq), what="streaming telemetry")
        with self._lock:
            self._chan = chan
        self.channels += 1
        if self._stop.is_set():
            chan.close()
        got = False
        err = b""
        buf = b""
        quiet_since = time.monotonic()
        pace = GilPace()
        try:
            chan.settimeout(0.25)  # stdin stays open: its end tells the follower to stop
            if announce or self.state != STREAMING:
                self._set_state(STREAMING)
            while not self._stop.is_set():
                while chan.recv_stderr_ready():
                    err = (err + chan.recv_stderr(1 << 16))[-4000:]
                try:
                    data = chan.recv(1 << 16)
                except TimeoutError:
                    if time.monotonic() - quiet_since > self.retry.stall_s:
                        self._clean_end = True  # the keeper's look tells a dead link
                        return got  # silent too long: reconnect (and let the keeper look)
                    continue
                if not data:
                    break
                received = time.time()
                buf += data
                *lines, buf = buf.split(b"\n")
                for line in lines:
                    if self._deliver(line, received):
                        got = True
                        quiet_since = time.monotonic()
                    pace.step()  # a backfill's burst leaves the window the GIL
                if not chan.recv_ready():
                    pace.idle()  # caught up: a live sample is never delayed
            if self._stop.is_set():
                return got
            if not chan.exit_status_ready():  # the status may follow the end of the output
                chan.status_event.wait(EXIT_STATUS_WAIT_S)
            code = chan.recv_exit_status() if chan.exit_status_ready() else -1
            while chan.recv_stderr_ready():
                err = (err + chan.recv_stderr(1 << 16))[-4000:]
        finally:
            with self._lock:
                self._chan = None
            chan.close()
        self._clean_end = code == 0  # -1: no exit status, the channel or link died
        if code not in (0, -1):
            raise TelemetryError(MSG_REMOTE, target=self.target, status=code,
                                 detail=err.decode("utf-8", "replace").strip()[-400:])
        return got

    def _deliver(self, line: bytes, received: float) -> bool:
        sample = parse_line(line, received) if line.strip() else None
        if sample is None:
            return False
        if sample.seq <= self.last_seq:
            if sample.time <= self.last_time:
                return False  # one we already have
            # Newer than the last sample but a lower seq: the machine's metrics were wiped
            # and its agent counts from 1 again. Take it from there.
            log.warning("%s: telemetry seq restarted at %d (was %d)", self.target, sample.seq,
                        self.last_seq)
            self.restarts += 1
            self.last_seq = 0
        if self.last_seq > 0 and sample.seq > self.last_seq + 1:
            hole = Hole(self.target, self.last_seq, sample.seq)
            self.holes.append(hole)
            if self.on_hole is not None:
                self.on_hole(hole)
        self.last_seq = sample.seq
        self.last_time = max(self.last_time, sample.time)
        self.delivered += 1
        self.on_sample(sample)
        return True
