"""A supervised guard (issue 21, items 5 and 6).

One systemd unit runs the machine's guard from first boot to terminate
(``Restart=always``); the deploy step upgrades it in place through the service
manager; a kill -9, an OOM kill, a SIGTERM and a reboot each bring it back with the
spend it had; the spend counts billable (machine up) seconds only, so a stop and a
start do not count the stopped hours; a failed power action is tried again with
backoff and only a success marks the rule done.

The machine is the real sshd fixture (this machine); systemd is
``tests/service_manager_standin.py``, a supervisor that does what the unit file says;
the power action is a command that writes a file.
"""
# ruff: noqa: F811 - fixtures imported from fixtures_* arrive as parameters

from __future__ import annotations

import getpass
import json
import os
import shlex
import signal
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fixtures_agent import pid_gone  # noqa: F401
from fixtures_agent import sim_clock  # noqa: F401
from fixtures_agent import wait_for  # noqa: F401
from fixtures_sshd import SshdServer  # noqa: F401
from fixtures_sshd import sshd  # noqa: F401
from fixtures_telemetry import PYTHON
from fixtures_telemetry import connect
from service_manager_standin import StandinSystemd
from service_manager_standin import parse_unit

from gpudesk.agent.clock import SimClock
from gpudesk.agent.events import EventLog
from gpudesk.agent.events import read_events
from gpudesk.agent.guard import GONE_WAIT_S
from gpudesk.agent.guard import RETRY_MAX_S
from gpudesk.agent.guard import RETRY_S
from gpudesk.agent.guard import SPEND_FILE
from gpudesk.agent.guard import Guard
from gpudesk.agent.rules import parse_rules
from gpudesk.services.remote import agent_deploy
from gpudesk.services.remote import first_boot
from gpudesk.services.remote.agent_deploy import UNIT
from gpudesk.services.remote.agent_deploy import AgentRules
from gpudesk.services.remote.agent_deploy import BudgetStop
from gpudesk.services.remote.agent_deploy import ServiceManager
from gpudesk.services.remote.agent_deploy import unit_template

WAIT_S = 60.0
BACK_S = 30.0  # the promise: a dead guard is back within this
T0 = 1_700_000_000.0


# --------------------------------------------------------------------------- the unit

def test_the_unit_restarts_the_guard_whatever_its_exit_and_runs_current() -> None:
    conf = parse_unit(unit_template())
    assert conf["Restart"] == "always"  # a SIGTERM'd guard exits 0: on-failure did nothing
    assert float(conf["RestartSec"]) <= 5
    assert conf["StartLimitIntervalSec"] == "0"  # systemd's default gives up after 5 starts
    assert conf["ExecStart"] == ("@PY@ @BASE@/current/agent --dir @BASE@/data "
                                 "--rules @BASE@/rules.json")
    assert conf["User"] == "@USER@" and conf["WantedBy"] == "multi-user.target"
    assert "RestartPreventExitStatus" not in conf
    # the first-boot bundle carries this very text and the script installs it
    files = first_boot.bundle_files(first_boot.boot_bundle())
    assert files[f"{UNIT}.in"] == unit_template()
    assert {"boot.py", "guard.py", "rules.py", "__main__.py"} <= set(files)
    text = first_boot.script(AgentRules(), user="ubuntu")
    assert f'"$ROOT/agent/boot/agent/{UNIT}.in" >"$UNIT_DIR/{UNIT}"' in text
    assert f"$SYSTEMCTL enable --now {UNIT}" in text


# --------------------------------------------------------------------------- a machine

def _rules(flag: Path, *, cap: float = 100.0, spent_s: float = 100.0) -> AgentRules:
    write = f"open({str(flag)!r}, 'a').write(__import__('os').environ['GPUDESK_ACTION'])"
    return AgentRules(
        budget=BudgetStop(cap=cap, price_per_hour=3.6, since=time.time() - spent_s,
                          action="terminate"),
        commands={"terminate": (PYTHON, "-c", write), "stop": (PYTHON, "-c", write)})


