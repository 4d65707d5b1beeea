"""The run queue on the machine (``gpudesk/agent/queue.py``) with the stand-in nvidia-smi
reporting 8 GPUs: real launcher, real detached processes, real agent process for restarts.

Each queued "run" is a small script that writes the environment it really saw and then
waits for the test to release it (``<name>.go`` holds its exit status).
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fixtures_agent import FakeSmi  # noqa: F401
from fixtures_agent import fake_smi  # noqa: F401
from fixtures_agent import sim_clock  # noqa: F401
from fixtures_agent import wait_for  # noqa: F401

from gpudesk.agent import queue as q
from gpudesk.agent.__main__ import Agent
from gpudesk.agent.clock import SimClock
from gpudesk.agent.rules import parse_rules
from gpudesk.agent.run_folder import pid_alive
from gpudesk.agent.runs import process_tree
from gpudesk.agent.smi import GpuSample
from gpudesk.agent.smi import gpu_count
from gpudesk.services.runs.run_queue import launcher_source

JOB = textwrap.dedent("""
    import json, os, sys, time
    out, name = sys.argv[1], sys.argv[2]
    tmp = os.path.join(out, name + ".env.tmp")
    with open(tmp, "w") as f:
        json.dump(dict(os.environ), f)
    os.replace(tmp, os.path.join(out, name + ".env.json"))
    go = os.path.join(out, name + ".go")
    deadline = time.monotonic() + 120
    while not os.path.exists(go) and time.monotonic() < deadline:
        time.sleep(0.02)
    with open(go) as f:
        sys.exit(int(f.read().strip() or 0))
