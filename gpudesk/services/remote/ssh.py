"""One pinned, self-healing SSH connection per machine, shared by sync, runs and telemetry.

Everything here blocks (paramiko does); the window calls it through
``asyncio.to_thread``. A :class:`SshConnection` connects lazily, checks the
host key against its pin (``host_keys``), sends keepalives, and when the
connection has dropped it reconnects with exponential backoff before the next
command. A host key that changed is never retried: it raises
``HostKeyChanged`` every time. :func:`shared` hands out the one connection of
a target so that every part of the app uses the same one.
"""

from __future__ import annotations

import contextlib
import errno
import select
import socket
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from dataclasses import field
from pathlib import Path
from typing import Any
from urllib.parse import unquote
from urllib.parse import urlsplit

import paramiko

from gpudesk.i18n_marks import QT_TRANSLATE_NOOP
from gpudesk.services.core.errors import TemplatedError
from gpudesk.services.remote.host_keys import HostKeyChanged
from gpudesk.services.remote.host_keys import HostKeyError
from gpudesk.services.remote.host_keys import HostKeyMismatch
from gpudesk.services.remote.host_keys import HostKeyPolicy
from gpudesk.services.remote.host_keys import PinningPolicy
from gpudesk.services.remote.host_keys import PinStore
from gpudesk.services.remote.host_keys import fingerprint
from gpudesk.services.remote.host_keys import host_pattern
from gpudesk.services.remote.host_keys import matches

# Our receive window and packet size per channel (pulls and command output).
# paramiko's 2 MiB default stalls a fast stream on every window adjustment.
WINDOW_SIZE = 16 * 2**20
MAX_PACKET_SIZE = 2**18

MSG_NO_LOGIN_USER = QT_TRANSLATE_NOOP(
    "Ssh", "gpudesk does not know who logs in on {machine}: the cloud did not say it for the "
    "machine's image, and gpudesk does not guess. Set it with: gpudesk login-user {machine} "
    "USER (root on Alibaba Cloud and most Tencent Cloud images, ubuntu on Ubuntu images, "
    "ec2-user on Amazon Linux).")
MSG_UNREACHABLE = QT_TRANSLATE_NOOP(
    "Ssh", "Could not reach {target} over SSH after {attempts} attempts ({detail}). Check "
    "that the machine is running and that its SSH port {port} is open to this computer.")
MSG_UNREACHABLE_ONCE = QT_TRANSLATE_NOOP(
    "Ssh", "Could not reach {target} over SSH ({detail}). Check that the machine is running "
    "and that its SSH port {port} is open to this computer.")
# Why a connection failed, in plain words (translated as values of the "Ssh" sentences),
# never a Python class name ("ConnectionRefusedError: [Errno 111]", issue 31).
WHY_REFUSED = QT_TRANSLATE_NOOP("Ssh", "nothing answers on that port: the connection was refused")
WHY_TIMEOUT = QT_TRANSLATE_NOOP("Ssh", "no answer in time")
WHY_NO_ROUTE = QT_TRANSLATE_NOOP("Ssh", "this computer has no route to it")
WHY_UNKNOWN_HOST = QT_TRANSLATE_NOOP("Ssh", "its name was not found")
WHY_CLOSED = QT_TRANSLATE_NOOP("Ssh", "the connection was closed before SSH answered")
WHY_NOT_SSH = QT_TRANSLATE_NOOP("Ssh", "what answers there does not speak SSH")
WHY_KEY_REFUSED = QT_TRANSLATE_NOOP("Ssh", "the key was not accepted")
WHY_PASSPHRASE = QT_TRANSLATE_NOOP("Ssh", "the key file needs its passphrase")
WHY_NO_KEYS = QT_TRANSLATE_NOOP("Ssh", "it does not accept SSH keys")
MSG_AUTH = QT_TRANSLATE_NOOP(
    "Ssh", "{target} refused the SSH key for user {user} ({detail}). Check the user name and "
    "that the machine was started with this key.")
MSG_NO_KEY = QT_TRANSLATE_NOOP(
    "Ssh", "No SSH key was given for {target}.")