class Machine:
    """The sshd machine with the stand-in systemd, a home and the first-boot script."""

    def __init__(self, server: SshdServer, tmp: Path) -> None:
        self.server = server
        self.systemd = StandinSystemd.install(tmp / "systemd")
        self.home = tmp / "home"
        self.home.mkdir()
        self.state = tmp / "state"
        self.base = self.home / "gpudesk" / "agent"
        self.data = self.base / "data"

    def first_boot(self, rules: AgentRules, user_systemctl: str = "") -> None:
        text = first_boot.script(rules, user=getpass.getuser())
        env = {"GPUDESK_BOOT_HOME": self.home, "GPUDESK_BOOT_UNIT_DIR": self.systemd.unit_dir,
               "GPUDESK_BOOT_SYSTEMCTL": self.systemd.systemctl,
               "GPUDESK_BOOT_USER_SYSTEMCTL": user_systemctl or self.systemd.systemctl,
               "GPUDESK_BOOT_PYTHON": PYTHON, "GPUDESK_BOOT_STATE_DIR": self.state}
        command = "env " + " ".join(f"{k}={shlex.quote(str(v))}" for k, v in env.items()) + \
            " bash -s"
        with connect(self.server) as conn:  # cloud-init's part, run as root would
            done = conn.exec(command, input=text.encode(), timeout=WAIT_S)
        assert done.ok, done.stderr.decode(errors="replace")

    def running(self) -> dict[str, Any]:
        """agent.code of the live agent the unit runs ({} while there is none)."""
        main = self.systemd.main_pid(UNIT)
        try:
            info = json.loads((self.data / "agent.code").read_text())
        except (OSError, ValueError):
            return {}
        return info if main and info.get("pid") == main else {}

    def spend(self) -> dict[str, Any]:
        try:
            return json.loads((self.data / SPEND_FILE).read_text())  # type: ignore[no-any-return]
        except (OSError, ValueError):
            return {}

    def events(self) -> list[dict[str, Any]]:
        return read_events(self.data)

    def cleanup(self) -> None:
        pids = [self.running().get("pid", 0)]
        self.systemd.shutdown(UNIT)
        for pid in pids:
            if pid and not pid_gone(pid):
                os.kill(pid, signal.SIGKILL)


@pytest.fixture
def machine(sshd: SshdServer, tmp_path: Path) -> Iterator[Machine]:
    m = Machine(sshd, tmp_path)
    try:
        yield m
    finally:
        m.cleanup()


def test_first_boot_and_deploy_install_the_same_unit_through_the_service_manager(
        machine: Machine, sshd: SshdServer, tmp_path: Path) -> None:
    machine.first_boot(_rules(tmp_path / "power"))
    systemd = machine.systemd
    assert systemd.calls() == ["daemon-reload", f"enable --now {UNIT}"]
    unit = (systemd.unit_dir / UNIT).read_text()
    filled = (unit_template().replace("@USER@", getpass.getuser()).replace("@PY@", PYTHON)
              .replace("@BASE@", str(machine.base)))
    assert unit == filled
    boot = wait_for(lambda: machine.running(), WAIT_S, "the boot guard under the unit")
    assert boot["code"] == str((machine.base / "boot" / "agent").resolve())

    # Watch: the deploy upgrades the unit's code and restarts it through the manager
    with connect(sshd) as conn:
        site = agent_deploy.deploy(conn, None, root=str(machine.home / "gpudesk"),
                                   python=PYTHON)
    assert (site.supervisor, site.replaced, site.started) == ("systemd", True, True)
    assert systemd.calls()[2:] == [f"restart {UNIT}"]  # the same unit: no reinstall
    assert (systemd.unit_dir / UNIT).read_text() == unit
    full = machine.running()
    assert full["pid"] == site.pid != boot["pid"] and pid_gone(boot["pid"])
    assert full["code"] == str(Path(site.entry).resolve())
    assert os.readlink(machine.base / "current") == Path(site.entry).parent.name
    exits = [e for e in systemd.events(UNIT) if e["event"] == "exit"]
    assert [(e["pid"], e["asked"]) for e in exits] == [(boot["pid"], True)]  # not killed
    with connect(sshd) as conn:  # deploying again changes nothing
        again = agent_deploy.deploy(conn, None, root=str(machine.home / "gpudesk"),
                                    python=PYTHON)
    assert (again.pid, again.started, again.replaced) == (site.pid, False, False)
    assert systemd.calls()[3:] == []

    # a machine gpudesk did not launch, deploy asked to supervise it: the same unit text
    other = StandinSystemd.install(tmp_path / "systemd-2")
    root2 = tmp_path / "home-2" / "gpudesk"
    try:
        with connect(sshd) as conn:
            own = agent_deploy.deploy(
                conn, None, root=str(root2), python=PYTHON, install_unit=True,
                service=ServiceManager(systemctl=shlex.quote(str(other.systemctl)),
                                       unit_dir=str(other.unit_dir)))
        assert own.supervisor == "systemd" and own.started
        assert other.calls() == ["daemon-reload", f"enable {UNIT}", f"restart {UNIT}"]
        assert (other.unit_dir / UNIT).read_text() == filled.replace(
            str(machine.base), str(root2 / "agent"))
        assert json.loads((root2 / "agent" / "service.json").read_text())["systemctl"] == \
            shlex.quote(str(other.systemctl))
        # "Stop agent" on such a machine stops the unit: a killed process would come back
        with connect(sshd) as conn:
            assert agent_deploy.stop_agent(conn, own.data_dir)
        assert other.calls()[3:] == [f"stop {UNIT}", f"disable {UNIT}"]
        assert other.supervisor_pid(UNIT) == 0 and pid_gone(own.pid)
    finally:
        other.shutdown(UNIT)


