"""Agent deploy and the telemetry stream against a real loopback sshd and the stand-in
nvidia-smi replaying real captures. The "machine" is this computer, so tests look into the
agent's folder and kill its processes directly."""
# ruff: noqa: F811 - pytest fixtures imported from fixtures_sshd/_telemetry arrive as parameters


from __future__ import annotations

import json
import os
import signal
import threading
import time
from pathlib import Path

import pytest
from fixtures_agent import pid_gone
from fixtures_agent import wait_for
from fixtures_sshd import SshdServer  # noqa: F401
from fixtures_sshd import sshd  # noqa: F401
from fixtures_sshd import start_sshd  # noqa: F401
from fixtures_telemetry import PYTHON  # noqa: F401
from fixtures_telemetry import Roots  # noqa: F401
from fixtures_telemetry import connect  # noqa: F401
from fixtures_telemetry import roots  # noqa: F401
from fixtures_telemetry import smi_wrapper  # noqa: F401

from gpudesk.agent.metrics import read_since
from gpudesk.services.remote import agent_deploy
from gpudesk.services.remote.agent_deploy import AgentDeployError
from gpudesk.services.remote.agent_deploy import AgentRules
from gpudesk.services.remote.agent_deploy import BudgetStop
from gpudesk.services.remote.agent_deploy import IdleStop
from gpudesk.services.remote.telemetry import Hole
from gpudesk.services.remote.telemetry import TelemetrySample
from gpudesk.services.remote.telemetry import TelemetryStream
from gpudesk.services.remote.telemetry import parse_line
from gpudesk.services.remote.telemetry import parse_record

WAIT_S = 60.0


class Collector:
    def __init__(self) -> None:
        self.samples: list[TelemetrySample] = []
        self.holes: list[Hole] = []
        self.states: list[tuple[str, str]] = []
        self.lock = threading.Lock()

    def sample(self, s: TelemetrySample) -> None:
        with self.lock:
            self.samples.append(s)

    def hole(self, h: Hole) -> None:
        self.holes.append(h)

    def state(self, state: str, detail: str) -> None:
        self.states.append((state, detail))

    def seqs(self) -> list[int]:
        with self.lock:
            return [s.seq for s in self.samples]

    def count(self) -> int:
        with self.lock:
            return len(self.samples)


def deploy(server: SshdServer, root: Path, scenario: str, rules: AgentRules | None = None,
           conn=None):  # type: ignore[no-untyped-def]
    conn = conn or connect(server)
    site = agent_deploy.deploy(conn, rules, root=str(root), python=PYTHON,
                               nvidia_smi=str(smi_wrapper(root.parent / "bin", scenario)))
    return conn, site


def stream_for(conn, site, col: Collector, **kw) -> TelemetryStream:  # type: ignore[no-untyped-def]
    return TelemetryStream(conn, site.follow_command, col.sample, on_hole=col.hole,
                           on_state=col.state,
                           keeper=lambda: agent_deploy.ensure_running(conn, site), **kw)


def contiguous(seqs: list[int]) -> bool:
    return seqs == list(range(seqs[0], seqs[0] + len(seqs)))


# --------------------------------------------------------------------------- parsing

def test_parse_record_types_values_and_tolerates_garbage() -> None:
    rec = {"seq": 7, "t": 1700000000.5, "src": "nvidia-smi",
           "gpus": [{"index": 0, "uuid": "GPU-x", "name": "Tesla V100-SXM2-32GB", "util": 99,
                     "mem_used_mib": 30994, "mem_total_mib": 32480, "temp_c": None,
                     "power_w": True, "power_limit_w": "300"}, "junk"],
           "procs": [{"pid": 42, "gpu_index": 0, "name": "python3", "mem_used_mib": 6265},
                     {"pid": 43, "gpu_uuid": "GPU-x", "gpu_index": None, "name": "python3"}]}
    s = parse_record(rec, received=1700000001.0)
    assert s is not None
    assert (s.seq, s.time, s.latency_s) == (7, 1700000000.5, 0.5)
    (g,) = s.gpus
    assert (g.index, g.util_pct, g.mem_used_mib, g.mem_total_mib) == (0, 99, 30994, 32480)
    assert g.temp_c is None and g.power_w is None and g.power_limit_w is None  # bool, str
    assert s.procs[0].pid == 42 and s.procs[0].gpu_uuid is None
    assert (s.procs[1].gpu_index, s.procs[1].mem_used_mib) == (0, None)  # index from the uuid
    assert g.to_json() == {"time": 1700000000.5, "gpu": 0, "name": "Tesla V100-SXM2-32GB",
                           "util_pct": 99, "mem_used_mib": 30994, "mem_total_mib": 32480,
                           "temp_c": None, "power_w": None}
    for bad in (b"", b"{", b"[]", b'{"seq": "1", "t": 1}', b'{"seq": 1}', b'{"seq": true, "t": 1}',
                b'{"seq": 1, "t": NaN}'):
        assert parse_line(bad) is None, bad


