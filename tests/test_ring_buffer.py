"""The dashboard's ring buffers and downsampling: pure numpy, no Qt."""

from __future__ import annotations

import math

import numpy as np

from gpudesk.ui.watch.ring_buffer import DAY_SAMPLES
from gpudesk.ui.watch.ring_buffer import SERIES
from gpudesk.ui.watch.ring_buffer import History
from gpudesk.ui.watch.ring_buffer import bytes_for
from gpudesk.ui.watch.ring_buffer import downsample
from gpudesk.ui.watch.ring_buffer import downsample_pieces
from gpudesk.ui.watch.ring_buffer import latest_values
from gpudesk.ui.watch.ring_buffer import record_values


def sample(value: float, n_gpus: int = 1) -> np.ndarray:
    return np.full((n_gpus, len(SERIES)), value, dtype=np.float32)


def test_wrap_around_keeps_the_newest_in_time_order() -> None:
    h = History(capacity=5)
    for t in range(1, 9):  # 8 samples into 5 slots
        h.append(float(t), sample(t * 10))
    times, values = h.window()
    assert times.tolist() == [4.0, 5.0, 6.0, 7.0, 8.0]
    assert values[0, 0].tolist() == [40.0, 50.0, 60.0, 70.0, 80.0]
    assert h.size == 5 and h.last_time == 8.0
    # A range inside one stretch of the ring is a view, not a copy.
    t_view, _ = h.window(6.0, 8.0)
    assert t_view.tolist() == [6.0, 7.0, 8.0]
    assert np.shares_memory(t_view, h.times)
    # Across the wrap point only the asked-for range comes back.
    t_cross, v_cross = h.window(4.5, 6.5)
    assert t_cross.tolist() == [5.0, 6.0]
    assert v_cross[0, 0].tolist() == [50.0, 60.0]


def test_out_of_order_backfill_merges_in_time_order() -> None:
    h = History(capacity=6)
    for t in (1.0, 2.0, 6.0, 7.0):
        h.append(t, sample(t))
    h.extend([(3.0, sample(3)), (4.0, sample(4)), (5.0, sample(5)), (7.0, sample(70))])
    times, values = h.window()
    assert times.tolist() == [2.0, 3.0, 4.0, 5.0, 6.0, 7.0]  # capacity 6: 1.0 dropped
    assert values[0, 0].tolist() == [2.0, 3.0, 4.0, 5.0, 6.0, 70.0]  # the newer 7.0 wins
    h.append(8.0, sample(8))  # appending continues after a merge
    assert h.window()[0].tolist() == [3.0, 4.0, 5.0, 6.0, 7.0, 8.0]


def test_merge_matches_a_sorted_reference_and_rewrites_only_the_tail() -> None:
    """Random appends and backfills against a dict kept in time order (newest wins)."""
    rng = np.random.default_rng(7)
    for capacity in (5, 17, 64):
        h = History(capacity=capacity)
        ref: dict[float, float] = {}
        now = 0.0
        for _ in range(300):
            if rng.random() < 0.7 or not ref:
                now += float(rng.integers(1, 3))
                h.append(now, sample(now))
                ref[now] = now
            else:  # a backfill overlapping the newest few seconds, some times new
                lo = now - float(rng.integers(0, 2 * capacity))
                ts = sorted({float(t) for t in rng.integers(int(lo), int(now) + 1, 6)})
                vals = [t + 0.5 for t in ts]
                h.extend([(t, sample(v)) for t, v in zip(ts, vals, strict=True)])
                ref.update(zip(ts, vals, strict=True))
            want = sorted(ref.items())[-capacity:]
            # The ring drops what is older than its newest ``capacity`` samples.
            ref = dict(sorted(ref.items())[-capacity:])
            times, values = h.window()
            assert times.tolist() == [t for t, _ in want]
            assert values[0, 0].tolist() == [v for _, v in want]
            assert h.last_time == want[-1][0]

    # A backfill of the newest minute leaves the rest of a full day where it was.
    day = History(capacity=DAY_SAMPLES, n_gpus=1)
    day.extend((float(t), sample(t)) for t in range(DAY_SAMPLES))
    before = day.times.copy()
    day.extend([(float(DAY_SAMPLES - 30), sample(-1)), (float(DAY_SAMPLES + 5), sample(5))])
    changed = np.flatnonzero(day.times != before)
    assert len(changed) <= 40  # the rewritten tail, not 86 400 slots
    assert day.size == DAY_SAMPLES and day.last_time == DAY_SAMPLES + 5


def test_none_becomes_nan_and_gpus_go_by_index() -> None:
    rec = {"t": 100.0, "gpus": [
        {"index": 1, "util": 55, "mem_used_mib": None, "temp_c": 61, "power_w": 250.5},
        {"index": 0, "util": None, "mem_used_mib": 4, "temp_c": None, "power_w": None},
    ]}
    parsed = record_values(rec)
    assert parsed is not None
    t, v = parsed
    assert t == 100.0 and v.shape == (2, 4)
    assert math.isnan(v[0, 0]) and v[0, 1] == 4 and math.isnan(v[0, 3])
    assert v[1, 0] == 55 and math.isnan(v[1, 1]) and v[1, 3] == np.float32(250.5)
    h = History(capacity=10)
    h.append(t, v)
    latest = latest_values(h)
    assert latest is not None and latest[1, 2] == 61
    assert record_values({"gpus": []}) is None  # no time: not a sample