def test_without_sudo_the_deploy_lets_the_unit_restart_the_new_code(
        machine: Machine, sshd: SshdServer, tmp_path: Path) -> None:
    """The login user cannot reach the service manager (sudo wants a password: here the
    command fails): the deploy ends the old code and the unit starts ``current`` again."""
    machine.first_boot(_rules(tmp_path / "power"), user_systemctl="false")
    boot = wait_for(machine.running, WAIT_S, "the boot guard")
    with connect(sshd) as conn:
        site = agent_deploy.deploy(conn, None, root=str(machine.home / "gpudesk"),
                                   python=PYTHON)
    assert site.supervisor == "systemd" and "restarted by its unit" in site.supervisor_note
    assert machine.running()["code"] == str(Path(site.entry).resolve())
    exits = [e for e in machine.systemd.events(UNIT) if e["event"] == "exit"]
    assert [(e["pid"], e["rc"], e["asked"]) for e in exits] == [(boot["pid"], 0, False)]


def test_an_own_machine_without_the_unit_says_nothing_supervises_it(
        sshd: SshdServer, tmp_path: Path) -> None:
    root = tmp_path / "own" / "gpudesk"
    with connect(sshd) as conn:
        site = agent_deploy.deploy(conn, None, root=str(root), python=PYTHON)
    try:
        assert site.supervisor == "none" and site.started
        assert "no gpudesk unit" in site.supervisor_note
    finally:
        if site.pid and not pid_gone(site.pid):
            os.kill(site.pid, signal.SIGTERM)
            wait_for(lambda: pid_gone(site.pid), WAIT_S, "the agent to stop")


def _kill_and_come_back(machine: Machine, sig: int) -> float:
    """Kill the unit's agent with ``sig``; seconds until the unit runs a new one."""
    before = wait_for(machine.running, WAIT_S, "the agent")
    spent = wait_for(lambda: machine.spend().get("billable_s"), WAIT_S, "spend.json")
    start = time.monotonic()
    os.kill(before["pid"], sig)
    after = wait_for(lambda: (r := machine.running()) and r["pid"] != before["pid"] and r,
                     BACK_S, "the unit to bring the agent back")
    back = time.monotonic() - start
    assert after["code"] == before["code"]
    # the new agent goes on from the file: nothing lost, nothing counted twice
    # (the agents read this machine's monotonic clock, as the test does)
    resumed = wait_for(lambda: (s := machine.spend()).get("mono", 0) > start and s, WAIT_S,
                       "a count by the new agent")
    assert resumed["billable_s"] >= spent
    assert resumed["billable_s"] <= spent + (time.monotonic() - start) + 2.0
    return back


