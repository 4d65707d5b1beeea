"""nvidia-smi parsing (captures + property tests), the long-lived reader, and the NVML path."""

# ruff: noqa: F811 - pytest fixtures imported from fixtures_agent arrive as parameters
from __future__ import annotations

import math
from types import SimpleNamespace
from typing import Any

import pytest
from fixtures_agent import FakeSmi  # noqa: F401
from fixtures_agent import fake_smi  # noqa: F401
from fixtures_agent import pid_gone  # noqa: F401
from fixtures_agent import wait_for  # noqa: F401
from hypothesis import given
from hypothesis import settings
from hypothesis import strategies as st

from gpudesk.agent.smi import _MISSING as MISSING_WORDS
from gpudesk.agent.smi import QUERY_FIELDS
from gpudesk.agent.smi import GpuSample
from gpudesk.agent.smi import NvmlSampler
from gpudesk.agent.smi import RowGrouper
from gpudesk.agent.smi import SmiStream
from gpudesk.agent.smi import count_gpus
from gpudesk.agent.smi import gpu_count
from gpudesk.agent.smi import parse_gpu_csv
from gpudesk.agent.smi import parse_gpu_line
from gpudesk.agent.smi import parse_number
from gpudesk.agent.smi import parse_procs_csv
from gpudesk.agent.smi import poll_procs
from gpudesk.agent.smi import query_gpu_argv
from gpudesk.agent.smi import sample_once

A100_ROW = "0, GPU-4d2b3c1e, NVIDIA A100-SXM4-40GB, 0, 4, 40960, 31, 52.32, 400.00"


def test_a100_capture_row_parses_every_field() -> None:
    assert parse_gpu_line(A100_ROW) == GpuSample(
        index=0, uuid="GPU-4d2b3c1e", name="NVIDIA A100-SXM4-40GB", util=0, mem_used_mib=4,
        mem_total_mib=40960, temp_c=31, power_w=52.32, power_limit_w=400)


@pytest.mark.parametrize("marker", ["[N/A]", "[Not Supported]", "N/A", "", "-",
                                    "[Unknown Error]", "[GPU is lost]", "ERR!", "Not Supported"])
@pytest.mark.parametrize("position", range(3, 9))
def test_a_missing_marker_blanks_only_its_field(marker: str, position: int) -> None:
    parts = [p.strip() for p in A100_ROW.split(",")]
    good = parse_gpu_line(A100_ROW)
    parts[position] = marker
    got = parse_gpu_line(", ".join(parts))
    assert got is not None and good is not None
    key = list(good.to_json())[position]
    assert got.to_json()[key] is None
    assert {k: v for k, v in got.to_json().items() if k != key} == \
        {k: v for k, v in good.to_json().items() if k != key}


@pytest.mark.parametrize(("token", "kind", "value"), [
    ("45 %", "pct", 45), ("3012 MiB", "mib", 3012), ("16 GiB", "mib", 16384),
    ("2048 MB", "mib", 2048), ("31.12 W", "w", 31.12), ("70000 mW", "w", 70),
    ("0.5", "pct", 0.5), ("-5", "c", -5), ("1e3", "mib", 1000),
])
def test_units_from_other_drivers_are_read(token: str, kind: str, value: float) -> None:
    assert parse_number(token, kind) == value


@pytest.mark.parametrize(("token", "kind"), [
    ("101", "pct"), ("-1", "pct"), ("-3", "mib"), ("nan", "w"), ("inf", "w"), ("1e999", "mib"),
    ("5 W", "pct"), ("12 apples", "mib"), ("٣", "pct"), ("0x10", "mib"), ("1,5", "w"),
])
def test_out_of_range_or_foreign_values_are_no_value(token: str, kind: str) -> None:
    assert parse_number(token, kind) is None


def test_headers_blanks_and_error_lines_are_not_rows() -> None:
    text = "\n".join([
        "index, uuid, name, utilization.gpu [%], memory.used [MiB], memory.total [MiB], "
        "temperature.gpu, power.draw [W], power.limit [W]",
        "",
        "Unable to determine the device handle for GPU 0000:00:1E.0: Unknown Error",
        "No devices were found",
        A100_ROW,
    ])
    rows = parse_gpu_csv(text)
    assert [r.index for r in rows] == [0]


