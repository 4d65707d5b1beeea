"""Idle stop and budget stop on a simulated clock; the action is a command writing a file."""

# ruff: noqa: F811 - pytest fixtures imported from fixtures_agent arrive as parameters
from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path

import pytest
from fixtures_agent import pid_gone  # noqa: F401
from fixtures_agent import sim_clock  # noqa: F401
from fixtures_agent import wait_for  # noqa: F401

from gpudesk.agent.clock import SimClock
from gpudesk.agent.events import EventLog
from gpudesk.agent.events import read_events
from gpudesk.agent.guard import GONE_WAIT_S
from gpudesk.agent.guard import Guard
from gpudesk.agent.rules import DEFAULT_POWEROFF
from gpudesk.agent.rules import Rules
from gpudesk.agent.rules import RulesError
from gpudesk.agent.rules import parse_rules
from gpudesk.agent.runs import active_runs
from gpudesk.agent.smi import GpuSample

T0 = 1_700_000_000.0


def action_cmd(out: Path) -> list[str]:
    """A harmless action: append the rule and action names to ``out``."""
    code = ("import os, sys; open(sys.argv[1], 'a').write("
            "os.environ['GPUDESK_RULE'] + ' ' + os.environ['GPUDESK_ACTION'] + '\\n')")
    return [sys.executable, "-c", code, str(out)]


def gpus(*utils: float | None) -> list[GpuSample]:
    return [GpuSample(index=i, uuid=f"GPU-{i}", util=u) for i, u in enumerate(utils)]


def make_guard(tmp_path: Path, clock: SimClock, rules: Mapping[str, object],
               boot: str = "boot-1") -> tuple[Guard, Path]:
    out = tmp_path / "actions-ran.txt"
    data = dict(rules)
    data.setdefault("commands", {"stop": action_cmd(out), "terminate": action_cmd(out)})
    agent = tmp_path / "agent"
    guard = Guard(parse_rules(data), EventLog(agent, clock), runs_dir=tmp_path / "runs",
                  log_dir=agent, clock=clock, boot=boot)
    return guard, out


def kinds(tmp_path: Path) -> list[str]:
    return [e["kind"] for e in read_events(tmp_path / "agent")]


def run_seconds(guard: Guard, clock: SimClock, seconds: int,
                sample: list[GpuSample]) -> int | None:
    """Tick once a second with ``sample``; the second at which a rule fired, if any."""
    fired_at = None
    for s in range(seconds):
        if s:
            clock.advance(1)
        guard.observe(sample)
        if any(e["kind"] == "rule-fired" for e in guard.tick()) and fired_at is None:
            fired_at = s
    return fired_at


IDLE = {"idle": {"below_pct": 5, "minutes": 2, "action": "stop"}}


def test_idle_stop_fires_after_exactly_n_minutes(tmp_path: Path, sim_clock: SimClock) -> None:
    guard, out = make_guard(tmp_path, sim_clock, IDLE)
    assert run_seconds(guard, sim_clock, 120, gpus(0, 4.9)) is None
    assert not out.exists()
    sim_clock.advance(1)  # second 120 since the first idle reading
    guard.observe(gpus(0, 4.9))
    events = guard.tick()
    assert [e["kind"] for e in events] == ["rule-fired", "action-run"]
    assert events[0]["idle_s"] == 120.0 and events[0]["action"] == "stop"
    assert events[1]["rc"] == 0
    assert out.read_text() == "idle stop\n"
    # never twice while the machine goes down: GONE_WAIT_S more idleness runs nothing
    assert run_seconds(guard, sim_clock, int(GONE_WAIT_S), gpus(0, 0)) is None
    assert out.read_text() == "idle stop\n"
    assert kinds(tmp_path).count("rule-fired") == 1
    # still up GONE_WAIT_S after a "successful" stop: it did not take, so it runs again
    sim_clock.advance(1)
    guard.observe(gpus(0, 0))
    assert [(e["kind"], e.get("attempt")) for e in guard.tick()] == [
        ("action-no-effect", None), ("action-run", 2)]
    assert out.read_text() == "idle stop\nidle stop\n"
    assert kinds(tmp_path).count("rule-fired") == 1


def test_one_busy_gpu_keeps_the_machine(tmp_path: Path, sim_clock: SimClock) -> None:
    guard, out = make_guard(tmp_path, sim_clock, IDLE)
    assert run_seconds(guard, sim_clock, 3600, gpus(0, 0, 0, 0, 0, 0, 0, 50)) is None
    assert not out.exists()


def test_a_busy_moment_restarts_the_idle_count(tmp_path: Path, sim_clock: SimClock) -> None:
    guard, _ = make_guard(tmp_path, sim_clock, IDLE)
    assert run_seconds(guard, sim_clock, 100, gpus(0)) is None
    sim_clock.advance(1)
    guard.observe(gpus(80))
    guard.tick()
    sim_clock.advance(1)
    assert run_seconds(guard, sim_clock, 121, gpus(0)) == 120