MSG_NO_AUTH = QT_TRANSLATE_NOOP(
    "Ssh", "{target} was reached, but gpudesk has no key to log in as {user}: no key file is "
    "set and the ssh-agent offers none. This is an authentication problem, not the network: "
    "choose the machine's key file (Accounts → your own machines), or add the key to your "
    "ssh-agent (ssh-add).")
MSG_DROPPED = QT_TRANSLATE_NOOP(
    "Ssh", "The SSH connection to {target} dropped while {what}. gpudesk reconnects on the "
    "next step; try again.")
MSG_TIMEOUT = QT_TRANSLATE_NOOP(
    "Ssh", "{target} did not finish {what} within {seconds} seconds.")
MSG_FAILED = QT_TRANSLATE_NOOP(
    "Ssh", "{what} failed on {target} with exit status {status}: {stderr}")
MSG_BAD_URL = QT_TRANSLATE_NOOP(
    "Ssh", "'{text}' is not an SSH target; write it as ssh://user@host:port.")
MSG_CLOSED = QT_TRANSLATE_NOOP(
    "Ssh", "The connection to {target} was closed by gpudesk.")


class SshError(TemplatedError):
    """An SSH problem other than the host key; ``template``/``values`` for the translation."""

    translation_context = "Ssh"


class SshAuthError(SshError):
    pass


class SshUnreachable(SshError):
    pass


class SshDisconnected(SshError):
    """The connection dropped during an operation (which may have run partly)."""


class CommandFailed(SshError):
    def __init__(self, result: ExecResult, what: str, target: str) -> None:
        self.result = result
        super().__init__(MSG_FAILED, what=what, target=target, status=result.exit_status,
                         stderr=result.stderr.decode("utf-8", "replace").strip()[-400:])


@dataclass(frozen=True)
class SshTarget:
    """Where to log in and with which key. ``pin_name`` files the host key (default host:port)."""

    host: str
    port: int = 22
    user: str = "root"
    key_file: Path | None = None
    pkey: paramiko.PKey | None = field(default=None, repr=False, compare=False)
    pin_name: str = ""
    allow_agent: bool = False

    @property
    def known_as(self) -> str:
        return self.pin_name or host_pattern(self.host, self.port)

    def __str__(self) -> str:
        return f"{self.user}@{self.host}:{self.port}"

    @classmethod
    def parse(cls, url: str, *, key_file: Path | None = None, pin_name: str = "") -> SshTarget:
        """``ssh://user@host:port`` (the CLI's TARGET form); IPv6 hosts in brackets."""
        parts = urlsplit(url.strip())
        try:
            port = parts.port if parts.port is not None else 22
        except ValueError:
            port = -1
        if parts.scheme != "ssh" or not parts.hostname or port <= 0 or parts.path not in ("", "/"):
            raise SshError(MSG_BAD_URL, text=url.strip()[:120])
        return cls(host=parts.hostname, port=port, user=unquote(parts.username or "root"),
                   key_file=key_file, pin_name=pin_name)


@dataclass(frozen=True)
class ExecResult:
    exit_status: int
    stdout: bytes
    stderr: bytes

    @property
    def ok(self) -> bool:
        return self.exit_status == 0

    @property
    def text(self) -> str:
        return self.stdout.decode("utf-8", "replace")


def drain(chan: paramiko.Channel, deadline: float | None = None) -> tuple[bytes, bytes]:
    """Read stdout and stderr together until the remote side closes both (no window stall)."""
    out: list[bytes] = []
    err: list[bytes] = []
    while True:
        got = False
        while chan.recv_ready():
            out.append(chan.recv(1 << 20))
            got = True
        while chan.recv_stderr_ready():
            err.append(chan.recv_stderr(1 << 20))
            got = True
        if ((chan.eof_received or chan.closed) and not chan.recv_ready()
                and not chan.recv_stderr_ready()):
            break  # checked again after the flags: the last data may have come meanwhile
        if got:
            continue
        wait = 1.0 if deadline is None else min(1.0, deadline - time.monotonic())
        if wait <= 0:
            raise TimeoutError
        select.select([chan], [], [], wait)
    return b"".join(out), b"".join(err)


