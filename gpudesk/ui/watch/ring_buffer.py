"""24 hours of 1 Hz GPU samples per machine in fixed memory, and min/max downsampling.

One preallocated ring per machine: a shared ``float64`` time column and a
``float32`` block ``[gpu, series, slot]`` (util %, memory used MiB, temperature
C, power W). A missing value is NaN, never 0. 8 GPUs × 4 series × 86 400 slots
take 11.7 MB (``History.nbytes``), however long the machine runs.

Display never draws more points than the plot has pixels: ``downsample`` bins
the visible samples by time, one bin per pixel column, and keeps each bin's
minimum *and* maximum, so a one-second spike in a day of data stays visible.
A hole in time longer than ``gap_s`` becomes a NaN point, which pyqtgraph
(``connect="finite"``) draws as a break instead of a line across the hole.
Numpy-only: no Qt here.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from collections.abc import Mapping
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

SERIES: tuple[str, ...] = ("util", "mem_used_mib", "temp_c", "power_w")
DAY_SAMPLES = 24 * 3600  # 24 h at 1 Hz
GAP_S = 5.0  # a step in time longer than this is a hole in the data, drawn as a break
MAX_GPUS = 64

Floats = npt.NDArray[np.float64]
Values = npt.NDArray[np.float32]


def bytes_for(n_gpus: int, capacity: int = DAY_SAMPLES, n_series: int = len(SERIES)) -> int:
    """The memory a ``History`` of that shape holds (its arrays; Python overhead aside)."""
    return capacity * 8 + n_gpus * n_series * capacity * 4


def _number(value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return math.nan
    f = float(value)
    return f if math.isfinite(f) else math.nan


def record_values(record: Mapping[str, Any]) -> tuple[float, Values] | None:
    """``(t, values[gpu, series])`` of one agent record; None if it has no usable time.

    GPUs are placed by their ``index`` (a missing GPU row stays NaN); a ``None``
    value becomes NaN.
    """
    t = _number(record.get("t"))
    if math.isnan(t):
        return None
    gpus = [g for g in record.get("gpus") or [] if isinstance(g, Mapping)]
    indices = [g.get("index") for g in gpus]
    if all(isinstance(i, int) and not isinstance(i, bool) and 0 <= i < MAX_GPUS
           for i in indices):
        slots = [int(i) for i in indices]  # type: ignore[arg-type]
    else:
        slots = list(range(len(gpus)))
    out = np.full((max(slots, default=-1) + 1, len(SERIES)), np.nan, dtype=np.float32)
    for slot, g in zip(slots, gpus, strict=True):
        out[slot] = [_number(g.get(name)) for name in SERIES]
    return t, out


class History:
    """Bounded, time-ordered samples of one machine.

    Appends are O(1). A sample not newer than the newest one (a backfill after
    a reconnect that overlaps the live tail) goes through ``merge``, which
    rewrites the ring in order once; a sample at an existing time replaces it.
    """

    def __init__(self, capacity: int = DAY_SAMPLES, n_gpus: int = 0,
                 n_series: int = len(SERIES)) -> None:
        self.capacity = int(capacity)
        self.n_series = n_series
        self.times: Floats = np.full(self.capacity, np.nan)
        self.values: Values = np.full((n_gpus, n_series, self.capacity), np.nan,
                                      dtype=np.float32)
        self.head = 0  # the slot the next sample goes to
        self.size = 0
        self._rewritten_from = math.inf  # the earliest time a merge changed, until taken

    @property
    def n_gpus(self) -> int:
        return int(self.values.shape[0])

    @property
    def nbytes(self) -> int:
        return int(self.times.nbytes + self.values.nbytes)

    @property
    def last_time(self) -> float | None:
        return float(self.times[(self.head - 1) % self.capacity]) if self.size else None

    @property
    def first_time(self) -> float | None:
        return float(self.times[(self.head - self.size) % self.capacity]) if self.size else None

    def _grow(self, n_gpus: int) -> None:
        """More GPUs than seen so far (rare: first record, or a GPU came back)."""
        if n_gpus <= self.n_gpus:
            return
        bigger = np.full((n_gpus, self.n_series, self.capacity), np.nan, dtype=np.float32)
        bigger[: self.n_gpus] = self.values
        self.values = bigger

    def append(self, t: float, values: Values) -> None:
        """Add one sample: ``values`` is ``[gpu, series]``."""
        last = self.last_time
        if last is not None and t <= last:
            self.merge(np.array([t]), values[np.newaxis])
            return
        self._grow(values.shape[0])
        slot = self.head
        self.times[slot] = t
        self.values[:, :, slot] = np.nan
        self.values[: values.shape[0], :, slot] = values
        self.head = (slot + 1) % self.capacity
        self.size = min(self.size + 1, self.capacity)

    def extend(self, samples: Iterable[tuple[float, Values]]) -> None:
        """Many samples (a backfill): in order they append; out of order they merge once."""
        items = list(samples)
        if not items:
            return
        ts = np.array([t for t, _ in items], dtype=np.float64)
        last = self.last_time
        if (last is None or ts[0] > last) and bool(np.all(np.diff(ts) > 0)):
            for t, v in items:
                self.append(t, v)
            return
        width = max(v.shape[0] for _, v in items)
        block = np.full((len(items), width, self.n_series), np.nan, dtype=np.float32)
        for k, (_, v) in enumerate(items):
            block[k, : v.shape[0]] = v
        self.merge(ts, block)

    def merge(self, ts: Floats, block: Values) -> None:
        """Put samples ``block[k, gpu, series]`` at times ``ts`` in order; newest win ties.

        Only the stretch from the earliest new time onwards is rewritten: a
        backfill of the last minutes costs those minutes, not the whole day.
        """
        self._grow(block.shape[1])
        if not len(ts):
            return
        earliest = float(ts.min())
        self._rewritten_from = min(self._rewritten_from, earliest)
        tail_t, tail_v = self.window(earliest)
        kept = self.size - len(tail_t)  # older samples: they stay where they are
        first_slot = (self.head - len(tail_t)) % self.capacity
        new_v = np.full((self.n_gpus, self.n_series, len(ts)), np.nan, dtype=np.float32)
        new_v[: block.shape[1]] = np.transpose(block, (1, 2, 0))
        all_t = np.concatenate([tail_t, ts])
        all_v = np.concatenate([tail_v, new_v], axis=2)
        order = np.argsort(all_t, kind="stable")
        all_t, all_v = all_t[order], all_v[:, :, order]
        keep = np.ones(len(all_t), dtype=bool)
        keep[:-1] = all_t[1:] != all_t[:-1]  # of equal times keep the last (the newer)
        all_t, all_v = all_t[keep], all_v[:, :, keep]
        if len(all_t) >= self.capacity:  # the merged stretch alone fills the ring
            kept, first_slot = 0, 0
            all_t, all_v = all_t[-self.capacity:], all_v[:, :, -self.capacity:]
        # Written in order from the first rewritten slot, wrapping; a longer stretch
        # than before overwrites the oldest kept samples, which the ring drops anyway.
        n = len(all_t)
        slots = (first_slot + np.arange(n)) % self.capacity
        self.times[slots] = all_t
        self.values[:, :, slots] = all_v
        self.head = int((first_slot + n) % self.capacity)
        self.size = min(self.capacity, kept + n)

    def take_rewritten_from(self) -> float | None:
        """The earliest time merges changed since the last call (None: only appends).

        For the one plot that draws this history: what it drew before that time
        is still right.
        """
        t, self._rewritten_from = self._rewritten_from, math.inf
        return None if math.isinf(t) else t

    def pieces(self, t0: float | None = None,
               t1: float | None = None) -> list[tuple[Floats, Values]]:
        """Samples with ``t0 <= t <= t1`` as views, oldest first: one or two (the wrap)."""
        start = (self.head - self.size) % self.capacity
        if self.size < self.capacity and start + self.size <= self.capacity:
            parts = [(start, start + self.size)]
        else:  # wrapped: the older stretch at the end of the arrays, the newer at the start
            parts = [(start, self.capacity), (0, self.head)]
        out: list[tuple[Floats, Values]] = []
        for a, b in parts:
            seg = self.times[a:b]
            lo = 0 if t0 is None else int(np.searchsorted(seg, t0, "left"))
            hi = len(seg) if t1 is None else int(np.searchsorted(seg, t1, "right"))
            if hi > lo:
                out.append((self.times[a + lo:a + hi], self.values[:, :, a + lo:a + hi]))
        return out

    def window(self, t0: float | None = None, t1: float | None = None) -> tuple[Floats, Values]:
        """Samples with ``t0 <= t <= t1``, oldest first: ``(times, values[gpu, series, k])``.

        A view into the ring when the range lies in one stretch of it; otherwise
        only the requested range is copied.
        """
        parts = self.pieces(t0, t1)
        if not parts:
            return self.times[:0], self.values[:, :, :0]
        if len(parts) == 1:
            return parts[0]
        return (np.concatenate([t for t, _ in parts]),
                np.concatenate([v for _, v in parts], axis=2))

    def at(self, t: float, tolerance: float = GAP_S) -> tuple[float, Values] | None:
        """The sample nearest to ``t`` (within ``tolerance`` s): ``(time, values[gpu, series])``."""
        times, values = self.window(t - tolerance, t + tolerance)
        if not len(times):
            return None
        k = int(np.argmin(np.abs(times - t)))
        return float(times[k]), values[:, :, k]


@dataclass(frozen=True)
class Downsampled:
    """Points to hand to pyqtgraph: ``x`` and ``y[..., k]``, NaN where the line breaks."""

    x: Floats
    y: npt.NDArray[np.float32]
    binned: bool  # True when min/max per pixel column, False when every sample is a point


def _with_breaks(x: Floats, y: Values, breaks: npt.NDArray[np.intp]) -> tuple[Floats, Values]:
    """Insert a NaN point before each index in ``breaks``."""
    if not len(breaks):
        return x, y
    x = np.insert(x, breaks, np.nan)
    y = np.insert(y, breaks, np.nan, axis=-1)
    return x, y


def downsample(times: Floats, values: Values, t0: float, t1: float, width: int,
               gap_s: float = GAP_S) -> Downsampled:
    """At most ~2 points per pixel column of ``width`` over ``[t0, t1]``.

    ``times`` ascending; ``values[..., k]`` any leading shape (all series of all
    GPUs at once). Few samples: every one is kept. Many: one bin per column
    with its min and max (NaNs ignored; a bin of only NaN is NaN, a break).
    Either way, a step in time over ``gap_s`` gets a NaN point: a visible break.
    """
    return downsample_pieces([(times, values)], t0, t1, width, gap_s)


def downsample_pieces(pieces: Sequence[tuple[Floats, Values]], t0: float, t1: float,
                      width: int, gap_s: float = GAP_S) -> Downsampled:
    """``downsample`` of consecutive stretches (a wrapped ring) without joining them first."""
    binned = count_in(pieces, t0, t1) > 2 * max(1, int(width))
    return span(pieces, t0, t1, width, binned, gap_s=gap_s)


def count_in(pieces: Sequence[tuple[Floats, Values]], t0: float, t1: float) -> int:
    """How many samples lie in ``[t0, t1]``."""
    return sum(int(np.searchsorted(t, t1, "right") - np.searchsorted(t, t0, "left"))
               for t, _ in pieces)


def bin_edges(t0: float, t1: float, width: int) -> Floats:
    """The left edge of each pixel column's bin over ``[t0, t1]``."""
    width = max(1, int(width))
    return t0 + (t1 - t0) * np.arange(width, dtype=np.float64) / width