def test_a_name_with_commas_keeps_the_numbers_in_place() -> None:
    row = parse_gpu_line("3, GPU-x, Weird, Inc. Card, 7, 10, 20, 30, 40.5, 50")
    assert row is not None
    assert (row.index, row.name, row.util, row.power_w, row.power_limit_w) == \
        (3, "Weird, Inc. Card", 7, 40.5, 50)


def test_short_rows_fill_missing_trailing_fields_with_none() -> None:
    row = parse_gpu_line("1, GPU-y, Tesla T4, 12")
    assert row == GpuSample(index=1, uuid="GPU-y", name="Tesla T4", util=12)


def test_mig_listing_counts_physical_gpus_only() -> None:
    listing = ("GPU 0: NVIDIA A100-SXM4-40GB (UUID: GPU-a)\n"
               "  MIG 3g.20gb     Device  0: (UUID: MIG-b)\n"
               "  MIG 3g.20gb     Device  1: (UUID: MIG-c)\n"
               "GPU 1: NVIDIA A100-SXM4-40GB (UUID: GPU-d)\n")
    assert count_gpus(listing) == 2
    assert count_gpus("No devices were found") == 0


def test_compute_apps_rows_header_only_and_odd_names() -> None:
    text = ("gpu_uuid, pid, used_gpu_memory [MiB], process_name\n"
            "GPU-v, 3858903, 6265 MiB, VLLM::EngineCore\n"
            "GPU-v, 3880364, [N/A], python3 train.py --tag a,b\n"
            "No running processes found\n")
    procs = parse_procs_csv(text)
    assert [(p.pid, p.mem_used_mib, p.name) for p in procs] == [
        (3858903, 6265, "VLLM::EngineCore"), (3880364, None, "python3 train.py --tag a,b")]
    assert parse_procs_csv("pid, process_name, used_gpu_memory [MiB]\n") == []


# --- properties ------------------------------------------------------------------------

NO_SEP = st.text(st.characters(blacklist_characters=",\r\n\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029"),
                 max_size=20)
MISSING = st.sampled_from(["[N/A]", "[Not Supported]", "N/A", "", "-", "[Unknown Error]"])
NUMERIC = {"utilization.gpu": ("pct", 0, 100), "memory.used": ("mib", 0, 2_000_000),
           "memory.total": ("mib", 0, 2_000_000), "temperature.gpu": ("c", -20, 120),
           "power.draw": ("w", 0, 2000), "power.limit": ("w", 0, 2000)}
UNIT = {"pct": "%", "mib": "MiB", "w": "W", "c": ""}
# The parser's sanity limits: beyond them a reading is garbage.
LIMITS = {"pct": (0, 100), "mib": (0, 1e9), "w": (0, 1e5), "c": (-100, 250)}


def good_number(kind: str, low: float, high: float) -> st.SearchStrategy[tuple[str, float]]:
    ints = st.integers(int(low), int(high)).map(lambda v: (str(v), float(v)))
    decs = st.integers(int(low) * 100, int(high) * 100).map(
        lambda v: (f"{v / 100:.2f}", v / 100))

    def with_unit(pair: tuple[str, float], unit: bool) -> tuple[str, float]:
        return (f"{pair[0]} {UNIT[kind]}" if unit and UNIT[kind] else pair[0]), pair[1]

    return st.tuples(st.one_of(ints, decs), st.booleans()).map(lambda a: with_unit(*a))


def bad_number(kind: str) -> st.SearchStrategy[str]:
    low, high = LIMITS[kind]
    letters = st.text(st.sampled_from("abcxyzN/A[]() _!?"), min_size=1, max_size=10).filter(
        lambda s: s.strip().lower() not in ("c", "w", "mb", "kb", "gb", "mib", "kib", "gib"))
    return st.one_of(
        MISSING, letters,
        st.floats(high + 1, 1e12).map(lambda v: f"{v:.1f}"),
        st.floats(-1e12, low - 1).map(lambda v: f"{v:.1f}"),
        st.sampled_from(["nan", "inf", "-inf", "1e999", "0x1f", "12 furlongs"]),
    )


