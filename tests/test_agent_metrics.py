"""The metrics file: seq numbers, nulls, rotation bounds, backfill and follow across rotations."""

# ruff: noqa: F811 - pytest fixtures imported from fixtures_agent arrive as parameters
from __future__ import annotations

import json
from pathlib import Path

from fixtures_agent import sim_clock  # noqa: F401

from gpudesk.agent.clock import SimClock
from gpudesk.agent.metrics import METRICS_FILE
from gpudesk.agent.metrics import Follower
from gpudesk.agent.metrics import MetricsWriter
from gpudesk.agent.metrics import last_seq
from gpudesk.agent.metrics import metrics_files
from gpudesk.agent.metrics import read_since
from gpudesk.agent.smi import GpuSample
from gpudesk.agent.smi import ProcSample

GPU = GpuSample(index=0, uuid="GPU-a", name="NVIDIA A100-SXM4-40GB", util=99,
                mem_used_mib=30994, mem_total_mib=40960, temp_c=None, power_w=None,
                power_limit_w=400)


def test_records_carry_seq_time_and_nulls(tmp_path: Path, sim_clock: SimClock) -> None:
    w = MetricsWriter(tmp_path, clock=sim_clock)
    w.append([GPU], [ProcSample(pid=42, gpu_uuid="GPU-a", gpu_index=0, mem_used_mib=6265)])
    sim_clock.advance(1.25)
    w.append([GPU])
    w.close()
    lines = (tmp_path / METRICS_FILE).read_text().splitlines()
    first, second = (json.loads(x) for x in lines)
    assert first == {
        "seq": 1, "t": 1_700_000_000.0, "src": "nvidia-smi",
        "gpus": [{"index": 0, "uuid": "GPU-a", "name": "NVIDIA A100-SXM4-40GB", "util": 99,
                  "mem_used_mib": 30994, "mem_total_mib": 40960, "temp_c": None,
                  "power_w": None, "power_limit_w": 400}],
        "procs": [{"pid": 42, "gpu_uuid": "GPU-a", "gpu_index": 0, "name": None,
                   "mem_used_mib": 6265}],
    }
    assert '"temp_c":null' in lines[0]
    assert (second["seq"], second["t"], second["procs"]) == (2, 1_700_000_001.25, [])


def test_rotation_bounds_the_folder_and_keeps_the_newest(tmp_path: Path,
                                                         sim_clock: SimClock) -> None:
    w = MetricsWriter(tmp_path, max_bytes=4096, keep=3, clock=sim_clock)
    line_len = len(json.dumps(w.append([GPU] * 2), separators=(",", ":"))) + 1
    for _ in range(499):
        sim_clock.advance(1)
        w.append([GPU] * 2)
    w.close()
    names = sorted(p.name for p in metrics_files(tmp_path))
    assert names == ["metrics.1.jsonl", "metrics.2.jsonl", "metrics.3.jsonl", METRICS_FILE]
    total = sum(p.stat().st_size for p in tmp_path.glob("metrics*.jsonl"))
    assert total <= 4 * 4096
    assert all(p.stat().st_size <= 4096 for p in tmp_path.glob("metrics*.jsonl"))
    per_file = 4096 // line_len
    assert w.rotations == (500 - 1) // per_file
    recs = read_since(tmp_path, 0)
    seqs = [r["seq"] for r in recs]
    assert seqs[-1] == 500 and seqs == list(range(seqs[0], 501))
    assert len(seqs) > 3 * per_file  # three full rotated files and the current one
    assert [r["seq"] for r in read_since(tmp_path, 490)] == list(range(491, 501))
    assert [r["seq"] for r in read_since(tmp_path, 480, limit=3)] == [481, 482, 483]
    assert read_since(tmp_path, 500) == []


def test_a_restarted_writer_continues_the_numbering(tmp_path: Path,
                                                   sim_clock: SimClock) -> None:
    w = MetricsWriter(tmp_path, max_bytes=2048, keep=2, clock=sim_clock)
    for _ in range(40):
        w.append([GPU])
    w.close()
    assert last_seq(tmp_path) == 40
    w2 = MetricsWriter(tmp_path, max_bytes=2048, keep=2, clock=sim_clock)
    assert w2.append([GPU])["seq"] == 41
    w2.close()


def test_a_line_cut_by_a_crash_is_skipped_not_glued(tmp_path: Path,
                                                   sim_clock: SimClock) -> None:
    w = MetricsWriter(tmp_path, clock=sim_clock)
    w.append([GPU])
    w.close()
    with open(tmp_path / METRICS_FILE, "ab") as f:
        f.write(b'{"seq":2,"t":1700000001,"gpus":[{"ind')  # the agent died here
    w = MetricsWriter(tmp_path, clock=sim_clock)
    assert w.append([GPU])["seq"] == 2
    w.close()
    assert [r["seq"] for r in read_since(tmp_path, 0)] == [1, 2]


def test_read_since_on_an_empty_or_missing_folder(tmp_path: Path) -> None:
    assert read_since(tmp_path / "nothing", 0) == []
    assert last_seq(tmp_path / "nothing") == 0


def test_follower_sees_every_record_once_across_rotations(tmp_path: Path,
                                                         sim_clock: SimClock) -> None:
    w = MetricsWriter(tmp_path, max_bytes=1500, keep=4, clock=sim_clock)
    for _ in range(5):
        w.append([GPU])
    follower = Follower(tmp_path, since=2)
    got = [r["seq"] for r in follower.poll()]
    assert got == [3, 4, 5]
    for batch in (1, 3, 7, 2, 11):  # some batches cross a rotation, some do not
        for _ in range(batch):
            w.append([GPU])
        got += [r["seq"] for r in follower.poll()]
    w.close()
    assert w.rotations >= 3
    assert got == list(range(3, w.seq + 1))
    assert follower.poll() == []


def test_follower_starts_over_when_the_folder_was_emptied(tmp_path: Path,
                                                         sim_clock: SimClock) -> None:
    w = MetricsWriter(tmp_path, max_bytes=100_000, keep=2, clock=sim_clock)
    for _ in range(6):
        w.append([GPU])
    w.close()
    for path in metrics_files(tmp_path):
        path.unlink()
    w2 = MetricsWriter(tmp_path, max_bytes=100_000, keep=2, clock=sim_clock)
    for _ in range(3):
        w2.append([GPU])
    follower = Follower(tmp_path, since=6)  # a reader that had 1..6 reconnects
    assert [r["seq"] for r in follower.poll()] == [1, 2, 3]
    w2.append([GPU])
    assert [r["seq"] for r in follower.poll()] == [4]
    w2.close()
