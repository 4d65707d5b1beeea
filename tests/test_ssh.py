"""SshConnection against a real sshd: commands, errors, reconnects and port forwarding."""

# ruff: noqa: F811 - pytest fixtures imported from fixtures_sshd arrive as parameters
from __future__ import annotations

import contextlib
import hashlib
import os
import socket
import threading
from collections.abc import Iterator
from pathlib import Path

import paramiko
import pytest
from fixtures_sshd import SshdServer  # noqa: F401
from fixtures_sshd import _free_port  # noqa: F401
from fixtures_sshd import _write_ed25519  # noqa: F401
from fixtures_sshd import sshd  # noqa: F401

from gpudesk.services.remote.host_keys import HostKeyPolicy
from gpudesk.services.remote.host_keys import PinStore
from gpudesk.services.remote.ssh import CommandFailed
from gpudesk.services.remote.ssh import SshAuthError
from gpudesk.services.remote.ssh import SshConnection
from gpudesk.services.remote.ssh import SshError
from gpudesk.services.remote.ssh import SshPool
from gpudesk.services.remote.ssh import SshTarget
from gpudesk.services.remote.ssh import SshUnreachable


def make_conn(server: SshdServer, key: Path | None = None, **options: object) -> SshConnection:
    target = SshTarget(server.host, server.port, server.user,
                       key_file=key if key is not None else server.client_key)
    return SshConnection(target, HostKeyPolicy.accept_new(), store=PinStore(),
                         **options)  # type: ignore[arg-type]


@pytest.fixture
def conn(sshd: SshdServer) -> Iterator[SshConnection]:
    connection = make_conn(sshd)
    try:
        yield connection
    finally:
        connection.close()


# --------------------------------------------------------------------------- commands

def test_exec_returns_stdout_stderr_and_exit_status(conn: SshConnection) -> None:
    result = conn.exec("echo out; echo err >&2; exit 7")
    assert (result.exit_status, result.stdout, result.stderr) == (7, b"out\n", b"err\n")
    assert not result.ok
    assert conn.exec("printf 'caf\\303\\251'").text == "café"
    assert conn.exec("wc -c", input=b"x" * 100_000).text.strip() == "100000"
    assert conn.connects == 1 and conn.exec_count == 3  # one connection for all three


def test_exec_reads_big_stdout_and_stderr_together(conn: SshConnection) -> None:
    """20 MB out and 2 MB err at once: neither stream may stall the other."""
    result = conn.exec("head -c 2000000 /dev/zero >&2 & head -c 20000000 /dev/zero; wait")
    assert result.ok
    assert len(result.stdout) == 20_000_000 and len(result.stderr) == 2_000_000
    blob = os.urandom(3_000_000)
    echoed = conn.exec("cat", input=blob)
    assert hashlib.sha256(echoed.stdout).digest() == hashlib.sha256(blob).digest()


def test_command_failed_when_asked_to_check(conn: SshConnection) -> None:
    with pytest.raises(CommandFailed) as caught:
        conn.exec("echo no such model >&2; exit 3", check=True, what="Starting the run")
    assert caught.value.result.exit_status == 3
    text = str(caught.value)
    assert "Starting the run" in text and "exit status 3" in text and "no such model" in text
    assert conn.exec("true", check=True).ok


def test_exec_timeout_gives_a_readable_error(conn: SshConnection) -> None:
    with pytest.raises(SshError, match="did not finish a long wait within 0.3 seconds"):
        conn.exec("sleep 30", timeout=0.3, what="a long wait")
    assert conn.exec("echo still usable").text == "still usable\n"


def test_sftp_on_the_shared_connection(conn: SshConnection, tmp_path: Path) -> None:
    (tmp_path / "seen.txt").write_text("hello")
    sftp = conn.sftp()
    try:
        assert "seen.txt" in sftp.listdir(str(tmp_path))
        with sftp.open(str(tmp_path / "seen.txt")) as handle:
            assert handle.read() == b"hello"
    finally:
        sftp.close()
    assert conn.connects == 1


# --------------------------------------------------------------------------- failures