def test_kill_9_sigterm_oom_and_a_reboot_bring_the_guard_back_with_its_spend(
        machine: Machine, sshd: SshdServer, tmp_path: Path) -> None:
    machine.first_boot(_rules(tmp_path / "power", spent_s=1000.0))
    with connect(sshd) as conn:
        agent_deploy.deploy(conn, None, root=str(machine.home / "gpudesk"), python=PYTHON)
    sshd.stop()  # no desktop from here on
    wait_for(lambda: machine.spend().get("billable_s", 0) >= 1000.0, WAIT_S, "the spend")

    for sig in (signal.SIGKILL,  # kill -9
                signal.SIGTERM,  # pkill python: exits 0, which Restart=on-failure ignored
                signal.SIGKILL):  # the kernel's OOM killer sends SIGKILL
        assert _kill_and_come_back(machine, sig) < BACK_S

    # a reboot: power gone for supervisor and agent at once, then systemd starts the
    # enabled unit at boot
    before = machine.running()
    spent = machine.spend()["billable_s"]
    start = time.monotonic()
    machine.systemd.power_loss(UNIT)
    assert machine.systemd.ctl("boot") == 0
    after = wait_for(lambda: (r := machine.running()) and r["pid"] != before["pid"] and r,
                     BACK_S, "the guard after the reboot")
    assert time.monotonic() - start < BACK_S and after["code"] == before["code"]
    resumed = wait_for(lambda: (s := machine.spend()).get("mono", 0) > start and s, WAIT_S,
                       "a count after the reboot")
    assert spent <= resumed["billable_s"] <= spent + (time.monotonic() - start) + 2.0
    kinds = [e["kind"] for e in machine.events()]
    assert kinds.count("agent-start") == 5 and "rule-fired" not in kinds
    assert not (tmp_path / "power").exists()


def test_the_unit_brings_the_first_boot_guard_back_and_it_acts_at_the_cap(
        machine: Machine, sshd: SshdServer, tmp_path: Path) -> None:
    """No Watch ever: the boot guard itself is supervised, and a SIGTERM'd (exit 0) guard
    comes back and still terminates the machine at its budget."""
    flag = tmp_path / "power"
    machine.first_boot(_rules(flag, cap=10.0, spent_s=9_992.0))  # 8 s before the cap
    sshd.stop()
    first = wait_for(machine.running, WAIT_S, "the boot guard")
    os.kill(first["pid"], signal.SIGTERM)
    wait_for(lambda: (r := machine.running()) and r["pid"] != first["pid"], BACK_S,
             "the boot guard back")
    wait_for(lambda: flag.exists() and flag.read_text() == "terminate", WAIT_S,
             "the budget action")
    exits = [e for e in machine.systemd.events(UNIT) if e["event"] == "exit"]
    assert exits[0]["pid"] == first["pid"] and exits[0]["rc"] == 0


# --------------------------------------------------------------------------- the spend

def action_cmd(out: Path, fail_first: int = 0) -> list[str]:
    """Appends the action to ``out``; fails (exit 1) on its first ``fail_first`` runs."""
    code = ("import os, sys; n = len(open(sys.argv[1]).read().split()) if os.path.exists("
            "sys.argv[1]) else 0; open(sys.argv[1], 'a').write(os.environ['GPUDESK_ACTION'] +"
            " '\\n'); sys.exit(1 if n < int(sys.argv[2]) else 0)")
    return [sys.executable, "-c", code, str(out), str(fail_first)]


def make_guard(tmp_path: Path, clock: SimClock, boot: str = "boot-1", since_boot: float = 0.0,
               fail_first: int = 0, **budget: object) -> Guard:
    rule: dict[str, object] = {"cap": 10.0, "price_per_hour": 6.0, "since": T0,
                               "spent_before": 1.0, "action": "terminate"}
    rule.update(budget)
    rules = parse_rules({"budget": rule, "commands": {
        "terminate": action_cmd(tmp_path / "power", fail_first)}})
    agent = tmp_path / "agent"
    return Guard(rules, EventLog(agent, clock), runs_dir=tmp_path / "runs", log_dir=agent,
                 clock=clock, boot=boot, since_boot=lambda: since_boot)