def span(pieces: Sequence[tuple[Floats, Values]], t0: float, t1: float, width: int,
         binned: bool, *, start: float | None = None, before: float | None = None,
         gap_s: float = GAP_S) -> Downsampled:
    """Part of the view ``[t0, t1]``: the samples with ``start <= t`` and ``t < before``.

    Binned with the whole view's columns (``bin_edges``), so a part that starts
    on a column edge gives exactly the points the whole view would have there:
    the plot draws an unchanging body once and re-bins only its live tail.
    """
    lo = t0 if start is None else max(t0, start)
    cut = []
    for times, values in pieces:
        a = int(np.searchsorted(times, lo, "left"))
        b = int(np.searchsorted(times, t1, "right") if before is None or before > t1
                else np.searchsorted(times, before, "left"))
        if b > a:
            cut.append((times[a:b], values[..., a:b]))
    width = max(1, int(width))
    if not cut:
        shape = pieces[0][1].shape[:-1] if pieces else (0,)
        return Downsampled(np.empty(0), np.empty((*shape, 0), dtype=np.float32), binned)
    if not binned:
        if len(cut) > 1:
            times = np.concatenate([t for t, _ in cut])
            values = np.concatenate([v for _, v in cut], axis=-1)
        else:
            times, values = cut[0]
        breaks = np.flatnonzero(np.diff(times) > gap_s) + 1
        x, y = _with_breaks(times.astype(np.float64), values.astype(np.float32), breaks)
        return Downsampled(x, y, binned=False)
    xs, ys = [], []
    for k, (times, values) in enumerate(cut):
        x, y = _binned(times, values, t0, t1, width, gap_s)
        if k and times[0] - cut[k - 1][0][-1] > gap_s:
            x, y = _with_breaks(x, y, np.array([0]))
        xs.append(x)
        ys.append(y)
    if len(xs) == 1:
        return Downsampled(xs[0], ys[0], binned=True)
    return Downsampled(np.concatenate(xs), np.concatenate(ys, axis=-1), binned=True)


