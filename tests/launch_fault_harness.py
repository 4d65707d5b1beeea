"""What the launch-fault tests share, cloud by cloud: real ``python -m gpudesk`` processes
against a stand-in cloud, killed at each launch step, then restarted; and the scan that a
whole CLI session left its secret in no file and no output."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from gpudesk.services.cloud.launcher import FAULT_ENV
from gpudesk.services.cloud.launcher import FAULT_POINTS

# "ssh" is never reached with --no-wait-ssh; the stand-in's addresses lead nowhere,
# and tests only talk to 127.0.0.1. The other points cover every ledger write.
KILL_POINTS = [p for p in FAULT_POINTS if p != "ssh"]
# Killed at these, the launch has not asked the cloud for a machine yet.
BEFORE_THE_MACHINE = ("intent", "key", "security-group", "image")
WRONG_SECRET = "wrong-secret-value"  # how a test's wrong secret starts


def launch_args(provider: str, instance_type: str, region: str) -> list[str]:
    """``gpudesk launch`` of one machine, SSH allowed from a documentation address, no
    wait for SSH, polling as fast as the stand-in answers."""
    return ["launch", "--provider", provider, "--type", instance_type, "--region", region,
            "--allow-from", "203.0.113.7/32", "--no-wait-ssh", "--poll", "0.01"]


def gpudesk(args: list[str], env: dict[str, str], stdin: str = ""
            ) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "gpudesk", *args], input=stdin, env=env,
                          capture_output=True, text=True, timeout=120)


def cli_env(endpoint_env: str, endpoint: str, home: Path) -> dict[str, str]:
    """This process's environment for a gpudesk that talks to the stand-in at ``endpoint``
    (named by ``endpoint_env``), keeps its files under ``home`` and has no fault set."""
    out = dict(os.environ)
    out.update({endpoint_env: f"http://{endpoint}", "GPUDESK_HOME": str(home),
                "NO_PROXY": "127.0.0.1", "no_proxy": "127.0.0.1"})
    out.pop(FAULT_ENV, None)
    return out


def listed(env: dict[str, str]) -> list[dict[str, Any]]:
    done = gpudesk(["ls", "--json", "--all"], env)
    assert done.returncode == 0, done.stderr
    rows: list[dict[str, Any]] = json.loads(done.stdout)
    return rows


def kill_launch_at(point: str, launch: list[str], env: dict[str, str]) -> None:
    """Run ``launch`` and have it SIGKILLed at ``point``."""
    killed = gpudesk(launch, {**env, FAULT_ENV: point})
    assert killed.returncode == -9, (point, killed.stderr)


def machines_expected(point: str) -> int:
    """How many machines the cloud holds after a launch killed at ``point``."""
    return 0 if point in BEFORE_THE_MACHINE else 1


def restart_finds(at_cloud: set[str], env: dict[str, str], point: str
                  ) -> dict[str, dict[str, Any]]:
    """The restart (``ls`` reconciles by tags) shows every machine at the cloud as billing,
    one row a machine; its rows by cloud id."""
    rows = listed(env)
    by_cloud = {r["cloud_id"]: r for r in rows if r["cloud_id"]}
    assert at_cloud <= set(by_cloud), (point, rows)
    for cloud_id in at_cloud:
        assert by_cloud[cloud_id]["billing"] is True
    assert len(rows) == 1  # the intent row and the instance are one machine, not two
    return by_cloud


def run_session(steps: list[tuple[list[str], str]], env: dict[str, str], secret: str
                ) -> tuple[list[str], str]:
    """Run each ``(args, stdin)`` step, each must succeed and none may carry ``secret`` on
    its command line; what they printed, and what the ``launch`` step printed."""
    outputs = []
    launched = ""
    for args, stdin in steps:
        done = gpudesk(args, env, stdin)
        assert done.returncode == 0, (args, done.stderr)
        outputs.append(done.stdout + done.stderr)
        assert secret not in " ".join(args)
        launched = done.stdout if args[0] == "launch" else launched
    return outputs, launched


def assert_no_secret_left(home: Path, secret: str, texts: list[str]) -> list[Path]:
    """No file under ``home`` holds ``secret`` or the wrong one tried, and no text shown
    holds ``secret``; the files gpudesk wrote."""
    files = [p for p in home.rglob("*") if p.is_file()]
    for path in files:
        data = path.read_bytes()
        assert secret.encode() not in data, path
        assert WRONG_SECRET.encode() not in data, path
    for text in texts:
        assert secret not in text
    return files