def tick_for(guard: Guard, clock: SimClock, seconds: int, every: int = 60) -> list[dict]:  # type: ignore[type-arg]
    events = []
    for _ in range(0, seconds, every):
        events += guard.tick()
        clock.advance(every)
    return events


def spend_file(tmp_path: Path) -> dict[str, Any]:
    return json.loads((tmp_path / "agent" / SPEND_FILE).read_text())  # type: ignore[no-any-return]


def test_a_stop_and_start_does_not_count_the_stopped_hours(tmp_path: Path,
                                                          sim_clock: SimClock) -> None:
    # $1 before + $6/h: the $10 cap is 1.5 billable hours away
    guard = make_guard(tmp_path, sim_clock)
    assert [e["pct"] for e in tick_for(guard, sim_clock, 3600)] == [50.0]  # $7 after 1 h
    assert spend_file(tmp_path)["billable_s"] == 3540.0  # the last tick was at 59 min
    sim_clock.advance(10 * 3600)  # stopped for ten hours (wall time goes on)
    # started again: a new boot, the agent up 40 s after it
    started = make_guard(tmp_path, sim_clock, boot="boot-2", since_boot=40.0)
    assert [e["kind"] for e in started.tick()] == []  # wall time since `since`: 11 h, $67
    assert spend_file(tmp_path)["billable_s"] == 3580.0
    assert not (tmp_path / "power").exists()
    fired = [e for e in tick_for(started, sim_clock, 1861, every=1)
             if e["kind"] == "rule-fired"]
    assert len(fired) == 1 and fired[0]["billable_s"] == 5400.0  # 1.5 billable hours
    assert (tmp_path / "power").read_text() == "terminate\n"


def test_a_killed_agent_resumes_the_spend_from_the_file(tmp_path: Path,
                                                        sim_clock: SimClock) -> None:
    guard = make_guard(tmp_path, sim_clock)
    tick_for(guard, sim_clock, 600)
    assert spend_file(tmp_path)["billable_s"] == 540.0
    sim_clock.advance(20)  # kill -9; the unit starts a new agent 80 s after the last count
    again = make_guard(tmp_path, sim_clock)  # same boot: the machine was up (billed) all along
    again.tick()
    assert spend_file(tmp_path)["billable_s"] == 620.0
    # the app writes a new anchor (what its ledger says at `since`): counted from there
    fresh = make_guard(tmp_path, sim_clock, since=sim_clock.time() - 30, spent_before=4.0)
    fresh.tick()
    assert spend_file(tmp_path)["billable_s"] == 30.0
    assert spend_file(tmp_path)["anchor"] == [sim_clock.time() - 30, 4.0]


def test_a_failed_action_is_retried_with_backoff_and_marked_done_only_on_success(
        tmp_path: Path, sim_clock: SimClock) -> None:
    guard = make_guard(tmp_path, sim_clock, fail_first=3, spent_before=10.0)
    key = f"budget:{guard.rules.budget.id}:boot-1"  # type: ignore[union-attr]
    runs: list[tuple[float, str, object, object]] = []
    start = sim_clock.monotonic()
    for _ in range(200):
        for e in guard.tick():
            if e["kind"] != "budget-threshold":
                runs.append((sim_clock.monotonic() - start, e["kind"], e.get("rc"),
                             e.get("attempt")))
        if guard.events.has(key):
            break
        sim_clock.advance(1)
    # 15 s, then 30 s, then 60 s apart; only the fourth try succeeded
    assert runs[1:] == [(0.0, "action-run", 1, 1), (15.0, "action-run", 1, 2),
                        (45.0, "action-run", 1, 3), (105.0, "action-run", 0, 4)]
    assert runs[0][1] == "rule-fired" and RETRY_S == 15.0 and RETRY_MAX_S >= 60
    marks = [e for e in read_events(tmp_path / "agent") if e.get("key") == key]
    assert [(e["kind"], e["rc"]) for e in marks] == [("action-run", 0)]
    # a restart after success on the same boot does not run it again at once ...
    again = make_guard(tmp_path, sim_clock, fail_first=3, spent_before=10.0)
    assert again.tick() == []
    # ... but a machine still up GONE_WAIT_S later was not stopped: try again
    sim_clock.advance(GONE_WAIT_S)
    assert [e["kind"] for e in again.tick()] == ["action-no-effect", "action-run"]