def test_wrong_key_gives_auth_error_without_secrets(sshd: SshdServer, tmp_path: Path) -> None:
    wrong = tmp_path / "wrong_ed25519"
    _write_ed25519(wrong)
    connection = make_conn(sshd, wrong, attempts=3)
    with pytest.raises(SshAuthError) as caught:
        connection.exec("true")
    text = str(caught.value)
    assert f"refused the SSH key for user {sshd.user}" in text
    assert "Exception" not in text  # plain words, not paramiko's class name (issue 31)
    assert f"{sshd.host}:{sshd.port}" in text
    secret_lines = [line for line in wrong.read_text().splitlines() if "-----" not in line]
    public_blob = wrong.with_suffix(".pub").read_text().split()[1]
    for part in [*secret_lines, public_blob, str(wrong)]:
        assert part not in text and part not in repr(caught.value.values)
    assert caught.value.__cause__ is None and caught.value.__suppress_context__
    assert connection.connects == 0
    # Not retried: a wrong key stays wrong. sshd saw one failed login, not three.
    log = sshd.log_file.read_text(errors="replace")
    assert log.count("Failed publickey") == 1 and "Accepted publickey" not in log


def test_no_key_at_all_is_an_auth_error(sshd: SshdServer) -> None:
    target = SshTarget(sshd.host, sshd.port, sshd.user)
    with pytest.raises(SshAuthError, match="No SSH key was given"):
        SshConnection(target, HostKeyPolicy.accept_new()).connect()


def test_unreachable_port_gives_ssh_unreachable(tmp_path: Path) -> None:
    port = _free_port()  # nothing listens there
    target = SshTarget("127.0.0.1", port, "root", key_file=tmp_path / "unused")
    connection = SshConnection(target, HostKeyPolicy.accept_new(), attempts=2, backoff_s=0.01,
                               connect_timeout_s=2)
    with pytest.raises(SshUnreachable) as caught:
        connection.exec("true")
    text = str(caught.value)
    assert "after 2 attempts" in text and f"SSH port {port}" in text
    # plain words, not "ConnectionRefusedError: [Errno 111]" (issue 31)
    assert "nothing answers on that port: the connection was refused" in text
    assert "Error" not in text and "Errno" not in text
    assert connection.connects == 0 and connection.exec_count == 0


def test_target_urls() -> None:
    parsed = SshTarget.parse("ssh://ubuntu@[::1]:2222")
    assert (parsed.user, parsed.host, parsed.port) == ("ubuntu", "::1", 2222)
    assert parsed.known_as == "[::1]:2222"
    plain = SshTarget.parse("ssh://10.0.0.5")
    assert (plain.user, plain.port, plain.known_as) == ("root", 22, "10.0.0.5")
    for bad in ("10.0.0.5", "http://h", "ssh://h:0", "ssh://h:99999", "ssh://h/path", "ssh://"):
        with pytest.raises(SshError, match="is not an SSH target"):
            SshTarget.parse(bad)


# --------------------------------------------------------------------------- reconnecting

def test_reconnects_after_the_server_side_session_is_killed(
        sshd: SshdServer, conn: SshConnection) -> None:
    first_parent = conn.exec("echo $PPID").text.strip()
    assert sshd.kill_sessions() >= 1
    again = conn.exec("echo $PPID")
    assert again.ok and again.text.strip() != first_parent
    assert conn.connects == 2
    assert conn.exec("echo ok").text == "ok\n"
    assert conn.connects == 2  # reconnected once, then kept


def test_reconnect_gives_up_when_the_machine_is_gone(sshd: SshdServer) -> None:
    connection = make_conn(sshd, attempts=2, backoff_s=0.01)
    assert connection.exec("true").ok
    sshd.stop()
    with pytest.raises(SshUnreachable, match="after 2 attempts"):
        connection.exec("true")
    connection.close()


def test_a_silent_link_is_given_up_within_a_minute(sshd: SshdServer) -> None:
    """Keepalive settings on the real socket: a dead link ends blocked reads, not hangs."""
    connection = make_conn(sshd, keepalive_s=10)
    try:
        sock = connection.transport().sock
        assert isinstance(sock, socket.socket)
        assert sock.getsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE) == 1
        assert sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_KEEPIDLE) == 10
        assert sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_USER_TIMEOUT) == 40_000
        assert sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY) == 1
    finally:
        connection.close()