class SshConnection:
    """A lazily opened, reconnecting SSH connection to one target. Thread-safe."""

    def __init__(self, target: SshTarget, policy: HostKeyPolicy | None = None, *,
                 store: PinStore | None = None, keepalive_s: float = 15.0,
                 connect_timeout_s: float = 15.0, attempts: int = 5, backoff_s: float = 0.5,
                 backoff_max_s: float = 10.0, compress: bool = False) -> None:
        self.target = target
        self.policy = policy if policy is not None else HostKeyPolicy.refuse()
        self.store = store if store is not None else PinStore()
        self.keepalive_s = keepalive_s
        self.connect_timeout_s = connect_timeout_s
        self.attempts = max(1, attempts)
        self.backoff_s = backoff_s
        self.backoff_max_s = backoff_max_s
        self.compress = compress
        self.connects = 0  # successful connections; more than one means it reconnected
        self.exec_count = 0  # commands started (each is one round trip to the machine)
        self.host_key_fingerprint = ""
        self._client: paramiko.SSHClient | None = None
        self._lock = threading.RLock()
        self._closed = threading.Event()
        self._forwards: list[LocalForward] = []

    # ----------------------------------------------------------------- connecting

    def connect(self) -> SshConnection:
        self.transport()
        return self

    def transport(self) -> paramiko.Transport:
        """The live transport, (re)connecting with backoff when there is none."""
        with self._lock:
            client = self._client
            transport = client.get_transport() if client is not None else None
            if transport is not None and transport.is_active():
                return transport
            self._drop()
            return self._connect_with_backoff()

    def _connect_with_backoff(self) -> paramiko.Transport:
        delay = self.backoff_s
        detail = ""
        for attempt in range(1, self.attempts + 1):
            if self._closed.is_set():
                raise SshError(MSG_CLOSED, target=str(self.target))
            try:
                return self._connect_once()
            except (HostKeyError, SshAuthError):
                raise
            except (OSError, EOFError, paramiko.SSHException) as exc:
                detail = _describe(exc)
            if attempt < self.attempts and self._closed.wait(delay):
                break
            delay = min(delay * 2, self.backoff_max_s)
        raise SshUnreachable(MSG_UNREACHABLE if self.attempts > 1 else MSG_UNREACHABLE_ONCE,
                             target=str(self.target), attempts=self.attempts,
                             detail=detail[:200], port=self.target.port)

    def _connect_once(self) -> paramiko.Transport:
        target = self.target
        if target.pkey is None and target.key_file is None and not target.allow_agent:
            raise SshAuthError(MSG_NO_KEY, target=str(target))
        client = paramiko.SSHClient()
        lookup = host_pattern(target.host, target.port)
        pinned = self.store.host_keys(target.known_as, lookup)
        for name in pinned:
            for key_type, key in pinned[name].items():
                client.get_host_keys().add(name, key_type, key)
        client.set_missing_host_key_policy(PinningPolicy(self.store, target.known_as, self.policy))
        sock = _open_socket(target.host, target.port, self.connect_timeout_s, self.keepalive_s)
        try:
            client.connect(
                target.host, port=target.port, username=target.user, pkey=target.pkey, sock=sock,
                key_filename=str(target.key_file) if target.key_file else None,
                timeout=self.connect_timeout_s, banner_timeout=self.connect_timeout_s,
                auth_timeout=self.connect_timeout_s, allow_agent=target.allow_agent,
                look_for_keys=False, compress=self.compress)
        except paramiko.BadHostKeyException as exc:
            client.close()
            raise HostKeyChanged(target.known_as, [fingerprint(exc.expected_key)],
                                 fingerprint(exc.key)) from None
        except paramiko.AuthenticationException as exc:
            client.close()
            raise SshAuthError(MSG_AUTH, target=str(target), user=target.user,
                               detail=_auth_why(exc)) from None
        except paramiko.SSHException as exc:
            client.close()
            if "No authentication methods available" in str(exc):  # reached, but no key
                raise SshAuthError(MSG_NO_AUTH, target=str(target), user=target.user) from None
            raise
        except BaseException:
            client.close()
            raise
        transport = client.get_transport()
        assert transport is not None
        key = transport.get_remote_server_key()
        if self.policy.mode == "fingerprints" and not matches(key, self.policy.fingerprints):
            client.close()  # pinned earlier, but not what the caller says this machine has
            raise HostKeyMismatch(target.known_as, self.policy.fingerprints, fingerprint(key))
        transport.set_keepalive(max(1, int(self.keepalive_s)))
        self.host_key_fingerprint = fingerprint(key)
        self._client = client
        self.connects += 1
        return transport

    def _drop(self) -> None:
        client, self._client = self._client, None
        if client is not None:
            with contextlib.suppress(Exception):
                client.close()

    @property
    def connected(self) -> bool:
        client = self._client
        transport = client.get_transport() if client is not None else None
        return transport is not None and transport.is_active()

    def close(self) -> None:
        self._closed.set()
        for forward in list(self._forwards):
            forward.close()
        with self._lock:
            self._drop()

    def __enter__(self) -> SshConnection:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ----------------------------------------------------------------- channels

    def open_channel(self, kind: str = "session", dest: tuple[str, int] | None = None,
                     src: tuple[str, int] | None = None) -> paramiko.Channel:
        """A new channel; when the transport turns out dead, reconnect once and retry."""
        for attempt in (1, 2):
            transport = self.transport()
            try:
                return transport.open_channel(kind, dest, src, window_size=WINDOW_SIZE,
                                              max_packet_size=MAX_PACKET_SIZE,
                                              timeout=self.connect_timeout_s)
            except (OSError, EOFError, paramiko.SSHException):
                if attempt == 2 or transport.is_active():
                    raise
                with self._lock:
                    if self._client is not None and self._client.get_transport() is transport:
                        self._drop()
        raise AssertionError("unreachable")

    def start(self, command: str, what: str = "a command") -> paramiko.Channel:
        """Start ``command``; the caller reads/writes the channel and closes it."""
        chan = self.open_channel()
        try:
            chan.exec_command(command)
        except (OSError, EOFError, paramiko.SSHException) as exc:
            chan.close()
            raise SshDisconnected(MSG_DROPPED, target=str(self.target), what=what) from exc
        self.exec_count += 1
        return chan

    def exec(self, command: str, *, input: bytes | None = None, timeout: float | None = None,
             check: bool = False, what: str = "a command") -> ExecResult:
        """Run ``command`` and wait: exit status, stdout and stderr (read together)."""
        chan = self.start(command, what)
        writer: threading.Thread | None = None
        try:
            if input is not None:
                writer = threading.Thread(target=_feed, args=(chan, input), daemon=True)
                writer.start()
            else:
                chan.shutdown_write()
            deadline = None if timeout is None else time.monotonic() + timeout
            try:
                out, err = drain(chan, deadline)
            except TimeoutError:
                raise SshError(MSG_TIMEOUT, target=str(self.target), what=what,
                               seconds=timeout) from None
            status = chan.recv_exit_status()
        finally:
            chan.close()
            if writer is not None:
                writer.join(timeout=5)
        if status == -1:  # the server never sent one: the connection went away
            raise SshDisconnected(MSG_DROPPED, target=str(self.target), what=what)
        result = ExecResult(status, out, err)
        if check and not result.ok:
            raise CommandFailed(result, what, str(self.target))
        return result

    def sftp(self) -> paramiko.SFTPClient:
        """A new SFTP session on the shared connection; close it when done."""
        chan = self.open_channel()
        chan.invoke_subsystem("sftp")
        return paramiko.SFTPClient(chan)

    def forward_local(self, remote_port: int, *, remote_host: str = "127.0.0.1",
                      local_port: int = 0) -> LocalForward:
        """Listen on 127.0.0.1 (only) and tunnel each connection to the machine's port."""
        forward = LocalForward(self, remote_host, remote_port, local_port)
        self._forwards.append(forward)
        return forward