def test_a_failure_before_a_restart_is_tried_again_by_the_new_agent(
        tmp_path: Path, sim_clock: SimClock) -> None:
    guard = make_guard(tmp_path, sim_clock, fail_first=1, spent_before=10.0)
    assert [(e["kind"], e.get("rc")) for e in guard.tick()] == [
        ("budget-threshold", None), ("budget-threshold", None), ("budget-threshold", None),
        ("rule-fired", None), ("action-run", 1)]
    again = make_guard(tmp_path, sim_clock, fail_first=1, spent_before=10.0)  # kill -9
    assert [(e["kind"], e.get("rc")) for e in again.tick()] == [("rule-fired", None),
                                                                 ("action-run", 0)]
    missing = make_guard(tmp_path / "b", sim_clock, spent_before=10.0)
    missing.rules = parse_rules({"budget": {"cap": 10.0, "price_per_hour": 6.0, "since": T0,
                                            "spent_before": 10.0, "action": "terminate"},
                                 "commands": {"terminate": [str(tmp_path / "nope")]}})
    failed = [e for e in missing.tick() if e["kind"] == "action-failed"]
    assert failed[0]["attempt"] == 1 and "FileNotFoundError" in failed[0]["error"]
    sim_clock.advance(RETRY_S)
    assert [e["attempt"] for e in missing.tick()] == [2]


# --------------------------------------------------------------------------- the follower

def _followers(root: Path) -> tuple[int, int]:
    """(wrapper pid, follower pid) of the one ``--follow`` of the agent under ``root``."""
    found: list[tuple[int, list[bytes]]] = []
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                argv = Path(f"/proc/{name}/cmdline").read_bytes().split(b"\0")
            except OSError:
                continue
            if b"--follow" in argv and any(str(root).encode() in a for a in argv):
                found.append((int(name), argv))
    wrapper = [pid for pid, argv in found if argv[1:4] == [b"-I", b"-S", b"-c"]]
    follower = [pid for pid, argv in found if pid not in wrapper]
    return (wrapper[0], follower[0]) if len(wrapper) == len(follower) == 1 else (0, 0)


@pytest.mark.parametrize("victim", ["follower", "wrapper"])
def test_a_sigterm_to_the_follow_process_ends_the_stream_and_it_reopens(
        sshd: SshdServer, tmp_path: Path, victim: str) -> None:
    """Ending the machine-side ``--follow`` (or its SSH wrapper) with SIGTERM ends the
    desktop's channel cleanly and the stream reopens it; before, a SIGTERM'd wrapper left
    the follower holding the channel open (the stream never ended) and a SIGTERM'd
    follower ended in an aborted wrapper (read as a dead link)."""
    from gpudesk.services.remote.telemetry import RESUMING
    from gpudesk.services.remote.telemetry import TelemetryStream

    root = tmp_path / "remote"
    states: list[str] = []
    with connect(sshd) as conn:
        site = agent_deploy.deploy(conn, None, root=str(root), python=PYTHON)
        stream = TelemetryStream(conn, site.follow_command, lambda s: None, stall_s=600,
                                 on_state=lambda state, detail: states.append(state))
        try:
            stream.start()
            # the follower's own SIGTERM handler is in place once it printed (no-gpu record)
            wait_for(lambda: stream.delivered, WAIT_S, "a record")
            wrapper, follower = wait_for(lambda: (p := _followers(root))[0] and p, WAIT_S,
                                         "the follower")
            os.kill(follower if victim == "follower" else wrapper, signal.SIGTERM)
            wait_for(lambda: stream.channels == 2, 20.0, "the stream to reopen")
            assert RESUMING in states and "disconnected" not in states
            wait_for(lambda: pid_gone(wrapper) and pid_gone(follower), WAIT_S,
                     "the old follower to end")
        finally:
            stream.stop()
            if site.pid and not pid_gone(site.pid):
                os.kill(site.pid, signal.SIGTERM)
                wait_for(lambda: pid_gone(site.pid), WAIT_S, "the agent to stop")
