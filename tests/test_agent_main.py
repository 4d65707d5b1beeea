"""The agent as a process: real subprocess, stand-in nvidia-smi on PATH, SIGTERM to stop."""

# ruff: noqa: F811 - pytest fixtures imported from fixtures_agent arrive as parameters
from __future__ import annotations

import ast
import json
import os
import shutil
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest
from fixtures_agent import REPO  # noqa: F401
from fixtures_agent import FakeSmi  # noqa: F401
from fixtures_agent import fake_smi  # noqa: F401
from fixtures_agent import pid_gone  # noqa: F401
from fixtures_agent import terminate  # noqa: F401
from fixtures_agent import wait_for  # noqa: F401

from gpudesk.agent.events import read_events
from gpudesk.agent.metrics import read_since

AGENT_DIR = REPO / "gpudesk" / "agent"


def agent_env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(REPO)
    return env


def start_agent(folder: Path, *args: str) -> subprocess.Popen[str]:
    """The agent with its output in ``<folder>.log`` (as the app starts it, detached)."""
    folder.parent.mkdir(parents=True, exist_ok=True)
    with open(f"{folder}.log", "a") as log:
        return subprocess.Popen(
            [sys.executable, "-m", "gpudesk.agent", "--dir", str(folder), "--sampler", "smi",
             *args], cwd=REPO, env=agent_env(), stdin=subprocess.DEVNULL, stdout=log,
            stderr=subprocess.STDOUT, text=True)


def agent_log(folder: Path) -> str:
    return Path(f"{folder}.log").read_text()


def write_rules(path: Path, rules: dict[str, Any]) -> Path:
    path.write_text(json.dumps(rules))
    return path


def test_samples_with_one_nvidia_smi_then_stops_cleanly(tmp_path: Path,
                                                        fake_smi: FakeSmi) -> None:
    fake_smi.scenario("missing")
    folder = tmp_path / "agent"
    rules = write_rules(tmp_path / "rules.json", {"interval_ms": 30, "procs_every_s": 0.2})
    proc = start_agent(folder, "--rules", str(rules))
    try:
        # 40 samples and a second process poll: the fake's records may come in a burst
        # on a busy machine, faster than the 0.2 s between polls (no wall clock read here)
        wait_for(lambda: len(read_since(folder, 0)) >= 40
                 and fake_smi.count("--query-compute-apps") >= 2,
                 what="40 records and two process polls")
        live = [p for p in fake_smi.loop_pids() if not pid_gone(p)]
        assert len(live) == 1, "exactly one long-lived nvidia-smi while sampling"
    finally:
        rc = terminate(proc)
    assert rc == 0, agent_log(folder)
    recs = read_since(folder, 0)
    assert [r["seq"] for r in recs] == list(range(1, len(recs) + 1))
    assert len(fake_smi.loop_pids()) == 1, "one nvidia-smi process for all the samples"
    assert pid_gone(fake_smi.loop_pids()[0]), "the agent must shut its nvidia-smi down"
    k80, rtx = recs[-1]["gpus"]
    assert (k80["util"], k80["temp_c"], k80["power_w"], k80["power_limit_w"]) == \
        (37, None, None, None)
    assert (rtx["uuid"], rtx["power_w"], rtx["power_limit_w"], rtx["temp_c"]) == \
        (None, None, None, 45)
    assert recs[-1]["procs"] == [{"pid": 2211, "gpu_uuid": "GPU-1b6e7d1c-0a53-4c3e-8f3e-"
                                  "6b1f1c2e9a70", "gpu_index": 0, "name": "python3",
                                  "mem_used_mib": None}]
    assert [e["kind"] for e in read_events(folder)] == ["agent-start", "agent-stop"]
    stop = read_events(folder)[-1]
    assert stop["last_seq"] == recs[-1]["seq"]


def test_eight_gpus_every_record_and_seq_continues_after_restart(
        tmp_path: Path, fake_smi: FakeSmi) -> None:
    fake_smi.scenario("a100x8")
    folder = tmp_path / "agent"
    for round_ in range(2):
        proc = start_agent(folder, "--interval-ms", "30")
        try:
            wait_for(lambda n=round_: len(read_since(folder, 0)) >= 15 * (n + 1),  # type: ignore[misc]
                     what="records")
        finally:
            assert terminate(proc) == 0
    recs = read_since(folder, 0)
    assert [r["seq"] for r in recs] == list(range(1, len(recs) + 1))
    assert all([g["index"] for g in r["gpus"]] == list(range(8)) for r in recs)
    assert len(fake_smi.loop_pids()) == 2  # one per agent run