@st.composite
def field_cases(draw: st.DrawFn) -> tuple[str, dict[str, Any]]:
    """A row of good and garbage fields, and what each field must parse to."""
    cells: list[str] = []
    want: dict[str, Any] = {}
    if draw(st.booleans()):
        i = draw(st.integers(0, 9999))
        cells.append(str(i))
        want["index"] = i
    else:
        cells.append(draw(st.one_of(MISSING, st.sampled_from(["-1", "gpu0", "1.5", "99999"]))))
        want["index"] = None
    for key in ("uuid", "name"):
        if draw(st.booleans()):
            # a real name or uuid, never one of nvidia-smi's words for "no value" ("NA",
            # "none", "unknown"...), which the parser rightly reads as missing
            text = draw(st.text(st.characters(whitelist_categories=("L", "N"),
                                              max_codepoint=0x2FF), min_size=1, max_size=24)
                        .filter(lambda t: t.strip().lower() not in MISSING_WORDS))
            cells.append(text)
            want[key] = text
        else:
            cells.append(draw(MISSING))
            want[key] = None
    for name in QUERY_FIELDS[3:]:
        kind, low, high = NUMERIC[name]
        if draw(st.booleans()):
            token, value = draw(good_number(kind, low, high))
            cells.append(token)
            want[name] = value
        else:
            cells.append(draw(bad_number(kind)))
            want[name] = None
    pad = draw(st.sampled_from([", ", ",", " , ", ",  "]))
    return pad.join(cells), want


KEYS = dict(zip(QUERY_FIELDS, ("index", "uuid", "name", "util", "mem_used_mib",
                               "mem_total_mib", "temp_c", "power_w", "power_limit_w"),
                strict=True))


@settings(max_examples=400, deadline=None)
@given(field_cases())
def test_each_bad_field_is_none_and_good_fields_still_parse(case: tuple[str, dict[str, Any]],
                                                           ) -> None:
    line, want = case
    got = parse_gpu_line(line)
    is_row = want["index"] is not None or any(want[f] is not None for f in QUERY_FIELDS[3:])
    if not is_row:
        assert got is None
        return
    assert got is not None
    fields = got.to_json()
    for name, value in want.items():
        key = KEYS[name]
        if value is None:
            assert fields[key] is None, (name, line)
        else:
            assert fields[key] == pytest.approx(value), (name, line)


@settings(max_examples=400, deadline=None)
@given(st.lists(NO_SEP, max_size=12))
def test_any_fields_give_typed_in_range_values(cells: list[str]) -> None:
    row = parse_gpu_line(", ".join(cells))
    if row is None:
        return
    for key, value in row.to_json().items():
        if value is None:
            continue
        if key in ("uuid", "name"):
            assert isinstance(value, str) and value.strip() == value and value
            assert key == "name" or "," not in value
        else:
            assert isinstance(value, (int, float)) and math.isfinite(value)
    assert row.util is None or 0 <= row.util <= 100
    assert row.mem_used_mib is None or row.mem_used_mib >= 0


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=300))
def test_arbitrary_text_never_raises(text: str) -> None:
    parse_gpu_csv(text)
    parse_procs_csv(text)
    count_gpus(text)
    for kind in ("pct", "mib", "w", "c"):
        parse_number(text, kind)


# --- grouping rows into samples -----------------------------------------------------------

def _row(i: int | None) -> GpuSample:
    return GpuSample(index=i, util=1)


def test_grouper_completes_on_expected_count() -> None:
    g = RowGrouper(expected=2, gap_s=0.3)
    assert g.feed(_row(0), 0.0) == []
    assert [[r.index for r in s] for s in g.feed(_row(1), 0.01)] == [[0, 1]]
    assert g.deadline() is None


def test_grouper_cuts_on_repeated_index_and_on_a_gap() -> None:
    g = RowGrouper(expected=None, gap_s=0.3)
    g.feed(_row(0), 0.0)
    g.feed(_row(1), 0.0)
    assert [[r.index for r in s] for s in g.feed(_row(0), 1.0)] == [[0, 1]]
    assert g.flush_due(1.29) is None
    assert [r.index for r in g.flush_due(1.3) or []] == [0]