def test_invalid_rules_are_refused_before_anything_is_sent() -> None:
    with pytest.raises(AgentDeployError) as exc:
        AgentRules(idle=IdleStop(minutes=-1)).validate()
    assert "idle.minutes" in exc.value.message()
    with pytest.raises(AgentDeployError) as exc:
        AgentRules(budget=BudgetStop(cap=10, price_per_hour=1, since=0, action="explode")
                   ).validate()
    assert "budget.action" in exc.value.message()
    AgentRules(budget=BudgetStop(cap=10, price_per_hour=1, since=0),
               commands={"stop": ("true",)}).validate()


# --------------------------------------------------------------------------- deploy

def test_deploy_starts_agent_and_streams_the_capture(sshd: SshdServer, roots: Roots) -> None:
    root = roots.new()
    conn, site = deploy(sshd, root, "v100")
    with conn:
        assert site.started and site.uploaded and not site.replaced
        assert site.pid > 0 and not pid_gone(site.pid)
        assert Path(site.entry, "__main__.py").is_file()
        assert Path(site.entry).parent.name == f"v{site.version}"
        assert json.loads(Path(site.rules_path).read_text())["runs_dir"] == str(root / "runs")
        col = Collector()
        with stream_for(conn, site, col):
            wait_for(lambda: col.count() >= 3, WAIT_S, "3 samples")
            wait_for(lambda: any(s.procs for s in col.samples), WAIT_S, "process rows")
        seqs = col.seqs()
        assert seqs[0] == 1 and contiguous(seqs)
        g = col.samples[0].gpus[0]
        # The AAU V100 capture: 99 %, 30994 / 32480 MiB, 64-65 C.
        assert (g.index, g.name, g.util_pct) == (0, "Tesla V100-SXM2-32GB", 99)
        assert (g.mem_used_mib, g.mem_total_mib, g.uuid) == (30994, 32480,
                                                              "GPU-8f1a0c2d-31b4-9e5a-7c60-d2b9e4f1a305")
        assert {s.gpus[0].temp_c for s in col.samples[:2]} == {64, 65}
        assert {s.gpus[0].power_w for s in col.samples[:2]} == {251.43, 249.87}
        procs = next(s.procs for s in col.samples if s.procs)
        assert sorted((p.pid, p.name, p.mem_used_mib, p.gpu_index) for p in procs) == [
            (3858903, "VLLM::EngineCore", 6265, 0), (3880364, "VLLM::EngineCore", 5530, 0)]
        assert col.holes == []

        again = agent_deploy.deploy(conn, None, root=str(root), python=PYTHON,
                                    nvidia_smi=site.nvidia_smi)
        assert not again.uploaded and not again.started and again.pid == site.pid
        assert again.last_seq >= seqs[-1]


