"""A real OpenSSH ``sshd`` on a free 127.0.0.1 port, as the current user, for SSH and sync tests.

Use from a test module with ``from fixtures_sshd import sshd  # noqa: F401``. The
benchmarks start the same server with :func:`start_sshd`.

The server gets its own generated ed25519 host key and authorises one generated
client key; it runs in the foreground (``-D -e``) with a config in a temporary
folder, so nothing of the machine's own SSH set-up is used or changed. Sessions
get ``XDG_STATE_HOME`` inside that folder, so the sync helper's state stays there. As root
(CI runs as root) sshd wants its privilege-separation folder ``/run/sshd``; the
fixture creates it when missing, as the Debian service script would.
"""

from __future__ import annotations

import base64
import contextlib
import getpass
import hashlib
import os
import signal
import socket
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from dataclasses import field
from pathlib import Path

import pytest

SSHD = Path("/usr/sbin/sshd")
READY_TIMEOUT_S = 15.0

SSHD_CONFIG = """\
Port {port}
ListenAddress 127.0.0.1
HostKey {host_key}
PidFile {pid_file}
AuthorizedKeysFile {authorized_keys}
UsePAM no
StrictModes no
PubkeyAuthentication yes
PasswordAuthentication no
KbdInteractiveAuthentication no
PermitRootLogin prohibit-password
AllowTcpForwarding yes
Subsystem sftp internal-sftp
PrintMotd no
MaxSessions 64
MaxStartups 64
LogLevel VERBOSE
# SHLVL=1 makes the session's bash count as nested, so it skips ~/.bashrc: on these
# machines that file runs `pyenv init`, whose rehash lock, once orphaned by a killed
# session, stalls every later login for 60 s (CI crawled and timed out on it).
SetEnv XDG_STATE_HOME={state_home} SHLVL=1
"""


def _write_ed25519(path: Path) -> str:
    """Write an unencrypted OpenSSH private key; return its ``ssh-ed25519 AAAA...`` line."""
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    key = Ed25519PrivateKey.generate()
    pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.OpenSSH,
                            serialization.NoEncryption())
    path.write_bytes(pem)
    path.chmod(0o600)
    public = key.public_key().public_bytes(serialization.Encoding.OpenSSH,
                                           serialization.PublicFormat.OpenSSH).decode()
    path.with_suffix(".pub").write_text(public + "\n")
    return public


def _fingerprint(public_line: str) -> str:
    blob = base64.b64decode(public_line.split()[1])
    return "SHA256:" + base64.b64encode(hashlib.sha256(blob).digest()).decode().rstrip("=")


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _children(pid: int) -> list[int]:
    """Every descendant of ``pid`` (per-connection sshd processes and their children)."""
    parents: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        parents[int(entry.name)] = int(stat.rsplit(")", 1)[1].split()[1])
    found: list[int] = []
    todo = [pid]
    while todo:
        parent = todo.pop()
        kids = [child for child, ppid in parents.items() if ppid == parent]
        found.extend(kids)
        todo.extend(kids)
    return found