# --- against the stand-in nvidia-smi --------------------------------------------------------

def test_once_v100_capture(fake_smi: FakeSmi) -> None:
    fake_smi.scenario("v100")
    rows = sample_once()
    assert rows is not None and len(rows) == 1
    r = rows[0]
    assert (r.name, r.util, r.mem_used_mib, r.mem_total_mib) == \
        ("Tesla V100-SXM2-32GB", 99, 30994, 32480)
    procs = poll_procs()
    assert [(p.pid, p.mem_used_mib, p.name) for p in procs or []] == [
        (3858903, 6265, "VLLM::EngineCore"), (3880364, 5530, "VLLM::EngineCore")]


def test_once_missing_values_are_none(fake_smi: FakeSmi) -> None:
    fake_smi.scenario("missing")
    rows = sample_once()
    assert rows is not None and [r.index for r in rows] == [0, 1]
    k80, rtx = rows
    assert (k80.util, k80.temp_c, k80.power_w, k80.power_limit_w) == (37, None, None, None)
    assert (rtx.uuid, rtx.temp_c, rtx.power_w, rtx.power_limit_w) == (None, 45, None, None)
    procs = poll_procs()
    assert procs is not None and [(p.pid, p.mem_used_mib) for p in procs] == [(2211, None)]


def test_once_mig_utilisation_is_none_memory_is_read(fake_smi: FakeSmi) -> None:
    fake_smi.scenario("mig")
    rows = sample_once()
    assert rows is not None
    assert [(r.index, r.util, r.mem_used_mib) for r in rows] == [(0, None, 13), (1, 87, 30112)]
    assert gpu_count() == 2
    assert poll_procs() == []


def test_once_units_printed_despite_nounits(fake_smi: FakeSmi) -> None:
    fake_smi.scenario("units")
    rows = sample_once()
    assert rows is not None
    t4 = rows[0]
    assert (t4.util, t4.mem_used_mib, t4.mem_total_mib, t4.power_w, t4.power_limit_w) == \
        (45, 3012, 15360, 31.12, 70)


def test_stream_8_gpus_from_one_process(fake_smi: FakeSmi) -> None:
    fake_smi.scenario("a100x8")
    samples: list[list[GpuSample]] = []
    stream = SmiStream(samples.append, interval_ms=20, expected=gpu_count())
    stream.start()
    try:
        wait_for(lambda: len(samples) >= 25, what="25 samples")
    finally:
        stream.stop()
    assert all([r.index for r in s] == list(range(8)) for s in samples[:25])
    utils = [s[0].util for s in samples[:3]]
    assert utils == [97, 98, 96]  # the capture's rows, one interval after another
    assert stream.spawned == 1 and len(fake_smi.loop_pids()) == 1
    pid = fake_smi.loop_pids()[0]
    assert pid_gone(pid), "stop() must terminate and reap nvidia-smi"
    assert query_gpu_argv("nvidia-smi", 20)[-2:] == ["-lms", "20"]


def test_stream_groups_by_gap_without_a_gpu_count(fake_smi: FakeSmi) -> None:
    fake_smi.scenario("missing")  # an error line first, then 2 rows per interval
    samples: list[list[GpuSample]] = []
    stream = SmiStream(samples.append, interval_ms=100, expected=None)
    stream.start()
    try:
        wait_for(lambda: len(samples) >= 4, what="4 samples")
    finally:
        stream.stop()
    assert all([r.index for r in s] == [0, 1] for s in samples[:4])


def test_stream_restarts_nvidia_smi_when_it_exits(fake_smi: FakeSmi) -> None:
    fake_smi.monkeypatch.setenv("FAKE_SMI_EXIT_AFTER", "2")
    samples: list[list[GpuSample]] = []
    stream = SmiStream(samples.append, interval_ms=20, expected=1)
    stream.start()
    try:
        wait_for(lambda: len(samples) >= 3, what="a sample from the restarted child")
    finally:
        stream.stop()
    pids = fake_smi.loop_pids()
    assert stream.spawned >= 2 and len(pids) == stream.spawned
    assert all(pid_gone(p) for p in pids)


