"""Pinned SSH host keys: what gpudesk trusts, and what it does with a key it has not seen.

Pins live in one OpenSSH-format ``known_hosts`` file under the data folder, so
``ssh`` and VS Code (through the managed ssh_config) trust exactly what gpudesk
trusts. Each pin is filed under a *name*: ``gpudesk-<machine>`` for a machine in
the ledger (so a cloud IP handed to a new instance is not mistaken for the old
one), or the OpenSSH ``host`` / ``[host]:port`` form for an ad-hoc target.

A key that differs from its pin is always refused (:class:`HostKeyChanged`,
with both fingerprints); there is no "accept anything" mode. For a key with no
pin the :class:`HostKeyPolicy` decides: pin it (trust on first use), accept it
only if it matches a fingerprint known beforehand (``--host-key SHA256:...``
or the AWS console output), ask the user, or refuse.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import re
import threading
from collections.abc import Callable
from collections.abc import Iterable
from collections.abc import Iterator
from dataclasses import dataclass
from dataclasses import field
from pathlib import Path
from typing import Literal

import paramiko

from gpudesk.i18n_marks import QT_TRANSLATE_NOOP
from gpudesk.services.core import paths
from gpudesk.services.core.errors import TemplatedError
from gpudesk.services.core.files import atomic_write_text

KNOWN_HOSTS_NAME = "known_hosts"

MSG_CHANGED = QT_TRANSLATE_NOOP(
    "HostKey", "The host key of {host} has changed: it was pinned as {expected}, but the "
    "machine now offers {offered}. gpudesk refused to connect, because this is what an "
    "attacker in the middle would look like. If the machine was rebuilt, forget its pinned "
    "key and connect again.")
MSG_UNKNOWN = QT_TRANSLATE_NOOP(
    "HostKey", "{host} offered a host key that is not pinned ({offered}), and gpudesk was told "
    "not to trust new keys. Give its fingerprint, or allow pinning on first use.")
MSG_DECLINED = QT_TRANSLATE_NOOP(
    "HostKey", "The host key of {host} ({offered}) was not accepted; nothing was sent.")
MSG_MISMATCH = QT_TRANSLATE_NOOP(
    "HostKey", "{host} offered the host key {offered}, which is not the expected {expected}. "
    "gpudesk refused to connect.")
MSG_BAD_FINGERPRINT = QT_TRANSLATE_NOOP(
    "HostKey", "'{text}' is not a host key fingerprint; expected SHA256: followed by 43 "
    "characters, as ssh-keygen -l prints it.")


class HostKeyError(TemplatedError):
    """A host key gpudesk will not trust; ``template``/``values`` for the translated message."""

    translation_context = "HostKey"


class _NotExpected(HostKeyError):
    """A key other than the ones expected of the host; each subclass says why it expected them."""

    said = ""  # the subclass's template

    def __init__(self, host: str, expected: Iterable[str], offered: str) -> None:
        self.host = host
        self.expected = tuple(expected)
        self.offered = offered
        super().__init__(self.said, host=host, expected=", ".join(self.expected),
                         offered=offered)


class HostKeyChanged(_NotExpected):
    """The machine offers a different key than the one pinned for it."""

    said = MSG_CHANGED


class HostKeyUnknown(HostKeyError):
    """No pin, and the policy (or the user) did not allow pinning this key."""

    def __init__(self, host: str, offered: str, *, declined: bool = False) -> None:
        self.host = host
        self.offered = offered
        super().__init__(MSG_DECLINED if declined else MSG_UNKNOWN, host=host, offered=offered)


class HostKeyMismatch(_NotExpected):
    """The key is not one of the fingerprints the caller said to expect."""

    said = MSG_MISMATCH


# --------------------------------------------------------------------------- fingerprints

_SHA256 = re.compile(r"^SHA256:([A-Za-z0-9+/]{43})=?$")
_MD5 = re.compile(r"^(?:MD5:)?((?:[0-9a-fA-F]{2}:){15}[0-9a-fA-F]{2})$")


def fingerprint(key: paramiko.PKey) -> str:
    """``SHA256:<base64>`` as ``ssh-keygen -l`` and cloud-init print it."""
    digest = hashlib.sha256(key.asbytes()).digest()
    return "SHA256:" + base64.b64encode(digest).decode("ascii").rstrip("=")


def md5_fingerprint(key: paramiko.PKey) -> str:
    """The old ``MD5:aa:bb:...`` form, which some older images print on the console."""
    hexed = hashlib.md5(key.asbytes(), usedforsecurity=False).hexdigest()
    return "MD5:" + ":".join(hexed[i:i + 2] for i in range(0, 32, 2))


def normalize_fingerprint(text: str) -> str:
    """Canonical form of a user- or console-given fingerprint; HostKeyError when it is none."""
    value = text.strip()
    if match := _SHA256.match(value):
        return "SHA256:" + match.group(1)
    if match := _MD5.match(value):
        return "MD5:" + match.group(1).lower()
    raise HostKeyError(MSG_BAD_FINGERPRINT, text=value[:80])


def matches(key: paramiko.PKey, fingerprints: Iterable[str]) -> bool:
    wanted = set(fingerprints)
    return fingerprint(key) in wanted or md5_fingerprint(key) in wanted


def host_pattern(host: str, port: int = 22) -> str:
    """The name OpenSSH files ``host:port`` under in known_hosts."""
    return host if port == 22 else f"[{host}]:{port}"


# --------------------------------------------------------------------------- console output

BEGIN_FINGERPRINTS = "-----BEGIN SSH HOST KEY FINGERPRINTS-----"
END_FINGERPRINTS = "-----END SSH HOST KEY FINGERPRINTS-----"
_CONSOLE_LINE = re.compile(
    r"(?P<bits>\d+)\s+(?P<fp>SHA256:[A-Za-z0-9+/]{43}=?|(?:MD5:)?(?:[0-9a-fA-F]{2}:){15}"
    r"[0-9a-fA-F]{2})(?:\s+(?P<comment>.*?))?\s*(?:\((?P<type>[A-Za-z0-9-]+)\))?\s*$")


@dataclass(frozen=True)
class ConsoleFingerprint:
    """One line of cloud-init's fingerprint block, e.g. ``256 SHA256:... root@ip (ECDSA)``."""

    bits: int
    fingerprint: str
    key_type: str  # "ECDSA", "ED25519", "RSA", ... as printed; may be empty
    comment: str = ""