def test_once_prints_one_record(tmp_path: Path, fake_smi: FakeSmi) -> None:
    fake_smi.scenario("v100")
    done = subprocess.run([sys.executable, "-m", "gpudesk.agent", "--dir", str(tmp_path / "a"),
                           "--once", "--sampler", "smi"], cwd=REPO, env=agent_env(),
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    rec = json.loads(done.stdout)
    assert rec["seq"] == 1 and rec["gpus"][0]["util"] == 99
    assert [p["pid"] for p in rec["procs"]] == [3858903, 3880364]
    assert fake_smi.loop_pids() == []


def test_once_without_nvidia_smi_exits_1(tmp_path: Path) -> None:
    done = subprocess.run([sys.executable, "-m", "gpudesk.agent", "--dir", str(tmp_path / "a"),
                           "--once", "--sampler", "smi", "--nvidia-smi",
                           str(tmp_path / "absent")], cwd=REPO, env=agent_env(),
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 1 and "no GPU reading" in done.stderr


def test_idle_action_runs_with_no_desktop_connected(tmp_path: Path, fake_smi: FakeSmi) -> None:
    out = tmp_path / "stopped.txt"
    code = "import os, sys; open(sys.argv[1], 'a').write(os.environ['GPUDESK_RULE'] + '\\n')"
    rules = write_rules(tmp_path / "rules.json", {
        "interval_ms": 50, "idle": {"below_pct": 5, "minutes": 0.02, "action": "stop"},
        "commands": {"stop": [sys.executable, "-c", code, str(out)]}})
    folder = tmp_path / "agent"
    proc = start_agent(folder, "--rules", str(rules))  # a100 scenario: 0 % utilisation
    try:
        wait_for(out.exists, what="the idle action")
    finally:
        assert terminate(proc) == 0
    assert out.read_text() == "idle\n"
    assert [e["kind"] for e in read_events(folder)][:3] == ["agent-start", "rule-fired",
                                                            "action-run"]


def test_rewritten_rules_are_adopted_and_a_bad_rewrite_is_refused(
        tmp_path: Path, fake_smi: FakeSmi) -> None:
    out = tmp_path / "budget-stop.txt"
    code = "import os, sys; open(sys.argv[1], 'a').write(os.environ['GPUDESK_RULE'] + '\\n')"
    rules = write_rules(tmp_path / "rules.json", {"interval_ms": 50})
    folder = tmp_path / "agent"
    proc = start_agent(folder, "--rules", str(rules))
    try:
        wait_for(lambda: read_since(folder, 0), what="records")
        (tmp_path / "rules.json.tmp").write_text('{"budget": {"cap": "lots"}}')
        os.replace(tmp_path / "rules.json.tmp", rules)
        wait_for(lambda: "rules-error" in [e["kind"] for e in read_events(folder)],
                 what="the refused rewrite")
        write_rules(tmp_path / "rules.json.tmp", {
            "interval_ms": 50,
            "budget": {"cap": 5.0, "price_per_hour": 1.0, "since": 0, "spent_before": 0,
                       "action": "stop"},
            "commands": {"stop": [sys.executable, "-c", code, str(out)]}})
        os.replace(tmp_path / "rules.json.tmp", rules)
        wait_for(out.exists, what="the budget action after the rewrite")
        assert proc.poll() is None, "a bad rewrite must not stop the agent"
    finally:
        assert terminate(proc) == 0
    assert out.read_text() == "budget\n"
    kinds = [e["kind"] for e in read_events(folder)]
    assert kinds.index("rules-error") < kinds.index("rules-reloaded") < kinds.index("rule-fired")
    assert kinds.count("budget-threshold") == 3


def test_invalid_rules_exit_2_and_leave_an_event(tmp_path: Path) -> None:
    rules = write_rules(tmp_path / "rules.json", {"budget": {"cap": "lots"}})
    done = subprocess.run([sys.executable, "-m", "gpudesk.agent", "--dir", str(tmp_path / "a"),
                           "--rules", str(rules)], cwd=REPO, env=agent_env(),
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 2
    events = read_events(tmp_path / "a")
    assert events[0]["kind"] == "rules-error" and "budget.cap" in events[0]["error"]


def test_a_second_agent_on_the_same_folder_exits_3(tmp_path: Path, fake_smi: FakeSmi) -> None:
    folder = tmp_path / "agent"
    first = start_agent(folder, "--interval-ms", "50")
    try:
        wait_for(lambda: read_since(folder, 0), what="the first agent's records")
        second = subprocess.run([sys.executable, "-m", "gpudesk.agent", "--dir", str(folder)],
                                cwd=REPO, env=agent_env(), capture_output=True, text=True,
                                timeout=60)
        assert second.returncode == 3 and "another agent" in second.stderr
    finally:
        assert terminate(first) == 0


def test_since_prints_the_backfill(tmp_path: Path, fake_smi: FakeSmi) -> None:
    folder = tmp_path / "agent"
    proc = start_agent(folder, "--interval-ms", "30")
    try:
        wait_for(lambda: len(read_since(folder, 0)) >= 10, what="records")
    finally:
        assert terminate(proc) == 0
    done = subprocess.run([sys.executable, "-m", "gpudesk.agent", "--dir", str(folder),
                           "--since", "5"], cwd=REPO, env=agent_env(), capture_output=True,
                          text=True, timeout=60)
    seqs = [json.loads(line)["seq"] for line in done.stdout.splitlines()]
    assert done.returncode == 0 and seqs == list(range(6, len(read_since(folder, 0)) + 1))


def test_follow_streams_new_records(tmp_path: Path, fake_smi: FakeSmi) -> None:
    folder = tmp_path / "agent"
    agent = start_agent(folder, "--interval-ms", "30")
    tail = subprocess.Popen([sys.executable, "-m", "gpudesk.agent", "--dir", str(folder),
                             "--since", "0", "--follow"], cwd=REPO, env=agent_env(),
                            stdout=subprocess.PIPE, text=True)
    lines: list[str] = []
    assert tail.stdout is not None
    reader = threading.Thread(target=lambda: lines.extend(tail.stdout or []), daemon=True)
    reader.start()
    try:
        wait_for(lambda: len(lines) >= 20, what="20 streamed records")
        seqs = [json.loads(line)["seq"] for line in lines[:20]]
        assert seqs == list(range(1, 21))
    finally:
        assert terminate(tail) == 0
        reader.join(10)
        tail.stdout.close()
        assert terminate(agent) == 0


def test_runs_as_a_bare_uploaded_folder(tmp_path: Path, fake_smi: FakeSmi) -> None:
    upload = tmp_path / "remote" / "gpudesk-agent"
    shutil.copytree(AGENT_DIR, upload, ignore=shutil.ignore_patterns("__pycache__"))
    done = subprocess.run([sys.executable, "-I", str(upload), "--dir", str(tmp_path / "a"),
                           "--once", "--sampler", "smi"], cwd=tmp_path, capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["gpus"][0]["name"] == "NVIDIA A100-SXM4-40GB"


STDLIB_CHECK = """
import json, sys
sys.path.insert(0, sys.argv[1])
before = set(sys.modules)
import gpudesk.agent, gpudesk.agent.__main__
for name in ("clock", "events", "guard", "metrics", "rules", "runs", "smi", "spot"):
    __import__("gpudesk.agent." + name)
new = sorted(set(sys.modules) - before)
print(json.dumps(new))
"""


def test_agent_imports_only_the_standard_library() -> None:
    done = subprocess.run([sys.executable, "-I", "-c", STDLIB_CHECK, str(REPO)],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    new = json.loads(done.stdout)
    assert "gpudesk.agent.smi" in new
    foreign = [m for m in new if m.split(".")[0] not in sys.stdlib_module_names
               and m.split(".")[0] != "gpudesk"]
    assert foreign == []
    ours = {m for m in new if m.split(".")[0] == "gpudesk"}
    assert ours <= {"gpudesk"} | {m for m in ours if m.startswith("gpudesk.agent")}


NEWER_THAN_38 = ("removeprefix", "removesuffix", "zoneinfo", "functools.cache",
                 "kw_only", "slots=True", "match ", "graphlib", "tomllib", "ExceptionGroup")


@pytest.mark.parametrize("path", sorted(AGENT_DIR.glob("*.py")), ids=lambda p: p.name)
def test_agent_source_is_python_38(path: Path) -> None:
    source = path.read_text(encoding="utf-8")
    tree = ast.parse(source, feature_version=(3, 8))
    assert "from __future__ import annotations" in source
    used = [word for word in NEWER_THAN_38 if word in source]
    assert used == []
    # Outside annotations (deferred by the __future__ import) no PEP 604/585 forms may run.
    annotations: set[int] = set()
    for node in ast.walk(tree):
        for ann in (getattr(node, "annotation", None), getattr(node, "returns", None)):
            if ann is not None:
                annotations.update(id(n) for n in ast.walk(ann))
    for node in ast.walk(tree):
        if id(node) in annotations:
            continue
        if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name):
            assert node.value.id not in ("list", "dict", "tuple", "set", "type"), \
                f"{path.name}:{node.lineno} subscripts a builtin at run time"
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
            assert not any(isinstance(side, ast.Constant) and side.value is None
                           for side in (node.left, node.right)), \
                f"{path.name}:{node.lineno} uses X | None at run time"


def test_no_nvidia_smi_is_said_once_and_recorded_for_the_desktop(tmp_path: Path) -> None:
    """A machine with no NVIDIA driver (issue 25): the agent says so once, writes one record
    with no GPUs that says it (src "no-gpu"), and does not retry nvidia-smi every poll."""
    rules = write_rules(tmp_path / "rules.json", {"procs_every_s": 0.2})
    folder = tmp_path / "agent"
    proc = start_agent(folder, "--rules", str(rules), "--nvidia-smi", str(tmp_path / "absent"))
    try:
        wait_for(lambda: read_since(folder, 0) != [], what="the no-GPU record")
        assert "no-gpu" in {e.get("kind") for e in read_events(folder)}
        # An absence can only be watched for: a window of a dozen polls (0.2 s each).
        with pytest.raises(AssertionError):
            wait_for(lambda: len(read_since(folder, 0)) > 1 or proc.poll() is not None,
                     timeout=2.5, what="a second record (there must be none)")
    finally:
        terminate(proc)
    records = read_since(folder, 0)
    assert [(r["src"], r["gpus"]) for r in records] == [("no-gpu", [])]
    text = agent_log(folder)
    assert text.count("No NVIDIA GPU or driver on this machine") == 1, text
    assert "failed: [Errno 2]" not in text and "cannot start" not in text, text