""")


class Machine:
    """``root/runs`` and ``root/queue`` as on a machine, with the job script and its outbox."""

    def __init__(self, tmp: Path) -> None:
        self.root = tmp / "machine"
        self.runs = self.root / "runs"
        self.folder = self.root / q.QUEUE_DIR
        self.out = tmp / "out"
        self.out.mkdir(parents=True)
        self.job = tmp / "job.py"
        self.job.write_text(JOB)
        q.install_launcher(self.folder, launcher_source())

    def add(self, name: str, gpus: int) -> dict[str, Any]:
        spec = {"run_dir": str(self.runs / name), "cwd": str(self.out),
                "argv": [sys.executable, str(self.job), str(self.out), name], "env": {}}
        return q.add_entry(self.folder, name, gpus, spec)

    def release(self, name: str, code: int = 0) -> None:
        (self.out / f"{name}.go").write_text(str(code))

    def env(self, name: str) -> dict[str, str]:
        path = wait_for(lambda: (self.out / f"{name}.env.json").is_file()
                        and self.out / f"{name}.env.json", what=f"{name} to start")
        loaded: dict[str, str] = json.loads(path.read_text())
        return loaded

    def states(self) -> dict[str, str]:
        return {e["run"]: e["state"] for e in q.load_entries(self.folder)}

    def entry(self, name: str) -> dict[str, Any]:
        return next(e for e in q.load_entries(self.folder) if e["run"] == name)


@pytest.fixture
def machine(tmp_path: Path, fake_smi: FakeSmi) -> Iterator[Machine]:  # noqa: F811
    fake_smi.scenario("a100x8")
    m = Machine(tmp_path)
    yield m
    for pid_file in m.runs.glob("*/pid"):  # no run outlives its test
        with contextlib.suppress(OSError, ValueError):
            for pid in process_tree(int(pid_file.read_text())):
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)


def new_queue(m: Machine, fake: FakeSmi) -> q.RunQueue:
    return q.RunQueue(m.folder, lambda: gpu_count(str(fake.exe)))


def tick_until(rq: q.RunQueue, m: Machine, want: dict[str, str]) -> None:
    def done() -> bool:
        rq.tick()
        states = m.states()
        return all(states.get(k) == v for k, v in want.items())
    wait_for(done, what=f"states {want} (now {m.states()})")


def test_two_4_gpu_runs_side_by_side_and_a_third_waits_for_one_to_end(
        machine: Machine, fake_smi: FakeSmi) -> None:  # noqa: F811
    rq = new_queue(machine, fake_smi)
    for name in ("a", "b", "c"):
        machine.add(name, 4)
    rq.tick()
    assert rq.count == 8  # from nvidia-smi -L of the stand-in
    assert machine.states() == {"a": "running", "b": "running", "c": "queued"}
    seen = {name: machine.env(name)["CUDA_VISIBLE_DEVICES"] for name in ("a", "b")}
    assert seen == {"a": "0,1,2,3", "b": "4,5,6,7"}  # what the processes really saw
    assert machine.entry("a")["devices"] == [0, 1, 2, 3]
    assert (machine.runs / "a" / "log").is_file() and (machine.runs / "b" / "log").is_file()
    for _ in range(3):  # it waits, however often the agent looks
        rq.tick()
    assert machine.states()["c"] == "queued"
    assert not (machine.out / "c.env.json").exists()
    machine.release("b", 3)  # b ends first (failing): its GPUs go to c
    tick_until(rq, machine, {"b": "failed", "c": "running"})
    assert machine.env("c")["CUDA_VISIBLE_DEVICES"] == "4,5,6,7"
    assert machine.entry("b")["exit_code"] == 3
    machine.release("a")
    machine.release("c")
    tick_until(rq, machine, {"a": "succeeded", "c": "succeeded"})
    a = machine.entry("a")
    assert a["exit_code"] == 0 and a["started_at"] <= a["ended_at"]
    assert (machine.runs / "a" / "exit_status").read_text().strip() == "0"
    assert not q.busy(machine.folder)


def test_first_in_first_out_a_later_run_never_overtakes_a_waiting_one(
        machine: Machine, fake_smi: FakeSmi) -> None:  # noqa: F811
    rq = new_queue(machine, fake_smi)
    machine.add("first", 4)
    machine.add("big", 8)
    machine.add("small", 2)
    rq.tick()
    # 4 GPUs are free, enough for "small", but "big" came first: strict FIFO, no backfill
    assert machine.states() == {"first": "running", "big": "queued", "small": "queued"}
    machine.release("first")
    tick_until(rq, machine, {"first": "succeeded", "big": "running"})
    assert machine.env("big")["CUDA_VISIBLE_DEVICES"] == "0,1,2,3,4,5,6,7"
    assert machine.states()["small"] == "queued"
    machine.release("big")
    tick_until(rq, machine, {"big": "succeeded", "small": "running"})
    assert machine.env("small")["CUDA_VISIBLE_DEVICES"] == "0,1"
    started = [machine.entry(n)["started_at"] for n in ("first", "big", "small")]
    assert started == sorted(started)
    machine.release("small")
    tick_until(rq, machine, {"small": "succeeded"})


def test_a_run_asking_for_more_gpus_than_the_machine_has_fails_and_does_not_block(
        machine: Machine, fake_smi: FakeSmi) -> None:  # noqa: F811
    rq = new_queue(machine, fake_smi)
    machine.add("huge", 16)
    machine.add("cpu", 0)
    rq.tick()
    huge = machine.entry("huge")
    assert huge["state"] == "failed" and "16 GPU(s)" in huge["reason"] and "has 8" in huge["reason"]
    assert machine.states()["cpu"] == "running"
    assert "CUDA_VISIBLE_DEVICES" not in machine.env("cpu")  # a CPU entry holds no GPU
    machine.release("cpu")
    tick_until(rq, machine, {"cpu": "succeeded"})


def test_cancel_one_queued_one_running_then_all(machine: Machine, fake_smi: FakeSmi) -> None:  # noqa: F811
    rq = new_queue(machine, fake_smi)
    for name in ("r1", "r2", "w1", "w2", "w3"):
        machine.add(name, 4)
    rq.tick()
    assert machine.states() == {"r1": "running", "r2": "running", "w1": "queued",
                                "w2": "queued", "w3": "queued"}
    changed = q.cancel(machine.folder, "w1")
    assert [e["run"] for e in changed] == ["w1"] and machine.states()["w1"] == "cancelled"
    pid = machine.entry("r1")["pid"]
    machine.env("r1")
    q.cancel(machine.folder, "r1")  # as detached.stop: marker, then SIGTERM
    assert (machine.runs / "r1" / "cancelled").is_file()
    tick_until(rq, machine, {"r1": "cancelled", "w2": "running"})
    assert not pid_alive(pid)
    assert machine.entry("r1")["exit_code"] == 128 + signal.SIGTERM
    assert machine.env("w2")["CUDA_VISIBLE_DEVICES"] == "0,1,2,3"  # r1's GPUs, not w1's turn
    changed = q.cancel(machine.folder, "all")
    assert sorted(e["run"] for e in changed) == ["r2", "w2", "w3"]
    assert machine.states()["w3"] == "cancelled"
    tick_until(rq, machine, {"r2": "cancelled", "w2": "cancelled"})
    assert not q.busy(machine.folder)
    assert q.cancel(machine.folder, "all") == []


def test_a_run_whose_processes_vanished_becomes_failed_with_a_reason(
        machine: Machine, fake_smi: FakeSmi) -> None:  # noqa: F811
    """As after a reboot: the pid is gone and no exit status was written."""
    rq = new_queue(machine, fake_smi)
    machine.add("gone", 8)
    machine.add("next", 8)
    rq.tick()
    machine.env("gone")
    tree = process_tree(machine.entry("gone")["pid"])
    for pid in tree:
        os.kill(pid, signal.SIGKILL)
    wait_for(lambda: not any(pid_alive(p) for p in tree), what="the run's end")
    tick_until(rq, machine, {"gone": "failed", "next": "running"})
    gone = machine.entry("gone")
    assert gone["reason"].startswith("lost") and "--resume gone" in gone["reason"]
    assert gone["exit_code"] is None and not (machine.runs / "gone" / "exit_status").exists()
    machine.release("next")
    tick_until(rq, machine, {"next": "succeeded"})


def test_entries_added_while_the_agent_ticks_are_never_lost(
        machine: Machine, fake_smi: FakeSmi) -> None:  # noqa: F811
    """Two processes add 20 CPU-less entries each while this one ticks: all 40 are there,
    each once, in the order each adder added them."""
    adder = textwrap.dedent(f"""
        import sys
        sys.path.insert(0, {str(Path(q.__file__).parent.parent.parent)!r})
        from gpudesk.agent import queue as q
        from pathlib import Path
        for i in range(20):
            q.add_entry(Path(sys.argv[1]), f"{{sys.argv[2]}}-{{i:02d}}", 8,
                        {{"run_dir": "/nonexistent", "argv": ["true"]}})
    """)
    rq = q.RunQueue(machine.folder, lambda: 0)  # no GPU: nothing starts, only the ticks
    procs = [subprocess.Popen([sys.executable, "-c", adder, str(machine.folder), tag])
             for tag in ("x", "y")]
    while any(p.poll() is None for p in procs):
        rq.tick()
    assert [p.returncode for p in procs] == [0, 0]
    entries = q.load_entries(machine.folder)
    assert len(entries) == 40 and len({e["seq"] for e in entries}) == 40
    for tag in ("x", "y"):
        mine = [e["run"] for e in entries if e["run"].startswith(tag)]
        assert mine == [f"{tag}-{i:02d}" for i in range(20)]


def test_the_queue_survives_an_agent_restart_and_still_tracks_its_running_run(
        machine: Machine, fake_smi: FakeSmi, tmp_path: Path) -> None:  # noqa: F811
    """The real agent process runs the queue; it is killed (SIGKILL) and a new one starts
    on the same folders: entries and states are intact, the run that kept running is
    followed to its end, and the one that waited then starts."""
    data = tmp_path / "agent-data"

    def agent() -> subprocess.Popen[bytes]:
        return subprocess.Popen([sys.executable, "-m", "gpudesk.agent", "--dir", str(data),
                                 "--runs-dir", str(machine.runs), "--nvidia-smi",
                                 str(fake_smi.exe), "--sampler", "smi", "--log-level", "ERROR"])

    machine.add("long", 8)
    machine.add("after", 4)
    first = agent()
    try:
        wait_for(lambda: machine.states().get("long") == "running", what="the agent to start it")
        long_pid = machine.entry("long")["pid"]
        assert machine.env("long")["CUDA_VISIBLE_DEVICES"] == "0,1,2,3,4,5,6,7"
        beat = json.loads((machine.folder / q.AGENT_FILE).read_text())
        assert beat["pid"] == first.pid and beat["gpus"] == 8
        assert q.listing(machine.folder)["agent_running"] is True
    finally:
        first.kill()
        first.wait()
    assert q.listing(machine.folder)["agent_running"] is False  # its pid is gone
    assert pid_alive(long_pid), "the run must outlive the agent"
    assert machine.states() == {"long": "running", "after": "queued"}
    second = agent()
    try:
        wait_for(lambda: json.loads((machine.folder / q.AGENT_FILE).read_text())["pid"]
                 == second.pid, what="the new agent's heartbeat")
        assert machine.states() == {"long": "running", "after": "queued"}  # still held
        machine.release("long")
        wait_for(lambda: machine.states() == {"long": "succeeded", "after": "running"},
                 what="the new agent to see the end and start the next")
        assert machine.entry("long")["pid"] == long_pid
        assert machine.env("after")["CUDA_VISIBLE_DEVICES"] == "0,1,2,3"
        machine.release("after")
        wait_for(lambda: machine.states()["after"] == "succeeded", what="the second run")
    finally:
        second.send_signal(signal.SIGTERM)
        assert second.wait(timeout=30) == 0


def test_the_idle_rule_counts_a_queued_entry_as_busy(
        machine: Machine, fake_smi: FakeSmi, sim_clock: SimClock,  # noqa: F811
        tmp_path: Path) -> None:
    """The agent's guard, as the agent builds it: idle GPUs and no live run, but a run
    waits in the queue: not idle, and the idle stop does not fire."""
    rules = parse_rules({"idle": {"below_pct": 5, "minutes": 1, "action": "warn"}})
    agent = Agent(tmp_path / "agent", rules, exe=str(fake_smi.exe), runs_dir=machine.runs,
                  clock=sim_clock)
    guard = agent.guard
    idle = [GpuSample(index=i, uuid=f"GPU-{i}", name="A100", util=0) for i in range(8)]
    guard.observe(idle)
    assert guard.idle_now()  # nothing queued: idle
    machine.add("waiting", 8)
    guard.observe(idle)
    assert not guard.idle_now()  # a queued run is work to come: not idle
    guard.tick()
    sim_clock.advance(120)
    guard.observe(idle)
    assert not any(ev["kind"] == "rule-fired" for ev in guard.tick())
    q.cancel(machine.folder, "waiting")
    guard.observe(idle)
    assert guard.idle_now()
    guard.tick()
    sim_clock.advance(61)
    guard.observe(idle)
    assert [ev["rule"] for ev in guard.tick() if ev["kind"] == "rule-fired"] == ["idle"]
    agent.writer.close()