def parse_console_fingerprints(console: str) -> list[ConsoleFingerprint]:
    """The host key fingerprints cloud-init printed on the console (last complete block).

    Lines may carry a kernel/syslog prefix (``[  12.3] cloud-init[123]: ec2: ``);
    the fingerprint is found anywhere on the line. An empty, truncated or
    missing block gives ``[]``: the caller then falls back to another policy.
    """
    blocks: list[list[str]] = []
    current: list[str] | None = None
    for line in console.splitlines():
        if BEGIN_FINGERPRINTS in line:
            current = []
        elif END_FINGERPRINTS in line:
            if current is not None:
                blocks.append(current)
            current = None
        elif current is not None:
            current.append(line)
    if not blocks:
        return []
    found: list[ConsoleFingerprint] = []
    for line in blocks[-1]:
        match = _CONSOLE_LINE.search(line)
        if match is None:
            continue
        found.append(ConsoleFingerprint(
            bits=int(match.group("bits")), fingerprint=normalize_fingerprint(match.group("fp")),
            key_type=(match.group("type") or "").upper(),
            comment=(match.group("comment") or "").strip()))
    return found


# --------------------------------------------------------------------------- policy

PolicyMode = Literal["refuse", "accept-new", "fingerprints", "ask"]
AskFn = Callable[[str, str, str], bool]  # (name, fingerprint, key type) -> trust it?


@dataclass(frozen=True)
class HostKeyPolicy:
    """What to do with a key that has no pin yet. A changed pinned key is refused in every mode.

    ``ask`` runs on the connecting (worker) thread; a window must hand it to the
    GUI thread and wait for the answer.
    """

    mode: PolicyMode = "refuse"
    fingerprints: tuple[str, ...] = ()
    ask: AskFn | None = field(default=None, compare=False, repr=False)

    @classmethod
    def refuse(cls) -> HostKeyPolicy:
        return cls("refuse")

    @classmethod
    def accept_new(cls) -> HostKeyPolicy:
        """Trust on first use: pin the first key seen, refuse any later change."""
        return cls("accept-new")

    @classmethod
    def expect(cls, *fingerprints: str) -> HostKeyPolicy:
        """Accept (and pin) only a key with one of these fingerprints."""
        return cls("fingerprints", tuple(normalize_fingerprint(fp) for fp in fingerprints))

    @classmethod
    def ask_user(cls, ask: AskFn) -> HostKeyPolicy:
        return cls("ask", ask=ask)

    @classmethod
    def from_console(cls, console: str, fallback: HostKeyPolicy | None = None) -> HostKeyPolicy:
        """Expect cloud-init's fingerprints when it printed them, else ``fallback`` (refuse)."""
        found = parse_console_fingerprints(console)
        if found:
            return cls("fingerprints", tuple(item.fingerprint for item in found))
        return fallback if fallback is not None else cls.refuse()


# --------------------------------------------------------------------------- the pin file

