"""The scripts sent to a machine carry ``agent/run_folder.py`` inlined (issue 31).

The run launcher and the queue helper run there as ``python3 -I -S -c <source>`` (and
from the files the agent keeps), where ``gpudesk`` cannot be imported; what they share with
the agent, whether a run's launcher lives and whether a non-zero exit came after the run
finished, is one source put in place of their ``run_folder`` imports. These run the sources
as sent, through the same commands the desktop uses, on folders made as a run leaves them.
"""

from __future__ import annotations

import ast
import io
import json
import os
import subprocess
import sys
import tarfile
from collections.abc import Callable
from pathlib import Path

import pytest

from gpudesk.agent import queue
from gpudesk.agent import run_folder
from gpudesk.services.runs import run_package
from gpudesk.services.runs.detached import launcher_command
from gpudesk.services.runs.run_queue import helper_command
from gpudesk.services.runs.shipped_source import launcher_source
from gpudesk.services.runs.shipped_source import queue_source

FINISHED = {"status": "finished", "step": 3, "all_ranks_finished": True}


def _shell(command: str) -> dict[str, object]:
    done = subprocess.run(["/bin/sh", "-c", command], capture_output=True, text=True,
                          timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    answer: dict[str, object] = json.loads(done.stdout)
    return answer


def _ended_run(run_dir: Path, code: int, log: str = "") -> Path:
    """A run folder whose every rank finished, then the process exited with ``code``."""
    (run_dir / "checkpoints").mkdir(parents=True)
    (run_dir / "pid").write_text("4242\n")
    os.utime(run_dir / "pid", (1_000_000, 1_000_000))
    (run_dir / "checkpoints" / "progress.json").write_text(json.dumps(FINISHED))
    (run_dir / "log").write_text(log)
    (run_dir / "exit_status").write_text(f"{code}\n")
    return run_dir


def _top_level_names(tree: ast.Module) -> list[str]:
    names = [t.id for node in tree.body if isinstance(node, ast.Assign)
             for t in node.targets if isinstance(t, ast.Name)]
    return names + [node.name for node in tree.body if isinstance(node, ast.FunctionDef)]


@pytest.mark.parametrize("source", [launcher_source, queue_source], ids=["launcher", "queue"])
def test_each_sent_source_holds_run_folder_once_and_parses_as_python_37(
        source: Callable[[], str]) -> None:
    text = source()
    assert "run_folder import" not in text
    tree = ast.parse(text, feature_version=(3, 7))
    first = tree.body[1] if isinstance(tree.body[0], ast.Expr) else tree.body[0]
    assert isinstance(first, ast.ImportFrom) and first.module == "__future__"
    assert text.count("from __future__ import") == 1
    shared = _top_level_names(ast.parse(Path(run_folder.__file__).read_text("utf-8")))
    defined = _top_level_names(tree)
    assert "launcher_alive" in shared and "finished_before_exit" in shared
    assert all(defined.count(name) == 1 for name in shared), shared  # no name clashes


def test_the_bundle_carries_the_sent_launcher() -> None:
    with tarfile.open(fileobj=io.BytesIO(run_package.agent_archive())) as tar:
        member = tar.extractfile(run_package.LAUNCHER)
        assert member is not None
        assert member.read().decode("utf-8") == launcher_source()
        assert "gpudesk/agent/run_folder.py" in tar.getnames()  # the agent imports it


def test_the_sent_launcher_knows_its_own_process_from_a_reused_pid(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    other = tmp_path / "elsewhere"
    other.mkdir()
    stranger = subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.read()"],
                                cwd=other, stdin=subprocess.PIPE)
    ours = subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.read()"],
                            cwd=run_dir, stdin=subprocess.PIPE)
    try:
        (run_dir / "pid").write_text(f"{stranger.pid}\n")  # alive, but not this run's
        assert _shell(launcher_command(sys.executable, "status", str(run_dir)))["state"] \
            == "lost"
        (run_dir / "pid").write_text(f"{ours.pid}\n")  # its working folder is the run's
        assert _shell(launcher_command(sys.executable, "status", str(run_dir)))["state"] \
            == "running"
    finally:
        for proc in (stranger, ours):
            assert proc.stdin is not None
            proc.stdin.close()
            proc.wait(timeout=30)


@pytest.mark.parametrize(("code", "log", "state"), [
    (134, "", "succeeded"),  # SIGABRT after every rank finished: a teardown
    (1, "terminate called without an active exception\n", "succeeded"),
    (1, "Traceback (most recent call last):\nValueError: eval broke\n", "failed"),
])
def test_the_sent_queue_counts_a_teardown_as_succeeded(tmp_path: Path, code: int, log: str,
                                                       state: str) -> None:
    root = tmp_path / "gpudesk"
    run_dir = _ended_run(root / "runs" / "r1", code, log)
    folder = root / queue.QUEUE_DIR
    entry = queue.add_entry(folder, "r1", 0, {"run_dir": str(run_dir), "argv": ["true"]})
    entry.update(state="running", pid=4242)
    queue.save_entry(folder, entry)
    listing = _shell(helper_command(sys.executable, "list", str(root)))
    entries = listing["entries"]
    assert isinstance(entries, list)
    (seen,) = entries
    assert (seen["state"], seen["exit_code"]) == (state, code)