def _gone(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return True
    return state in ("Z", "X")


@dataclass
class SshdServer:
    """A running sshd; ``restart_with_new_host_key`` and ``kill_sessions`` make failures."""

    workdir: Path
    host: str = "127.0.0.1"
    port: int = 0
    user: str = field(default_factory=getpass.getuser)
    client_key: Path = Path()
    host_key_fingerprint: str = ""
    host_key_line: str = ""
    proc: subprocess.Popen[bytes] | None = None
    log_file: Path = Path()

    @property
    def state_home(self) -> Path:
        """``XDG_STATE_HOME`` of every session: the sync helper's state stays in the workdir."""
        return self.workdir / "state"

    @property
    def url(self) -> str:
        return f"ssh://{self.user}@{self.host}:{self.port}"

    def start(self) -> SshdServer:
        self.workdir.mkdir(parents=True, exist_ok=True)
        if not self.client_key.name:
            self.client_key = self.workdir / "client_ed25519"
            public = _write_ed25519(self.client_key)
            (self.workdir / "authorized_keys").write_text(public + "\n")
        if not self.host_key_line:
            self._new_host_key()
        if os.geteuid() == 0:
            Path("/run/sshd").mkdir(mode=0o755, exist_ok=True)
        for _attempt in range(5):
            self.port = self.port or _free_port()
            if self._launch():
                return self
            self.port = 0  # the port was taken between probing and binding: try another
        raise RuntimeError(f"sshd did not start:\n{self.log_file.read_text(errors='replace')}")

    def _new_host_key(self) -> None:
        host_key = self.workdir / "host_ed25519"
        host_key.unlink(missing_ok=True)
        self.host_key_line = _write_ed25519(host_key)
        self.host_key_fingerprint = _fingerprint(self.host_key_line)

    def _launch(self) -> bool:
        config = self.workdir / "sshd_config"
        config.write_text(SSHD_CONFIG.format(
            port=self.port, host_key=self.workdir / "host_ed25519",
            pid_file=self.workdir / "sshd.pid",
            authorized_keys=self.workdir / "authorized_keys", state_home=self.state_home))
        self.log_file = self.workdir / "sshd.log"
        with self.log_file.open("ab") as log:
            self.proc = subprocess.Popen([str(SSHD), "-D", "-e", "-f", str(config)],
                                         stdin=subprocess.DEVNULL, stdout=log, stderr=log)
        deadline = time.monotonic() + READY_TIMEOUT_S
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                return False
            with contextlib.suppress(OSError), socket.create_connection(
                    (self.host, self.port), timeout=1.0) as sock:
                if sock.recv(8).startswith(b"SSH-2.0"):
                    return True
            time.sleep(0.01)  # polling interval while the listener comes up
        self.stop()
        raise RuntimeError("sshd did not accept connections in time")

    def kill_sessions(self) -> int:
        """SIGKILL every per-connection sshd process: clients see their connection drop."""
        if self.proc is None:
            return 0
        pids = _children(self.proc.pid)
        for pid in pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        deadline = time.monotonic() + 10
        while not all(_gone(pid) for pid in pids) and time.monotonic() < deadline:
            time.sleep(0.01)
        return len(pids)

    def restart_with_new_host_key(self) -> str:
        """Stop, generate a different host key, start on the same port; return its fingerprint."""
        old = self.host_key_fingerprint
        self.stop()
        self._new_host_key()
        assert self.host_key_fingerprint != old
        if not self._launch():
            raise RuntimeError(f"sshd did not restart:\n{self.log_file.read_text()}")
        return self.host_key_fingerprint

    def stop(self) -> None:
        if self.proc is None:
            return
        self.kill_sessions()
        self.proc.terminate()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.proc = None

    def ssh_command(self, known_hosts: Path) -> list[str]:
        """The OpenSSH client command line that reaches this server with pinned keys only."""
        return ["ssh", "-i", str(self.client_key), "-p", str(self.port),
                "-o", f"UserKnownHostsFile={known_hosts}", "-o", "StrictHostKeyChecking=yes",
                "-o", "IdentitiesOnly=yes", "-o", "BatchMode=yes",
                "-o", "GlobalKnownHostsFile=none"]


def sshd_missing_reason() -> str:
    return "" if SSHD.exists() else f"OpenSSH server not installed ({SSHD} is missing)"


def start_sshd(workdir: Path) -> SshdServer:
    return SshdServer(workdir=workdir).start()


@pytest.fixture
def sshd(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SshdServer]:
    """A fresh sshd per test (it starts in tens of milliseconds); stopped afterwards."""
    reason = sshd_missing_reason()
    if reason:
        pytest.skip(reason)
    server = start_sshd(tmp_path_factory.mktemp("sshd"))
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def sshd_b(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SshdServer]:
    """A second machine: another sshd on its own port, with its own host and client keys
    (tests that move a run between machines give it another run root)."""
    reason = sshd_missing_reason()
    if reason:
        pytest.skip(reason)
    server = start_sshd(tmp_path_factory.mktemp("sshd-b"))
    try:
        yield server
    finally:
        server.stop()
