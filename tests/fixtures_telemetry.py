"""The loopback "machine" for telemetry tests: an sshd, the stand-in nvidia-smi with a chosen
capture, and cleanup of every agent the test started there (they outlive SSH by design)."""

from __future__ import annotations

import contextlib
import os
import signal
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from dataclasses import field
from pathlib import Path

import pytest
from fixtures_agent import FAKE_SMI
from fixtures_agent import pid_gone
from fixtures_agent import wait_for
from fixtures_sshd import SshdServer

from gpudesk.services.remote.host_keys import HostKeyPolicy
from gpudesk.services.remote.host_keys import PinStore
from gpudesk.services.remote.ssh import SshConnection
from gpudesk.services.remote.ssh import SshTarget

PYTHON = sys.executable


def smi_wrapper(folder: Path, scenario: str) -> Path:
    """An ``nvidia-smi`` replaying ``scenario``: the sshd session does not inherit our env."""
    folder.mkdir(parents=True, exist_ok=True)
    exe = folder / f"nvidia-smi-{scenario}"
    exe.write_text(f'#!/bin/sh\nexport FAKE_SMI_SCENARIO={scenario}\n'
                   f'exec "{PYTHON}" "{FAKE_SMI}" "$@"\n', encoding="utf-8")
    exe.chmod(0o755)
    return exe


def connect(server: SshdServer, **kw: object) -> SshConnection:
    target = SshTarget.parse(server.url, key_file=server.client_key)
    return SshConnection(target, HostKeyPolicy.expect(server.host_key_fingerprint),
                         store=PinStore(), **kw).connect()  # type: ignore[arg-type]


def agent_pid(root: Path) -> int | None:
    try:
        return int((root / "agent" / "data" / "agent.pid").read_text().strip())
    except (OSError, ValueError):
        return None


def kill_pid(pid: int, sig: int = signal.SIGTERM) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, sig)
    wait_for(lambda: pid_gone(pid), what=f"pid {pid} to end")


@dataclass
class Roots:
    """Remote roots handed out to a test; their agents are stopped afterwards."""

    base: Path
    made: list[Path] = field(default_factory=list)
    pids: set[int] = field(default_factory=set)

    def new(self, name: str = "remote") -> Path:
        root = self.base / name
        self.made.append(root)
        return root

    def remember(self, pid: int) -> None:
        self.pids.add(pid)

    def stop_all(self) -> None:
        for root in self.made:
            pid = agent_pid(root)
            if pid:
                self.pids.add(pid)
        for pid in self.pids:
            if not pid_gone(pid):
                kill_pid(pid)


@pytest.fixture
def roots(tmp_path: Path) -> Iterator[Roots]:
    r = Roots(tmp_path)
    try:
        yield r
    finally:
        r.stop_all()