def test_stream_without_nvidia_smi_does_not_crash(tmp_path: Any) -> None:
    stream = SmiStream(lambda rows: None, exe=str(tmp_path / "no-such-smi"), interval_ms=20)
    stream.start()
    stream.stop()
    assert stream.spawned == 0
    assert sample_once(str(tmp_path / "no-such-smi")) is None


# --- NVML -------------------------------------------------------------------------------

class NVMLError(Exception):
    pass


def _fake_nvml() -> SimpleNamespace:
    """pynvml's surface as gpudesk uses it; GPU 1 does not support power readings."""

    def unsupported(*args: Any) -> Any:
        raise NVMLError("Not Supported")

    def power(h: int) -> int:
        if h == 1:
            raise NVMLError("Not Supported")
        return 52320  # mW

    return SimpleNamespace(
        NVML_TEMPERATURE_GPU=0,
        nvmlDeviceGetCount=lambda: 2,
        nvmlDeviceGetHandleByIndex=lambda i: i,
        nvmlDeviceGetUUID=lambda h: f"GPU-{h}",
        nvmlDeviceGetName=lambda h: b"NVIDIA A100-SXM4-40GB",
        nvmlDeviceGetUtilizationRates=lambda h: SimpleNamespace(gpu=7 * h, memory=0),
        nvmlDeviceGetMemoryInfo=lambda h: SimpleNamespace(used=4 * 2**20,
                                                          total=40960 * 2**20),
        nvmlDeviceGetTemperature=lambda h, kind: 31,
        nvmlDeviceGetPowerUsage=power,
        nvmlDeviceGetEnforcedPowerLimit=unsupported,
        nvmlDeviceGetComputeRunningProcesses=lambda h: [
            SimpleNamespace(pid=4242, usedGpuMemory=6265 * 2**20)] if h == 0 else [],
        nvmlShutdown=lambda: None,
    )


def test_nvml_unsupported_field_is_none_for_that_field_only() -> None:
    sampler = NvmlSampler(_fake_nvml(), lambda rows: None)
    rows = sampler.sample()
    assert [r.to_json() for r in rows] == [
        {"index": 0, "uuid": "GPU-0", "name": "NVIDIA A100-SXM4-40GB", "util": 0,
         "mem_used_mib": 4, "mem_total_mib": 40960, "temp_c": 31, "power_w": 52.32,
         "power_limit_w": None},
        {"index": 1, "uuid": "GPU-1", "name": "NVIDIA A100-SXM4-40GB", "util": 7,
         "mem_used_mib": 4, "mem_total_mib": 40960, "temp_c": 31, "power_w": None,
         "power_limit_w": None},
    ]
    procs = sampler.procs()
    assert procs is not None
    assert [(p.pid, p.gpu_index, p.gpu_uuid, p.mem_used_mib) for p in procs] == \
        [(4242, 0, "GPU-0", 6265)]


def test_a_missing_nvidia_smi_is_said_once_then_looked_for_rarely(
        tmp_path: Any, caplog: pytest.LogCaptureFixture) -> None:
    """No driver (issue 25): one line saying so, not "nvidia-smi failed: [Errno 2]" at every
    poll; the next look is MISSING_RECHECK_S later, and a driver found later is used."""
    from gpudesk.agent import smi

    exe = str(tmp_path / "nvidia-smi")
    caplog.set_level("WARNING", logger="gpudesk.agent")
    for _ in range(5):
        assert smi.poll_procs(exe) is None
        assert smi.sample_once(exe) is None
    said = [r.getMessage() for r in caplog.records]
    assert len(said) == 1 and said[0].startswith("No NVIDIA GPU or driver on this machine")
    assert "Errno" not in said[0] and smi.smi_missing(exe)
    # installed meanwhile: looked for again only after the wait (here: made due now)
    (tmp_path / "nvidia-smi").write_text("#!/bin/sh\necho 'GPU 0: Tesla T4 (UUID: GPU-1)'\n")
    (tmp_path / "nvidia-smi").chmod(0o755)
    assert smi.gpu_count(exe) is None  # still within the wait: not run
    smi._missing_until[exe] = 0.0
    assert smi.gpu_count(exe) == 1 and not smi.smi_missing(exe)