class _QuickAckSocket(socket.socket):
    """Acknowledges what it reads at once (Linux). SSH's small answers (the service accept,
    a channel's confirmation) otherwise wait for this side's delayed ACK behind the
    server's Nagle, ~40 ms each: a connect took 87 ms, an exec 52 ms; with this and no
    Nagle here from the first byte, 26-40 ms and 5-11 ms."""

    def recv(self, bufsize: int, flags: int = 0, /) -> bytes:
        data = super().recv(bufsize, flags)
        with contextlib.suppress(OSError):  # the kernel turns it off again by itself
            self.setsockopt(socket.IPPROTO_TCP, socket.TCP_QUICKACK, 1)
        return data


def _open_socket(host: str, port: int, timeout: float, keepalive_s: float) -> socket.socket:
    """The TCP connection paramiko talks over, tuned before the handshake's first byte."""
    sock = socket.create_connection((host, port), timeout=timeout)
    if hasattr(socket, "TCP_QUICKACK"):
        quick = _QuickAckSocket(sock.family, sock.type, sock.proto, fileno=sock.detach())
        quick.settimeout(timeout)
        sock = quick
    try:
        _tune_socket(sock, keepalive_s)
    except OSError:
        sock.close()
        raise
    return sock


def _tune_socket(sock: socket.socket, keepalive_s: float) -> None:
    """No Nagle delay; and a link that went silent (Wi-Fi changed, laptop woke) counts as
    dropped after about four keepalive periods instead of the kernel's 15 minutes, so a
    blocked read ends and the next step reconnects."""
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE, 1)
    period = max(1, int(keepalive_s))
    for name, value in (("TCP_KEEPIDLE", period), ("TCP_KEEPINTVL", period),
                        ("TCP_KEEPCNT", 3), ("TCP_USER_TIMEOUT", 4 * period * 1000)):
        option = getattr(socket, name, None)  # Linux has all four; macOS/Windows fewer
        if option is not None:
            with contextlib.suppress(OSError):
                sock.setsockopt(socket.IPPROTO_TCP, option, value)


