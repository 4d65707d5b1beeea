"""Issue 29 (6): the CLI is no second-class path. ``gpudesk watch`` and ``gpudesk run`` give the
agent of a machine gpudesk launched the rules the window's Watch gives it
(``machine_rules.agent_rules`` from the ledger's row, with the user's Preferences as saved):
the budget, its "stop", and the role's cloud stop, not the first-boot guard's warnings. The
machine is the real loopback sshd; the rules are read back from its rules.json.
"""
# ruff: noqa: F811 - pytest fixtures imported from fixtures_* arrive as parameters

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest
from fixtures_keyring import memory_keyring  # noqa: F401
from fixtures_sshd import SshdServer  # noqa: F401
from fixtures_sshd import sshd  # noqa: F401
from fixtures_telemetry import PYTHON  # noqa: F401
from fixtures_telemetry import Roots  # noqa: F401
from fixtures_telemetry import agent_pid  # noqa: F401
from fixtures_telemetry import roots  # noqa: F401
from fixtures_telemetry import smi_wrapper  # noqa: F401

from gpudesk.cli.entry import main
from gpudesk.services.cloud import instance_role
from gpudesk.services.core.settings import Settings
from gpudesk.services.core.settings import load_settings
from gpudesk.services.core.settings import save_settings
from gpudesk.services.money.ledger import Ledger
from gpudesk.services.money.ledger import Machine
from gpudesk.services.remote.machine_rules import agent_rules

PUSHED = "The machine's agent has the new rules: stop at 20.00 USD"


def _row(sshd: SshdServer, root: Path, provider: str, *, role: bool = True) -> Machine:
    """A running machine gpudesk launched (``provider``), reachable at the sshd: a 20 USD
    budget at 1.2 USD/h with "stop", and the role bound at launch (``instance-role``)."""
    since = time.time() - 600.0
    cloud = provider != "own"
    return Machine(
        id=f"m-cli{provider}01", provider=provider, name=f"cli-{provider}",
        region={"tencent": "ap-guangzhou", "aliyun": "cn-hangzhou"}.get(provider, ""),
        cloud_id=f"ins-{provider}0001" if cloud else "", state="running",
        running_since=since, launched_at=since, price_per_hour=1.2 if cloud else 0.0,
        currency="USD", disk_gb=100.0, budget=20.0 if cloud else None,
        on_budget="stop" if cloud else "", store="none",
        enforced_by=("agent,instance-role" if role else "agent") if cloud else "",
        public_ip=sshd.host, ssh_port=sshd.port, ssh_user=sshd.user,
        key_file=str(sshd.client_key), remote_root=str(root), remote_python=PYTHON)


def _first_boot(root: Path, m: Machine) -> dict[str, Any]:
    """What the first-boot guard left on the machine: the rules written before the role was
    bound (on Tencent Cloud and Alibaba Cloud, "stop" only warns there)."""
    from dataclasses import replace

    rules = agent_rules(replace(m, enforced_by="agent"), load_settings(), None).to_json()
    rules["runs_dir"] = str(root / "runs")
    (root / "agent").mkdir(parents=True, exist_ok=True)
    (root / "agent" / "rules.json").write_text(json.dumps(rules, indent=1) + "\n")
    return rules