def _binned(times: Floats, values: Values, t0: float, t1: float, width: int,
            gap_s: float) -> tuple[Floats, Values]:
    n = len(times)
    edges = bin_edges(t0, t1, width)
    starts = np.unique(np.searchsorted(times, edges, "left"))
    starts = starts[starts < n]
    if not len(starts) or starts[0] != 0:
        starts = np.concatenate([[0], starts])
    mins = np.fmin.reduceat(values, starts, axis=-1)
    maxs = np.fmax.reduceat(values, starts, axis=-1)
    bin_w = (t1 - t0) / width
    # The column of each bin's first sample; its centre is where the min/max pair is drawn.
    cols = np.floor((times[starts] - t0) / bin_w)
    centre = t0 + (cols + 0.5) * bin_w
    m = len(starts)
    x = np.repeat(centre, 2)
    y = np.empty((*values.shape[:-1], 2 * m), dtype=np.float32)
    y[..., 0::2] = mins
    y[..., 1::2] = maxs
    # Consecutive bins hold adjacent samples, so the hole between bins j-1 and j is
    # times[starts[j]] - times[starts[j] - 1].
    gaps = times[starts[1:]] - times[starts[1:] - 1] > gap_s
    breaks = 2 * (np.flatnonzero(gaps) + 1)
    return _with_breaks(x, y, breaks)


def latest_values(history: History) -> Values | None:
    """``values[gpu, series]`` of the newest sample, or None before the first."""
    if not history.size:
        return None
    return history.values[:, :, (history.head - 1) % history.capacity]


def series_index(name: str) -> int:
    return SERIES.index(name)


def as_samples(records: Sequence[Mapping[str, Any]]) -> list[tuple[float, Values]]:
    """``record_values`` of each record that has a time."""
    out = []
    for rec in records:
        sample = record_values(rec)
        if sample is not None:
            out.append(sample)
    return out