def test_unknown_utilisation_and_stale_samples_are_not_idle(tmp_path: Path,
                                                           sim_clock: SimClock) -> None:
    guard, out = make_guard(tmp_path, sim_clock, IDLE)
    assert run_seconds(guard, sim_clock, 600, gpus(None, 0)) is None  # MIG: util [N/A]
    assert run_seconds(guard, sim_clock, 600, []) is None  # no GPU read at all
    guard.observe(gpus(0))  # then nvidia-smi stops answering
    for _ in range(600):
        sim_clock.advance(1)
        assert guard.tick() == []
    assert not out.exists()


def test_an_active_run_keeps_the_machine(tmp_path: Path, sim_clock: SimClock) -> None:
    guard, out = make_guard(tmp_path, sim_clock, IDLE)
    run = tmp_path / "runs" / "run-1"
    run.mkdir(parents=True)
    proc = subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.read()"],
                            stdin=subprocess.PIPE)
    try:
        (run / "pid").write_text(f"{proc.pid}\n")
        assert [r.pid for r in active_runs(tmp_path / "runs")] == [proc.pid]
        assert run_seconds(guard, sim_clock, 600, gpus(0)) is None
    finally:
        assert proc.stdin is not None
        proc.stdin.close()
        proc.wait(timeout=30)
    wait_for(lambda: pid_gone(proc.pid), what="the run to end")
    assert active_runs(tmp_path / "runs") == []
    assert run_seconds(guard, sim_clock, 121, gpus(0)) == 120
    assert out.read_text() == "idle stop\n"


