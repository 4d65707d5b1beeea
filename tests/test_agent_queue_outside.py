"""A run started outside the queue (``gpudesk run``, the window's Run) makes the machine's
queue wait, CPU runs too (issue 31): the queued run starts only once the direct run has
ended. Real launcher, real detached processes, stand-in nvidia-smi with 8 GPUs."""
# ruff: noqa: F811 - fixtures imported from other test modules arrive as parameters

from __future__ import annotations

import json
import subprocess
import sys

from fixtures_agent import FakeSmi  # noqa: F401
from fixtures_agent import fake_smi  # noqa: F401
from fixtures_agent import wait_for  # noqa: F401
from test_agent_queue import Machine  # noqa: F401
from test_agent_queue import machine  # noqa: F401
from test_agent_queue import new_queue  # noqa: F401

from gpudesk.agent import queue as q


def _start_directly(m: Machine, name: str) -> int:
    """Start ``name`` as ``detached.launch`` does: the run launcher, not the queue."""
    spec = {"run_dir": str(m.runs / name), "cwd": str(m.out),
            "argv": [sys.executable, str(m.job), str(m.out), name], "env": {}}
    proc = subprocess.run([sys.executable, "-I", "-S", str(m.folder / q.LAUNCHER), "start"],
                          input=json.dumps(spec).encode(), capture_output=True, timeout=60,
                          check=True)
    return int(json.loads(proc.stdout)["pid"])


def test_a_queued_cpu_run_waits_for_a_run_started_directly(
        machine: Machine, fake_smi: FakeSmi) -> None:
    _start_directly(machine, "direct")
    machine.env("direct")  # it trains
    assert q.outside_runs(machine.runs, set()) == ["direct"]
    machine.add("queued-cpu", 0)
    rq = new_queue(machine, fake_smi)
    rq.tick()
    rq.tick()
    assert machine.states() == {"queued-cpu": "queued"}  # the direct run still trains
    assert not (machine.runs / "queued-cpu").exists()
    machine.release("direct")
    wait_for(lambda: (machine.runs / "direct" / "exit_status").is_file(),
             what="the direct run to end")

    def started() -> bool:
        rq.tick()
        return machine.states()["queued-cpu"] == "running"
    wait_for(started, what="the queued run to start")
    assert q.outside_runs(machine.runs, {"queued-cpu"}) == []
    machine.release("queued-cpu")

    def ended() -> bool:
        rq.tick()
        return machine.states()["queued-cpu"] == "succeeded"
    wait_for(ended, what="the queued run to end")