def test_the_handshake_runs_on_a_socket_tuned_from_its_first_byte(
        sshd: SshdServer, monkeypatch: pytest.MonkeyPatch) -> None:
    """Nagle off before the handshake, and each read acknowledged at once (Linux): SSH's
    small answers otherwise wait ~40 ms on delayed ACKs (benchmarks/bench_sync.py)."""
    seen: list[tuple[int, int]] = []
    real_connect = paramiko.SSHClient.connect

    def connect(self: paramiko.SSHClient, *args: object, **kwargs: object) -> None:
        sock = kwargs.get("sock")
        assert isinstance(sock, socket.socket)  # gpudesk's own socket, not paramiko's
        seen.append((sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY),
                     sock.getsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE)))
        real_connect(self, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(paramiko.SSHClient, "connect", connect)
    connection = make_conn(sshd)
    try:
        assert connection.exec("echo hi").stdout == b"hi\n"
        assert seen == [(1, 1)]
        sock = connection.transport().sock
        if hasattr(socket, "TCP_QUICKACK"):
            assert type(sock).recv is not socket.socket.recv  # each read re-arms it
            sock.recv(0)
            assert sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_QUICKACK) == 1
    finally:
        connection.close()


def test_closed_connection_refuses_new_work(conn: SshConnection) -> None:
    assert conn.exec("true").ok
    conn.close()
    assert not conn.connected
    with pytest.raises(SshError, match="closed by gpudesk"):
        conn.exec("true")


def test_pool_shares_one_connection_per_target(sshd: SshdServer) -> None:
    pool = SshPool(lambda target, policy: SshConnection(target, policy, store=PinStore()))
    target = SshTarget(sshd.host, sshd.port, sshd.user, key_file=sshd.client_key)
    first = pool.get(target, HostKeyPolicy.accept_new())
    assert pool.get(target) is first
    assert first.exec("true").ok and pool.get(target).exec("true").ok
    assert first.connects == 1
    other = pool.get(SshTarget(sshd.host, sshd.port, sshd.user, key_file=sshd.client_key,
                               pin_name="gpudesk-m1"), HostKeyPolicy.accept_new())
    assert other is not first
    pool.close(target)
    assert not first.connected
    fresh = pool.get(target)
    assert fresh is not first and fresh.policy.mode == "refuse"  # a new one, default policy
    pool.close_all()
    assert not other.connected


# --------------------------------------------------------------------------- forwarding

@pytest.fixture
def echo_server() -> Iterator[int]:
    """A TCP echo server on the "machine" (127.0.0.1, seen from sshd); yields its port."""
    listener = socket.create_server(("127.0.0.1", 0))
    stop = threading.Event()

    def serve(client: socket.socket) -> None:
        with client:
            while data := client.recv(1 << 16):
                client.sendall(data)

    def accept() -> None:
        while not stop.is_set():  # until the listener is shut down
            try:
                client, _ = listener.accept()
            except OSError:
                return
            threading.Thread(target=serve, args=(client,), daemon=True).start()

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    try:
        yield listener.getsockname()[1]
    finally:
        stop.set()
        listener.shutdown(socket.SHUT_RDWR)  # wakes the blocked accept()
        listener.close()
        thread.join(timeout=5)


def roundtrip(port: int, payload: bytes) -> bytes:
    """Send ``payload`` (from a thread, so a big one cannot deadlock) and read until EOF."""
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:

        def send() -> None:
            with contextlib.suppress(OSError):
                sock.sendall(payload)
                sock.shutdown(socket.SHUT_WR)

        sender = threading.Thread(target=send, daemon=True)
        sender.start()
        chunks = []
        try:
            while chunk := sock.recv(1 << 16):
                chunks.append(chunk)
        except ConnectionResetError:
            pass  # closed with our bytes unread: as closed as EOF for this purpose
        sender.join(timeout=10)
    return b"".join(chunks)


def test_forward_local_carries_bytes_both_ways(
        sshd: SshdServer, conn: SshConnection, echo_server: int) -> None:
    forward = conn.forward_local(echo_server)
    assert forward.local_port != echo_server
    assert forward._listener.getsockname()[0] == "127.0.0.1"  # never on other interfaces
    payload = os.urandom(24_000_000)  # more than the channel window and socket buffers
    assert roundtrip(forward.local_port, payload) == payload
    assert roundtrip(forward.local_port, b"ping") == b"ping"
    # The tunnel outlives a dropped connection: the next client goes over a new one.
    sshd.kill_sessions()
    assert roundtrip(forward.local_port, b"after reconnect") == b"after reconnect"
    assert conn.connects == 2
    forward.close()
    with pytest.raises(OSError):
        socket.create_connection(("127.0.0.1", forward.local_port), timeout=2).close()


def test_forward_to_a_closed_port_closes_the_local_client(
        conn: SshConnection) -> None:
    with conn.forward_local(_free_port()) as forward:
        assert roundtrip(forward.local_port, b"anyone?") == b""
        assert conn.exec("true").ok  # the connection itself is fine