def test_new_agent_code_replaces_the_running_agent(sshd: SshdServer, roots: Roots,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    root = roots.new()
    conn, site = deploy(sshd, root, "a100")
    with conn:
        real = agent_deploy.agent_bundle()
        monkeypatch.setattr(agent_deploy, "agent_bundle", lambda: agent_deploy.AgentBundle(
            real.version + "x", real.archive))
        new = agent_deploy.ensure_running(conn, site)
        assert new.uploaded and new.replaced and new.started and new.pid != site.pid
        assert pid_gone(site.pid)
        assert [p.name for p in (root / "agent").iterdir() if p.name.startswith("v")] == [
            f"v{real.version}x"]


def test_missing_values_arrive_as_none(sshd: SshdServer, roots: Roots) -> None:
    for scenario in ("mig", "missing"):
        root = roots.new(scenario)
        conn, site = deploy(sshd, root, scenario)
        col = Collector()
        with conn, stream_for(conn, site, col):
            wait_for(lambda c=col: c.count() >= 1, WAIT_S, "a sample")
        gpus = {g.index: g for g in col.samples[0].gpus}
        if scenario == "mig":  # MIG-enabled A100 reports [N/A] utilisation
            assert gpus[0].util_pct is None and gpus[0].mem_used_mib == 13
            assert gpus[0].power_w == 54.91 and gpus[1].util_pct == 87
        else:  # old driver: bare N/A, [N/A], [Not Supported]
            k80, rtx = gpus[0], gpus[1]
            assert (k80.name, k80.util_pct, k80.mem_used_mib) == ("Tesla K80", 37, 2048)
            assert k80.temp_c is None and k80.power_w is None and k80.power_limit_w is None
            assert rtx.uuid is None and rtx.power_w is None and rtx.temp_c == 45


# --------------------------------------------------------------------------- reconnects

def test_outage_is_backfilled_without_holes(sshd: SshdServer, roots: Roots) -> None:
    root = roots.new()
    conn, site = deploy(sshd, root, "a100")
    data = Path(site.data_dir)
    col = Collector()
    with conn, stream_for(conn, site, col, backoff_s=0.2, backoff_max_s=1.0):
        wait_for(lambda: col.count() >= 2, WAIT_S, "samples before the drop")
        first_channels = conn.connects
        sshd.kill_sessions()  # the follower and the connection die mid-stream
        wait_for(lambda: col.count() >= 4 and conn.connects > first_channels, WAIT_S,
                 "samples after the first reconnect")
        sshd.stop()  # a longer outage: the agent keeps writing while nobody is connected
        during = col.seqs()[-1]
        wait_for(lambda: (read_since(data, during) or [{}])[-1].get("seq", 0) >= during + 3,
                 WAIT_S, "records written during the outage")
        sshd.start()  # same port and host key
        wait_for(lambda: col.count() >= 1 and col.seqs()[-1] >= during + 4, WAIT_S,
                 "the backfill and new samples")
    seqs = col.seqs()
    assert seqs[0] == 1 and contiguous(seqs), seqs
    assert col.holes == []
    assert conn.connects >= 3
    assert any(state == "disconnected" for state, _ in col.states)


def test_rotated_away_samples_are_reported_as_a_hole(sshd: SshdServer, roots: Roots) -> None:
    root = roots.new()
    rules = AgentRules(metrics_max_bytes=1024, metrics_keep=1)
    conn, site = deploy(sshd, root, "a100", rules)
    data = Path(site.data_dir)
    with conn:
        wait_for(lambda: len(read_since(data, 0)) >= 2 and read_since(data, 0)[0]["seq"] > 3,
                 WAIT_S, "rotation to drop early records")
        col = Collector()
        stream = TelemetryStream(conn, site.follow_command, col.sample, on_hole=col.hole,
                                 since=1)
        with stream:
            wait_for(lambda: col.count() >= 2, WAIT_S, "samples")
    (hole,) = col.holes
    first = col.samples[0].seq
    assert (hole.after, hole.next, hole.count) == (1, first, first - 2)
    assert str(hole.count) in hole.message()
    assert contiguous(col.seqs())


def test_killed_agent_is_restarted_and_the_stream_goes_on(sshd: SshdServer,
                                                          roots: Roots) -> None:
    root = roots.new()
    conn, site = deploy(sshd, root, "a100")
    col = Collector()
    with conn, stream_for(conn, site, col, stall_s=2.0, backoff_s=0.2):
        wait_for(lambda: col.count() >= 2, WAIT_S, "samples")
        os.kill(site.pid, signal.SIGKILL)
        roots.remember(site.pid)
        wait_for(lambda: pid_gone(site.pid), WAIT_S, "the agent to die")
        before = col.seqs()[-1]
        # The stream sees silence, its keeper (ensure_running) starts the agent again.
        wait_for(lambda: col.seqs()[-1] >= before + 2, WAIT_S, "samples from a new agent")
        new_pid = int((Path(site.data_dir) / "agent.pid").read_text())
        roots.remember(new_pid)
        assert new_pid != site.pid and not pid_gone(new_pid)
    assert contiguous(col.seqs())  # the new agent continues the seq from the file

    with connect(sshd) as conn2:  # ensure_running on its own, from a fresh connection
        os.kill(new_pid, signal.SIGKILL)
        wait_for(lambda: pid_gone(new_pid), WAIT_S, "the agent to die")
        again = agent_deploy.ensure_running(conn2, site)
        roots.remember(again.pid)
        assert again.started and not again.uploaded and again.pid not in (0, new_pid)
        assert not pid_gone(again.pid)


def test_wiped_metrics_restart_the_seq_and_the_stream_follows(sshd: SshdServer,
                                                               roots: Roots) -> None:
    """The machine's metrics folder emptied and its agent restarted: seq starts from 1
    again, and the stream takes the new samples instead of dropping them as old."""
    root = roots.new()
    conn, site = deploy(sshd, root, "a100")
    col = Collector()
    with conn, stream_for(conn, site, col, stall_s=2.0, backoff_s=0.2) as stream:
        wait_for(lambda: col.count() >= 3, WAIT_S, "samples")
        os.kill(site.pid, signal.SIGKILL)
        roots.remember(site.pid)
        wait_for(lambda: pid_gone(site.pid), WAIT_S, "the agent to die")
        for path in Path(site.data_dir).glob("metrics*"):
            path.unlink()
        before = col.count()
        last_before = col.seqs()[-1]
        wait_for(lambda: col.count() >= before + 3, WAIT_S, "samples after the wipe")
        roots.remember(int((Path(site.data_dir) / "agent.pid").read_text()))
        assert stream.restarts == 1 and stream.holes == []
    after = col.seqs()[before:]
    assert last_before >= 3 and after[0] == 1 and contiguous(after)
    times = [s.time for s in col.samples]
    assert times == sorted(times)  # nothing old was taken for new


def test_budget_action_runs_with_no_desktop_connected(sshd: SshdServer, roots: Roots,
                                                      tmp_path: Path) -> None:
    root = roots.new()
    flag = tmp_path / "budget-stop-ran"
    rules = AgentRules(
        budget=BudgetStop(cap=0.01, price_per_hour=36.0, since=time.time(), action="stop"),
        commands={"stop": (PYTHON, "-c", f"open({str(flag)!r}, 'w').write('stopped')")})
    conn, site = deploy(sshd, root, "a100", rules)
    conn.close()
    sshd.stop()  # no desktop, no SSH at all: the agent alone spends the $0.01 in 1 s
    # The command creates the file, then writes: wait for the whole word.
    wait_for(lambda: flag.exists() and flag.read_text() == "stopped", WAIT_S,
             "the budget action")
    assert not pid_gone(site.pid)  # detached: it outlived the connection and the server

    def thresholds() -> list[dict]:  # type: ignore[type-arg]
        lines = (Path(site.data_dir) / "events.jsonl").read_text().splitlines(keepends=True)
        events = [json.loads(line) for line in lines if line.endswith("\n")]  # whole lines
        return [e for e in events if "budget-threshold" in json.dumps(e)]

    # Once each of 50/80/100 %, recorded by the agent alone (it may still be writing).
    assert len(wait_for(lambda: len(thresholds()) >= 3 and thresholds(), WAIT_S,
                        "threshold events")) == 3


def test_two_machines_stream_at_once(sshd: SshdServer, roots: Roots,
                                     tmp_path: Path) -> None:
    other = start_sshd(tmp_path / "sshd-2")
    try:
        conn_a, site_a = deploy(sshd, roots.new("m1"), "v100")
        conn_b, site_b = deploy(other, roots.new("m2"), "a100x8")
        col_a, col_b = Collector(), Collector()
        with conn_a, conn_b, stream_for(conn_a, site_a, col_a), \
                stream_for(conn_b, site_b, col_b):
            wait_for(lambda: col_a.count() >= 2 and col_b.count() >= 2, WAIT_S,
                     "samples from both machines")
        assert {g.name for s in col_a.samples for g in s.gpus} == {"Tesla V100-SXM2-32GB"}
        assert all(len(s.gpus) == 8 for s in col_b.samples)
        assert [g.mem_used_mib for g in col_b.samples[0].gpus] == [
            30994 + 16 * i for i in range(8)]
        assert contiguous(col_a.seqs()) and contiguous(col_b.seqs())
    finally:
        other.stop()


def test_a_changed_host_key_ends_the_stream_instead_of_retrying(sshd: SshdServer,
                                                               roots: Roots) -> None:
    root = roots.new()
    conn, site = deploy(sshd, root, "a100")
    col = Collector()
    stream = stream_for(conn, site, col, backoff_s=0.1, backoff_max_s=0.2)
    with conn, stream:
        wait_for(lambda: col.count() >= 1, WAIT_S, "a sample")
        sshd.restart_with_new_host_key()  # drops every session, comes back as another machine
        wait_for(lambda: not stream.running, WAIT_S, "the stream to give up")
    assert stream.state == "failed" and stream.error is not None
    assert sshd.host_key_fingerprint in col.states[-1][1]
    assert not pid_gone(site.pid)  # the agent on the machine is untouched



def test_a_quiet_stream_is_reopened_without_saying_the_connection_dropped(
        sshd: SshdServer, roots: Roots, tmp_path: Path) -> None:
    """A machine with no NVIDIA driver (issue 25): the agent sends one record saying so and
    then nothing; the stream reopens after each quiet spell over the same connection, as
    "resuming" — never "disconnected", and "connecting" only once."""
    root = roots.new()
    conn = connect(sshd)
    site = agent_deploy.deploy(conn, None, root=str(root), python=PYTHON,
                               nvidia_smi=str(tmp_path / "absent" / "nvidia-smi"))
    col = Collector()
    with conn, stream_for(conn, site, col, backoff_s=0.2, stall_s=1.0):
        wait_for(lambda: col.count() >= 1, WAIT_S, "the no-GPU record")
        wait_for(lambda: [s for s, _ in col.states].count("resuming") >= 2, WAIT_S,
                 "two quiet reopenings")
        assert conn.connects == 1  # the same connection all along
    (sample,) = col.samples
    assert sample.no_gpu and sample.gpus == () and sample.src == "no-gpu"
    states = [state for state, _ in col.states]
    assert "disconnected" not in states, col.states
    assert states.count("connecting") == 1, col.states