def test_stale_pid_files_do_not_count(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    for name, text in [("a", "999999999\n"), ("b", "garbage"), ("c", "")]:
        (runs / name).mkdir(parents=True)
        (runs / name / "pid").write_text(text)
    (runs / "d").mkdir()  # no pid file yet
    assert active_runs(runs) == []
    assert active_runs(tmp_path / "missing") == []


def test_a_restarted_agent_does_not_fire_again_but_a_new_boot_does(
        tmp_path: Path, sim_clock: SimClock) -> None:
    guard, out = make_guard(tmp_path, sim_clock, IDLE)
    assert run_seconds(guard, sim_clock, 121, gpus(0)) == 120
    again, _ = make_guard(tmp_path, sim_clock, IDLE)
    assert run_seconds(again, sim_clock, int(GONE_WAIT_S), gpus(0)) is None
    rebooted, _ = make_guard(tmp_path, sim_clock, IDLE, boot="boot-2")
    assert run_seconds(rebooted, sim_clock, 121, gpus(0)) == 120
    assert out.read_text() == "idle stop\nidle stop\n"


def budget(**kw: object) -> dict[str, object]:
    rule: dict[str, object] = {"cap": 10.0, "price_per_hour": 6.0, "since": T0,
                               "spent_before": 1.0, "action": "terminate"}
    rule.update(kw)
    return {"budget": rule}


def test_budget_thresholds_once_each_then_the_action(tmp_path: Path,
                                                     sim_clock: SimClock) -> None:
    # spend = 1 + 6 USD/h × hours: 5 USD (50 %) at 40 min, 8 (80 %) at 70 min, 10 at 90 min
    guard, out = make_guard(tmp_path, sim_clock, budget())
    seen: list[tuple[float, str, object]] = []
    for minute in range(0, 95):
        for e in guard.tick():
            seen.append((minute, e["kind"], e.get("pct", e.get("rc"))))
        sim_clock.advance(60)
    assert seen == [(40, "budget-threshold", 50.0), (70, "budget-threshold", 80.0),
                    (90, "budget-threshold", 100.0), (90, "rule-fired", None),
                    (90, "action-run", 0)]
    assert out.read_text() == "budget terminate\n"
    sim_clock.advance(60 * 86)  # minute 180
    fired = [e for e in read_events(tmp_path / "agent") if e["kind"] == "rule-fired"][0]
    assert fired["spend"] == pytest.approx(10.0) and fired["cap"] == 10.0
    # restarting the agent, or the app rewriting the spend bookkeeping, repeats nothing
    again, _ = make_guard(tmp_path, sim_clock, budget(spent_before=2.0, price_per_hour=7.0,
                                                      since=T0 + 3600))
    assert again.tick() == []
    # a raised cap is a new budget: its thresholds count afresh
    raised, _ = make_guard(tmp_path, sim_clock, budget(cap=40.0))
    assert [e.get("pct") for e in raised.tick()] == []
    sim_clock.advance(3600 * 2)
    assert [e.get("pct") for e in raised.tick()] == [50.0]


def test_a_late_start_records_every_crossed_threshold_in_order(
        tmp_path: Path, sim_clock: SimClock) -> None:
    guard, out = make_guard(tmp_path, sim_clock, budget(spent_before=12.0))
    events = guard.tick()
    assert [(e["kind"], e.get("pct")) for e in events] == [
        ("budget-threshold", 50.0), ("budget-threshold", 80.0), ("budget-threshold", 100.0),
        ("rule-fired", None), ("action-run", None)]
    assert guard.tick() == []
    assert out.read_text() == "budget terminate\n"


def test_warn_records_without_running_anything_unless_told(tmp_path: Path,
                                                           sim_clock: SimClock) -> None:
    guard, out = make_guard(tmp_path, sim_clock, budget(spent_before=10.0, action="warn"))
    assert [e["kind"] for e in guard.tick()][-1] == "rule-fired"
    assert not out.exists()
    told, out2 = make_guard(tmp_path / "b", sim_clock, {
        **budget(spent_before=10.0, action="warn"),
        "commands": {"warn": action_cmd(tmp_path / "warned.txt")}})
    assert [e["kind"] for e in told.tick()][-2:] == ["rule-fired", "action-run"]
    assert (tmp_path / "warned.txt").read_text() == "budget warn\n"


def test_a_failing_action_is_recorded(tmp_path: Path, sim_clock: SimClock) -> None:
    guard, _ = make_guard(tmp_path, sim_clock, {
        **budget(spent_before=10.0), "commands": {"terminate": [str(tmp_path / "nope")]}})
    events = guard.tick()
    assert events[-1]["kind"] == "action-failed"
    assert "FileNotFoundError" in events[-1]["error"]
    exit3, _ = make_guard(tmp_path / "c", sim_clock, {
        **budget(spent_before=10.0),
        "commands": {"terminate": [sys.executable, "-c", "raise SystemExit(3)"]}})
    assert exit3.tick()[-1]["rc"] == 3


def test_the_event_reaches_the_action_command(tmp_path: Path, sim_clock: SimClock) -> None:
    code = "import os, sys; open(sys.argv[1], 'w').write(os.environ['GPUDESK_EVENT'])"
    out = tmp_path / "event.json"
    guard, _ = make_guard(tmp_path, sim_clock, {
        **budget(spent_before=10.5), "commands": {"terminate": [sys.executable, "-c", code,
                                                                str(out)]}})
    guard.tick()
    event = json.loads(out.read_text())
    assert (event["kind"], event["rule"], event["spend"]) == ("rule-fired", "budget", 10.5)


@pytest.mark.parametrize(("rules", "field"), [
    ({"idle": {"minutes": 0}}, "idle.minutes"),
    ({"idle": {"minutes": 5, "below_pct": 150}}, "idle.below_pct"),
    ({"idle": {"minutes": 5, "action": "reboot"}}, "idle.action"),
    ({"budget": {"cap": -1, "price_per_hour": 1, "since": T0}}, "budget.cap"),
    ({"budget": {"cap": 5, "price_per_hour": "1", "since": T0}}, "budget.price_per_hour"),
    ({"budget": {"cap": 5, "price_per_hour": 1}}, "budget.since"),
    ({"budget": {"cap": 5, "price_per_hour": 1, "since": T0, "thresholds": [0]}},
     "budget.thresholds"),
    ({"commands": {"stop": "shutdown -h now"}}, "commands.stop"),
    ({"spot": {"provider": "gcp"}}, "spot.provider"),
    ({"idle": [1]}, "idle"),
])
def test_invalid_rules_name_the_field(rules: dict[str, object], field: str) -> None:
    with pytest.raises(RulesError, match=field.replace(".", r"\.")):
        parse_rules(rules)


def test_defaults_and_rule_identity() -> None:
    r = parse_rules({"idle": {"minutes": 30}, **budget()})
    assert r.idle is not None and (r.idle.below_pct, r.idle.action) == (5.0, "stop")
    assert r.command("stop") == DEFAULT_POWEROFF and r.command("warn") == ()
    assert r.spot.provider == "none" and Rules().idle is None
    same = parse_rules(budget(spent_before=3.0, since=T0 + 60, price_per_hour=9.0))
    other = parse_rules(budget(cap=11.0))
    assert r.budget is not None and same.budget is not None and other.budget is not None
    assert r.budget.id == same.budget.id != other.budget.id
    assert parse_rules(budget(id="monthly-2024-05")).budget.id == "monthly-2024-05"  # type: ignore[union-attr]
    aws = parse_rules({"spot": {"provider": "aws"}}).spot
    assert (aws.base_url, aws.every_s) == ("http://169.254.169.254", 5.0)