_LOCK = threading.Lock()  # one writer at a time in this process; the file itself is replaced


def known_hosts_file() -> Path:
    return paths.data_dir() / KNOWN_HOSTS_NAME


def _parse_line(line: str) -> tuple[list[str], paramiko.PKey] | None:
    fields = line.split()
    if len(fields) < 3 or line.lstrip().startswith(("#", "@", "|")):
        return None
    try:
        key = paramiko.PKey.from_type_string(fields[1], base64.b64decode(fields[2]))
    except (paramiko.SSHException, ValueError, TypeError):
        return None
    return fields[0].split(","), key


class PinStore:
    """The known_hosts file: read on every query, rewritten atomically on every change."""

    def __init__(self, path: Path | None = None) -> None:
        self._path = path

    @property
    def path(self) -> Path:
        return self._path if self._path is not None else known_hosts_file()

    def _lines(self) -> list[str]:
        try:
            return self.path.read_text(encoding="utf-8").splitlines(keepends=True)
        except FileNotFoundError:
            return []

    def keys(self, name: str) -> list[paramiko.PKey]:
        found: list[paramiko.PKey] = []
        for line in self._lines():
            parsed = _parse_line(line)
            if parsed is not None and name in parsed[0]:
                found.append(parsed[1])
        return found

    def fingerprints(self, name: str) -> list[str]:
        return [fingerprint(key) for key in self.keys(name)]

    def names(self) -> list[str]:
        names: list[str] = []
        for line in self._lines():
            parsed = _parse_line(line)
            if parsed is not None:
                names.extend(n for n in parsed[0] if n not in names)
        return names

    def pin(self, name: str, key: paramiko.PKey) -> None:
        """Trust ``key`` for ``name`` (replacing a pinned key of the same type only)."""
        with _LOCK:
            kept = [line for line in self._lines() if not self._is(line, name, key.get_name())]
            kept.append(f"{name} {key.get_name()} {key.get_base64()}\n")
            self._write(kept)

    def forget(self, name: str) -> bool:
        """Drop every pin of ``name`` (a rebuilt machine); True when something was pinned."""
        with _LOCK:
            lines = self._lines()
            kept = [line for line in lines if not self._is(line, name, None)]
            if len(kept) != len(lines):
                self._write(kept)
            return len(kept) != len(lines)

    @contextlib.contextmanager
    def kept_if_ok(self, name: str) -> Iterator[None]:
        """Pins of ``name`` made inside the block stay only if it ends without an error.

        A first login accepts the host key before it authenticates; when the login (or
        what follows it) then fails, the key it offered must not stay trusted: the pins of
        ``name`` are put back as they were.
        """
        before = [line for line in self._lines() if self._is(line, name, None)]
        try:
            yield
        except BaseException:
            with _LOCK:
                lines = self._lines()
                now = [line for line in lines if self._is(line, name, None)]
                if now != before:
                    self._write([line for line in lines if not self._is(line, name, None)]
                                + before)
            raise

    @staticmethod
    def _is(line: str, name: str, key_type: str | None) -> bool:
        parsed = _parse_line(line)
        return (parsed is not None and parsed[0] == [name]
                and (key_type is None or parsed[1].get_name() == key_type))

    def _write(self, lines: list[str]) -> None:
        atomic_write_text(self.path, "".join(lines))

    def host_keys(self, name: str, lookup_name: str) -> paramiko.HostKeys:
        """The pins of ``name`` filed under ``lookup_name``, the name paramiko looks up."""
        host_keys = paramiko.HostKeys()
        for key in self.keys(name):
            host_keys.add(lookup_name, key.get_name(), key)
        return host_keys


class PinningPolicy(paramiko.MissingHostKeyPolicy):
    """paramiko's hook for a key with no pin: applies a HostKeyPolicy, pins what it accepts."""

    def __init__(self, store: PinStore, name: str, policy: HostKeyPolicy) -> None:
        self.store = store
        self.name = name
        self.policy = policy
        self.pinned_now = False

    def missing_host_key(self, client: paramiko.SSHClient, hostname: str,
                         key: paramiko.PKey) -> None:
        offered = fingerprint(key)
        policy = self.policy
        if policy.mode == "fingerprints":
            if not matches(key, policy.fingerprints):
                raise HostKeyMismatch(self.name, policy.fingerprints, offered)
        elif policy.mode == "ask":
            if policy.ask is None or not policy.ask(self.name, offered, key.get_name()):
                raise HostKeyUnknown(self.name, offered, declined=True)
        elif policy.mode != "accept-new":
            raise HostKeyUnknown(self.name, offered)
        self.store.pin(self.name, key)
        self.pinned_now = True