def _on_machine(root: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((root / "agent" / "rules.json").read_text())
    return data


def _the_windows_rules(m: Machine, on_machine: dict[str, Any]) -> dict[str, Any]:
    """``agent_rules`` for the ledger's row, as the window computes them, at the moment the
    rules on the machine were written (their budget's ``since``)."""
    now = on_machine["budget"]["since"] if "budget" in on_machine else None
    with Ledger() as ledger:
        row = ledger.get(m.id)
        assert row is not None
        return agent_rules(row, load_settings(), ledger, now=now).to_json()


def _watch(m: Machine, sshd: SshdServer, root: Path) -> int:
    smi = smi_wrapper(root.parent / "bin", "a100")
    return main(["watch", "--on", m.id, "--host-key", sshd.host_key_fingerprint,
                 "--python", PYTHON, "--remote-root", str(root), "--nvidia-smi", str(smi),
                 "--seconds", "2.5", "--json-lines"])


@pytest.fixture
def preferences() -> Settings:
    """The user's Preferences as saved (what the window loads, and the CLI too)."""
    settings = Settings(cny_per_usd=7.2, idle_minutes=45, idle_gpu_percent=7.0)
    save_settings(settings)
    return settings


@pytest.mark.parametrize("provider", ["tencent", "aliyun"])
def test_watch_gives_the_agent_the_ledgers_rules_with_the_role_stop(
        provider: str, sshd: SshdServer, roots: Roots, memory_keyring: Any,
        preferences: Settings, capsys: pytest.CaptureFixture[str]) -> None:
    root = roots.new()
    m = _row(sshd, root, provider)
    with Ledger() as ledger:
        ledger.add(m)
    before = _first_boot(root, m)
    assert before["budget"]["action"] == "warn" and "commands" not in before

    assert _watch(m, sshd, root) == 0
    out = capsys.readouterr()
    assert [json.loads(line)["name"] for line in out.out.splitlines()][:1] == [
        "NVIDIA A100-SXM4-40GB"]  # it watched, too
    rules = _on_machine(root)
    assert rules.pop("runs_dir") == str(root / "runs")
    assert rules == _the_windows_rules(m, rules)
    budget = rules["budget"]
    assert (budget["cap"], budget["action"], budget["price_per_hour"]) == (
        20.0, "stop", pytest.approx(1.2 + 100 * {"tencent": 0.35, "aliyun": 1.0}[provider]
                                    / 7.2 / 730, rel=1e-9))
    assert budget["spent_before"] == pytest.approx(0.2, abs=0.02)  # 10 minutes at 1.2/h
    stop = rules["commands"]["stop"]
    assert stop[:3] == [instance_role.AGENT_COMMAND, "--provider", provider]
    assert "--instance" in stop and m.cloud_id in stop and "--or-poweroff" not in stop
    assert rules["idle"] == {"below_pct": 7.0, "minutes": 45.0, "action": "warn"}
    # one line says what the agent now enforces, in the guard's sentences
    said = [line for line in out.err.splitlines() if "agent has the new rules" in line]
    cloud = {"tencent": "Tencent Cloud", "aliyun": "Alibaba Cloud"}[provider]
    assert len(said) == 1 and said[0].startswith(f"gpudesk: {PUSHED} (0.2")
    assert f"also asks {cloud} itself to stop the machine" in said[0]
    pid = agent_pid(root)
    assert pid

    # watched again: the same rules (new counters), the same agent, and nothing to say
    assert _watch(m, sshd, root) == 0
    again = capsys.readouterr()
    assert "new rules" not in again.err and agent_pid(root) == pid
    rules = _on_machine(root)
    rules.pop("runs_dir")
    assert rules == _the_windows_rules(m, rules)


def test_watch_without_a_role_says_only_the_desktop_stops_it(
        sshd: SshdServer, roots: Roots, memory_keyring: Any, preferences: Settings,
        capsys: pytest.CaptureFixture[str]) -> None:
    root = roots.new()
    m = _row(sshd, root, "tencent", role=False)
    with Ledger() as ledger:
        ledger.add(m)
    assert _watch(m, sshd, root) == 0
    err = capsys.readouterr().err
    rules = _on_machine(root)
    rules.pop("runs_dir")
    assert rules == _the_windows_rules(m, rules)
    assert rules["budget"]["action"] == "warn" and "commands" not in rules
    assert "gpudesk: The machine's agent has the new rules: warn at 20.00 USD" in err
    assert "This stop needs gpudesk running and online" in err


def test_run_gives_the_agent_the_ledgers_rules_before_the_run_starts(
        sshd: SshdServer, roots: Roots, memory_keyring: Any, preferences: Settings,
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = roots.new()
    m = _row(sshd, root, "tencent")
    with Ledger() as ledger:
        ledger.add(m)
    _first_boot(root, m)
    project = tmp_path / "proj"
    project.mkdir()
    (project / "train.py").write_text("print('step 1 loss 0.5')\n")

    assert main(["run", "--on", m.id, "--host-key", sshd.host_key_fingerprint,
                 "--project", str(project), "--python", PYTHON, "--remote-root", str(root),
                 "--nproc", "0", "--detach", "--", "train.py"]) == 0
    out = capsys.readouterr()
    run_id = out.out.strip().splitlines()[-1]
    assert (root / "runs" / run_id).is_dir()  # the run started
    rules = _on_machine(root)
    assert rules.pop("runs_dir") == str(root / "runs")
    assert rules == _the_windows_rules(m, rules)
    assert (rules["budget"]["cap"], rules["budget"]["action"]) == (20.0, "stop")
    assert rules["commands"]["stop"][:3] == [instance_role.AGENT_COMMAND, "--provider",
                                             "tencent"]
    assert agent_pid(root)  # the full agent runs there now
    said = [line for line in out.err.splitlines() if "agent has the new rules" in line]
    assert len(said) == 1 and said[0].startswith(PUSHED)
    assert "also asks Tencent Cloud itself to stop the machine" in said[0]


def test_own_machines_keep_warnings_only(
        sshd: SshdServer, roots: Roots, memory_keyring: Any, preferences: Settings,
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = roots.new()
    m = _row(sshd, root, "own")
    with Ledger() as ledger:
        ledger.add(m)
    project = tmp_path / "proj"
    project.mkdir()
    (project / "train.py").write_text("print('step 1 loss 0.5')\n")
    # a run on your own machine starts no agent there
    assert main(["run", "--on", m.id, "--host-key", sshd.host_key_fingerprint,
                 "--project", str(project), "--python", PYTHON, "--remote-root", str(root),
                 "--nproc", "0", "--detach", "--", "train.py"]) == 0
    assert not (root / "agent").exists()
    # watched: the window's rules for it, warnings only, and nothing said about a bill
    assert _watch(m, sshd, root) == 0
    err = capsys.readouterr().err
    rules = _on_machine(root)
    rules.pop("runs_dir")
    assert rules == _the_windows_rules(m, rules)
    assert rules["idle"]["action"] == "warn" and "budget" not in rules
    assert "commands" not in rules and "new rules" not in err


def test_watch_by_address_keeps_a_launched_machines_guard(
        sshd: SshdServer, roots: Roots, memory_keyring: Any, preferences: Settings,
        capsys: pytest.CaptureFixture[str]) -> None:
    """``--on ssh://user@host:port`` of a machine gpudesk launched is that machine: its agent
    keeps the ledger's rules (the role's stop), never a stranger's warnings."""
    root = roots.new()
    m = _row(sshd, root, "tencent")
    with Ledger() as ledger:
        ledger.add(m)
    _first_boot(root, m)
    smi = smi_wrapper(root.parent / "bin", "a100")
    assert main(["watch", "--on", f"ssh://{sshd.user}@{sshd.host}:{sshd.port}",
                 "--identity", str(sshd.client_key), "--host-key",
                 sshd.host_key_fingerprint, "--python", PYTHON, "--remote-root", str(root),
                 "--nvidia-smi", str(smi), "--seconds", "2.5", "--json-lines"]) == 0
    capsys.readouterr()
    rules = _on_machine(root)
    rules.pop("runs_dir")
    assert rules == _the_windows_rules(m, rules)
    assert rules["budget"]["action"] == "stop" and rules["commands"]["stop"][0] == \
        instance_role.AGENT_COMMAND