def test_more_gpus_later_grow_the_block() -> None:
    h = History(capacity=4)
    h.append(1.0, sample(1, n_gpus=1))
    h.append(2.0, sample(2, n_gpus=3))
    _, values = h.window()
    assert values.shape == (3, 4, 2)
    assert math.isnan(values[2, 0, 0]) and values[2, 0, 1] == 2


def test_gap_in_time_becomes_a_break_raw_and_binned() -> None:
    times = np.concatenate([np.arange(0, 100.0), np.arange(400.0, 500.0)])
    values = np.ones((1, len(times)), dtype=np.float32)
    raw = downsample(times, values, 0, 500, width=1000)
    assert not raw.binned
    nan_at = np.flatnonzero(np.isnan(raw.x))
    assert len(nan_at) == 1 and raw.x[nan_at[0] - 1] == 99 and raw.x[nan_at[0] + 1] == 400
    assert np.isnan(raw.y[0, nan_at[0]])
    binned = downsample(times, values, 0, 500, width=50)
    assert binned.binned
    nan_x = np.flatnonzero(np.isnan(binned.x))
    assert len(nan_x) == 1
    assert binned.x[nan_x[0] - 1] < 100 and binned.x[nan_x[0] + 1] >= 400
    # No hole, no break: 1 Hz samples with jitter at a bin width near one second.
    jitter = np.arange(0, 1200.0) + np.random.default_rng(1).uniform(-0.3, 0.3, 1200)
    even = downsample(jitter, np.ones((1, 1200), dtype=np.float32), 0, 1200, width=550)
    assert even.binned and not np.isnan(even.x).any()


def test_downsample_keeps_spikes_and_dips() -> None:
    n = DAY_SAMPLES
    times = np.arange(n, dtype=np.float64)
    values = np.full((2, n), 50.0, dtype=np.float32)
    values[0, 12345] = 100.0  # a one-second spike
    values[1, 54321] = 0.0  # a one-second dip
    values[1, 100:200] = np.nan  # missing values do not hide the rest of their bin
    d = downsample(times, values, 0, n, width=800)
    assert d.binned and d.y.shape[-1] <= 2 * 800 + 2
    assert np.nanmax(d.y[0]) == 100.0 and np.nanmin(d.y[0]) == 50.0
    assert np.nanmin(d.y[1]) == 0.0 and np.nanmax(d.y[1]) == 50.0
    spike_x = d.x[np.nanargmax(d.y[0])]
    assert abs(spike_x - 12345) <= n / 800  # drawn in its own pixel column
    assert not np.isnan(d.x).any()  # NaN values are not holes in time


def test_all_nan_bin_is_a_break_in_the_line() -> None:
    times = np.arange(1000, dtype=np.float64)
    values = np.ones((1, 1000), dtype=np.float32)
    values[0, 300:400] = np.nan
    d = downsample(times, values, 0, 1000, width=100)
    nan_y = np.isnan(d.y[0])
    assert nan_y.any() and not np.isnan(d.x).any()
    assert np.all(nan_y[(d.x > 305) & (d.x < 395)])


def test_24h_of_8_gpus_fits_the_bound() -> None:
    bound = bytes_for(8)
    assert bound == 86_400 * 8 + 8 * 4 * 86_400 * 4 == 11_750_400
    t0 = 1_700_000_000.0
    n = DAY_SAMPLES + 500  # a day and a bit: the oldest 500 s fall out
    block = np.tile(np.arange(n, dtype=np.float32), (8, 4, 1))
    ts = t0 + np.arange(n, dtype=np.float64)
    h2 = History(n_gpus=8)
    for k in range(n):
        h2.append(float(ts[k]), block[:, :, k])
    assert h2.nbytes == bound
    times, values = h2.window()
    assert len(times) == DAY_SAMPLES and times[0] == ts[500] and times[-1] == ts[-1]
    assert np.all(np.diff(times) == 1.0)
    assert values[7, 3, -1] == DAY_SAMPLES + 499


def test_wrapped_ring_downsamples_without_joining_and_matches_the_joined() -> None:
    h = History(capacity=10_000)
    rng = np.random.default_rng(3)
    vals = rng.uniform(0, 100, 13_000).astype(np.float32)
    for k in range(13_000):
        if 6000 <= k < 6100:
            continue  # a 100 s hole, now in the older stretch of the wrapped ring
        h.append(float(k), np.full((1, 4), vals[k], dtype=np.float32))
    pieces = h.pieces()
    assert len(pieces) == 2 and all(np.shares_memory(t, h.times) for t, _ in pieces)
    flat = [(t, v.reshape(4, -1)) for t, v in pieces]
    split = downsample_pieces(flat, 3000, 13_000, width=400)
    times, values = h.window()
    joined = downsample(times, values.reshape(4, -1), 3000, 13_000, width=400)
    assert split.binned and joined.binned
    assert np.nanmax(split.y) == np.nanmax(joined.y) == values.max()
    assert np.nanmin(split.y) == np.nanmin(joined.y) == values.min()
    assert np.isnan(split.x).sum() == np.isnan(joined.x).sum() == 1  # the hole, once
    assert abs(len(split.x) - len(joined.x)) <= 2  # at most the bin split at the wrap
