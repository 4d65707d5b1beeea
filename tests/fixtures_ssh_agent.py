"""A real ``ssh-agent`` on a socket in the test's folder (``from fixtures_ssh_agent import
agent  # noqa: F401``); the fixture's value is the socket path for ``SSH_AUTH_SOCK``."""

from __future__ import annotations

import shutil
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest


@pytest.fixture
def agent(tmp_path: Path) -> Iterator[str]:
    if shutil.which("ssh-agent") is None:
        pytest.skip("no ssh-agent")
    sock = tmp_path / "agent.sock"
    proc = subprocess.Popen(["ssh-agent", "-D", "-a", str(sock)], stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 10
    try:
        while not sock.exists():
            assert time.monotonic() < deadline, "ssh-agent did not start"
            time.sleep(0.01)  # polling for the socket, not a timing assumption
        yield str(sock)
    finally:
        proc.terminate()
        proc.wait(timeout=10)