def _describe(exc: BaseException) -> str:
    """Why the connection failed in plain words (a ``WHY_*`` value), not paramiko's wrapper
    nor a class name; an error without plain words gives the system's own text."""
    if isinstance(exc, paramiko.ssh_exception.NoValidConnectionsError) and exc.errors:
        exc = next(iter(exc.errors.values()))
    if isinstance(exc, ConnectionRefusedError):
        return WHY_REFUSED
    if isinstance(exc, TimeoutError | socket.timeout):
        return WHY_TIMEOUT
    if isinstance(exc, socket.gaierror):
        return WHY_UNKNOWN_HOST
    if isinstance(exc, OSError) and exc.errno in (errno.EHOSTUNREACH, errno.ENETUNREACH):
        return WHY_NO_ROUTE
    if isinstance(exc, EOFError | ConnectionResetError | ConnectionAbortedError):
        return WHY_CLOSED
    if isinstance(exc, paramiko.SSHException) and "protocol banner" in str(exc):
        return WHY_NOT_SSH
    if isinstance(exc, OSError) and exc.strerror:
        return exc.strerror
    return str(exc) or WHY_CLOSED


def _auth_why(exc: paramiko.AuthenticationException) -> str:
    """Why the login was refused in plain words, not ``AuthenticationException``."""
    if isinstance(exc, paramiko.PasswordRequiredException):
        return WHY_PASSPHRASE
    if isinstance(exc, paramiko.BadAuthenticationType) and "publickey" not in exc.allowed_types:
        return WHY_NO_KEYS
    return WHY_KEY_REFUSED


def _feed(chan: paramiko.Channel, data: bytes) -> None:
    with contextlib.suppress(OSError, EOFError, paramiko.SSHException):
        chan.sendall(data)
        chan.shutdown_write()


class LocalForward:
    """``ssh -L 127.0.0.1:local:remote_host:remote_port`` over the shared connection.

    Each accepted connection opens a ``direct-tcpip`` channel on the connection's
    current transport, so a tunnel keeps working after a reconnect.
    """

    def __init__(self, conn: SshConnection, remote_host: str, remote_port: int,
                 local_port: int = 0) -> None:
        self.conn = conn
        self.remote_host = remote_host
        self.remote_port = remote_port
        self._listener = socket.create_server(("127.0.0.1", local_port))
        self._listener.settimeout(0.25)  # how often the accept loop looks at `closed`
        self.local_port: int = self._listener.getsockname()[1]
        self._closed = threading.Event()
        self._thread = threading.Thread(target=self._accept_loop, daemon=True,
                                        name=f"gpudesk-forward-{self.local_port}")
        self._thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.local_port}/"

    def _accept_loop(self) -> None:
        while not self._closed.is_set():
            try:
                client, peer = self._listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            threading.Thread(target=self._serve, args=(client, peer), daemon=True).start()

    def _serve(self, client: socket.socket, peer: tuple[str, int]) -> None:
        try:
            chan = self.conn.open_channel("direct-tcpip", (self.remote_host, self.remote_port),
                                          peer)
        except (OSError, EOFError, paramiko.SSHException, SshError, HostKeyError):
            client.close()
            return
        _pump(client, chan, self._closed)

    def close(self) -> None:
        self._closed.set()
        self._listener.close()
        self._thread.join(timeout=2)
        with contextlib.suppress(ValueError):
            self.conn._forwards.remove(self)

    def __enter__(self) -> LocalForward:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _pass_on(source: socket.socket | paramiko.Channel, dest: socket.socket | paramiko.Channel,
             half_close: Callable[[], object]) -> bool:
    """One read of ``source`` sent on to ``dest``; at its end, ``half_close`` and False."""
    data = source.recv(1 << 16)
    if data:
        dest.sendall(data)
        return True
    half_close()
    return False


def _shutdown_write(sock: socket.socket) -> None:
    with contextlib.suppress(OSError):
        sock.shutdown(socket.SHUT_WR)


def _pump(sock: socket.socket, chan: paramiko.Channel, stop: threading.Event) -> None:
    """Copy both ways, passing half-closes on, until both sides are done."""
    local_open = remote_open = True
    try:
        while (local_open or remote_open) and not stop.is_set():
            watch: list[Any] = ([sock] if local_open else []) + ([chan] if remote_open else [])
            ready, _, _ = select.select(watch, [], [], 0.5)
            if sock in ready:
                local_open = _pass_on(sock, chan, chan.shutdown_write)
            if chan in ready:
                remote_open = _pass_on(chan, sock, lambda: _shutdown_write(sock))
            if chan.closed and not remote_open:
                break  # the machine's side is gone and all it sent has been passed on
    except (OSError, EOFError, paramiko.SSHException):
        pass
    finally:
        chan.close()
        sock.close()


# --------------------------------------------------------------------------- sharing

class SshPool:
    """One connection per (user, host, port, pin) for the whole app."""

    def __init__(self, factory: Callable[..., SshConnection] = SshConnection) -> None:
        self._factory = factory
        self._conns: dict[tuple[str, str, int, str], SshConnection] = {}
        self._lock = threading.Lock()

    def get(self, target: SshTarget, policy: HostKeyPolicy | None = None) -> SshConnection:
        key = (target.user, target.host, target.port, target.known_as)
        with self._lock:
            conn = self._conns.get(key)
            if conn is None or conn._closed.is_set():
                conn = self._factory(target, policy)
                self._conns[key] = conn
            elif policy is not None:
                conn.policy = policy
            return conn

    def close(self, target: SshTarget) -> None:
        key = (target.user, target.host, target.port, target.known_as)
        with self._lock:
            conn = self._conns.pop(key, None)
        if conn is not None:
            conn.close()

    def close_all(self) -> None:
        with self._lock:
            conns, self._conns = list(self._conns.values()), {}
        for conn in conns:
            conn.close()


POOL = SshPool()


def shared(target: SshTarget, policy: HostKeyPolicy | None = None) -> SshConnection:
    """The app's one connection to ``target`` (created on first use, connected lazily)."""
    return POOL.get(target, policy)
