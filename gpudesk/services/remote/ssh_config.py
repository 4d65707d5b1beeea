"""A gpudesk-managed OpenSSH config, so ``ssh gpudesk-<name>`` and VS Code Remote-SSH work.

:func:`write_managed_config` writes ``<config dir>/ssh/config`` with one
``Host gpudesk-<name>`` block per reachable ledger machine: HostName, User,
Port, ``HostKeyAlias gpudesk-<name>`` (the name ``host_keys`` files the pin
under), ``UserKnownHostsFile`` = gpudesk's own known_hosts and
``StrictHostKeyChecking yes``, so OpenSSH trusts exactly the keys gpudesk
pinned and refuses any other. The file is replaced atomically (temp, fsync,
rename), mode 0600. :func:`add_include` puts one ``Include`` line at the top of
``~/.ssh/config`` (first, so its settings win over a later ``Host *``), only
when called with ``consent=True``; the rest of the user's file stays
byte-for-byte as it was. :func:`remove_include` takes the line out again.

Keys. The private keys of machines gpudesk launched live only in the OS
keyring, which OpenSSH cannot read. gpudesk does *not* write them to a file
(a secret on disk is what the design rules out). Instead, on request
(``gpudesk ssh-config --agent``) :func:`add_keys_to_agent` hands each key to
the user's running ssh-agent through ``ssh-add -`` (the key on stdin, never a
file or argv), optionally with a lifetime, and writes only the *public* half
next to the managed file; the block then says ``IdentityFile <key>.pub`` with
``IdentitiesOnly yes``, which makes ssh ask the agent for exactly that key.
Without an agent the block has no key and ssh says so. For your own machines
the key file you name (``--identity NAME=KEY_FILE``) is remembered (its path,
in ``identities.json``) and used as ``IdentityFile``; with none given, ssh
uses your usual keys and agent, as it does for those machines today.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
from collections.abc import Callable
from collections.abc import Iterable
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from gpudesk.i18n_marks import QT_TRANSLATE_NOOP
from gpudesk.services.cloud.providers.base import STATE_RUNNING
from gpudesk.services.core import paths
from gpudesk.services.core.errors import TemplatedError
from gpudesk.services.core.files import atomic_write_bytes
from gpudesk.services.money.ledger import STATE_READY
from gpudesk.services.money.ledger import Machine

HOST_PREFIX = "gpudesk-"
MANAGED_NAME = "config"
IDENTITIES_NAME = "identities.json"

MSG_NO_CONSENT = QT_TRANSLATE_NOOP(
    "SshConfig", "gpudesk did not change {config}: adding the Include line needs your consent.")
MSG_BAD_PATH = QT_TRANSLATE_NOOP(
    "SshConfig", "The path {path} cannot be written into an OpenSSH config (it contains "
    "a quote, a wildcard or a line break). Set GPUDESK_HOME to a simpler folder.")
MSG_NO_AGENT = QT_TRANSLATE_NOOP(
    "SshConfig", "No ssh-agent is running for this session ({detail}). Start one (eval "
    "\"$(ssh-agent)\", or the OpenSSH Authentication Agent service on Windows) and try again.")
MSG_AGENT_FAILED = QT_TRANSLATE_NOOP(
    "SshConfig", "ssh-add refused the key {key} (exit status {status}): {detail}")
MSG_NO_SSH_ADD = QT_TRANSLATE_NOOP(
    "SshConfig", "ssh-add was not found. Install the OpenSSH client and try again.")
MSG_NO_IDENTITY = QT_TRANSLATE_NOOP(
    "SshConfig", "The key file {path} does not exist.")
MSG_NO_KEY = QT_TRANSLATE_NOOP(
    "SshConfig", "The keyring has no SSH key '{key}': it is created when gpudesk launches a "
    "machine.")

_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")
_BAD_PATH_CHARS = set('"*?[]\n\r')


class SshConfigError(TemplatedError):
    translation_context = "SshConfig"


# --------------------------------------------------------------------------- names and paths

def host_alias(machine: Machine) -> str:
    """``gpudesk-<name>``: letters, digits, ``.``, ``_``, ``-`` only (no spaces or wildcards).

    For a name already made of those it equals the pin name ``cli_remote`` files the
    host key under (``gpudesk-<name or id>``), so ``HostKeyAlias`` finds the pin.
    """
    raw = machine.name or machine.id
    clean = _UNSAFE.sub("-", raw).strip("-.")[:60] or _UNSAFE.sub("-", machine.id)
    return HOST_PREFIX + clean


def managed_dir() -> Path:
    return paths.config_dir() / "ssh"


def managed_file() -> Path:
    return managed_dir() / MANAGED_NAME


def user_ssh_config() -> Path:
    return Path.home() / ".ssh" / "config"


def _check_path(path: Path) -> str:
    text = path.as_posix()
    if _BAD_PATH_CHARS & set(text):
        raise SshConfigError(MSG_BAD_PATH, path=text)
    return text


def _quoted(path: Path, *, tokens: bool = True) -> str:
    """A path as one ssh_config argument; ``%`` doubled where ssh expands %-tokens."""
    text = _check_path(path)
    if tokens:
        text = text.replace("%", "%%")
    return f'"{text}"'


# --------------------------------------------------------------------------- identities

def _identities_file() -> Path:
    return managed_dir() / IDENTITIES_NAME


def remembered_identities() -> dict[str, Path]:
    """Key file paths (not keys) given for own machines, by ledger id."""
    try:
        data = json.loads(_identities_file().read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    if not isinstance(data, dict):
        return {}
    return {str(k): Path(str(v)) for k, v in data.items()}


def remember_identity(machine_id: str, key_file: Path) -> None:
    key_file = Path(key_file).expanduser().resolve()
    if not key_file.is_file():
        raise SshConfigError(MSG_NO_IDENTITY, path=str(key_file))
    known = {k: str(v) for k, v in remembered_identities().items()}
    known[machine_id] = str(key_file)
    atomic_write_bytes(_identities_file(), (json.dumps(known, indent=1) + "\n").encode())


def cloud_key_name(machine: Machine) -> str:
    """The keyring entry of the key gpudesk launched this machine with (as cli_remote uses)."""
    from gpudesk.services.cloud.credentials import KEY_KINDS
    from gpudesk.services.cloud.credentials import key_kind_for

    return KEY_KINDS[key_kind_for(machine.provider)]


def public_key_file(key_name: str) -> Path:
    return managed_dir() / f"{_UNSAFE.sub('-', key_name)}.pub"


# --------------------------------------------------------------------------- the managed file

@dataclass(frozen=True)
class HostBlock:
    alias: str
    machine_id: str
    host: str
    user: str
    port: int
    identity_file: Path | None
    note: str = ""  # a comment line, e.g. how to get the key into the agent


def reachable(machine: Machine) -> bool:
    """Worth a Host block: has an address, and is running (cloud) or ready (own)."""
    if not machine.public_ip or machine.ended:
        return False
    return machine.state == (STATE_READY if machine.provider == "own" else STATE_RUNNING)


def blocks_for(machines: Iterable[Machine],
               identities: Mapping[str, Path] | None = None) -> list[HostBlock]:
    """One block per reachable machine; a repeated alias gets the ledger id instead."""
    known = {**remembered_identities(), **(identities or {})}
    seen: set[str] = set()
    out: list[HostBlock] = []
    for m in machines:
        if not reachable(m):
            continue
        alias = host_alias(m)
        if alias in seen:
            alias = HOST_PREFIX + _UNSAFE.sub("-", m.id)
        seen.add(alias)
        identity = known.get(m.id)
        if identity is None and m.key_file:  # the machine profile's key file
            identity = Path(m.key_file).expanduser()
        note = ""
        if identity is None and m.provider != "own":
            key = cloud_key_name(m)
            pub = public_key_file(key)
            if pub.is_file():
                identity = pub
            else:
                note = "key in the keyring: run `gpudesk ssh-config --agent` to use it here"
        user = m.ssh_user.strip() or ("root" if m.provider == "own" else "")
        if not user:  # a cloud image that did not say who logs in: never a guess
            note = f"login user unknown: set it with `gpudesk login-user {m.id} USER`"
        out.append(HostBlock(alias, m.id, m.public_ip, user, m.ssh_port or 22, identity, note))
    return out


def render(blocks: Iterable[HostBlock], known_hosts: Path) -> str:
    lines = ["# Written by gpudesk (gpudesk ssh-config); replaced on every update: do not edit.",
             "# Host keys: only those gpudesk pinned; any other key is refused.", ""]
    for b in blocks:
        lines.append(f"Host {b.alias}")
        if b.note:
            lines.append(f"    # {b.note}")
        # no User line for an unknown login user: ssh then asks for the local user's name,
        # which fails visibly rather than logging in as a guessed one
        lines += [f"    HostName {b.host}"] + ([f"    User {b.user}"] if b.user else []) + [
                  f"    Port {b.port}",
                  f"    HostKeyAlias {b.alias}",
                  f"    UserKnownHostsFile {_quoted(known_hosts)}",
                  "    GlobalKnownHostsFile none",
                  "    StrictHostKeyChecking yes",
                  "    ServerAliveInterval 15"]
        if b.identity_file is not None:
            lines += [f"    IdentityFile {_quoted(b.identity_file)}", "    IdentitiesOnly yes"]
        lines.append("")
    return "\n".join(lines)


@dataclass(frozen=True)
class ManagedConfig:
    path: Path
    blocks: tuple[HostBlock, ...]
    changed: bool


def write_managed_config(machines: Iterable[Machine], *,
                         identities: Mapping[str, Path] | None = None,
                         path: Path | None = None,
                         known_hosts: Path | None = None) -> ManagedConfig:
    """Write the managed file (atomically, 0600); unchanged content is not rewritten."""
    from gpudesk.services.remote.host_keys import known_hosts_file

    target = path if path is not None else managed_file()
    blocks = tuple(blocks_for(machines, identities))
    text = render(blocks, known_hosts if known_hosts is not None else known_hosts_file())
    data = text.encode("utf-8")
    try:
        same = target.read_bytes() == data
    except OSError:
        same = False
    if not same:
        atomic_write_bytes(target, data, 0o600)
    return ManagedConfig(target, blocks, not same)


# --------------------------------------------------------------------------- the Include line

IncludeState = Literal["added", "present", "removed", "absent"]


def include_line(managed: Path | None = None) -> str:
    # Include expands ~ and globs but no %-tokens; the path must hold no glob characters.
    return f"Include {_quoted(managed if managed is not None else managed_file(), tokens=False)}"


def _real(config: Path) -> Path:
    """The file a symlinked ~/.ssh/config points at (dotfile managers), so the link stays."""
    return config.resolve() if config.is_symlink() else config


def _is_our_line(line: bytes, managed: Path) -> bool:
    words = line.strip().split(None, 1)
    if len(words) != 2 or words[0].lower() != b"include":
        return False
    arg = words[1].strip().strip(b'"').decode("utf-8", "replace")
    return arg == managed.as_posix()


def has_include(config: Path | None = None, managed: Path | None = None) -> bool:
    config = _real(config if config is not None else user_ssh_config())
    managed = managed if managed is not None else managed_file()
    try:
        data = config.read_bytes()
    except FileNotFoundError:
        return False
    return any(_is_our_line(line, managed) for line in data.splitlines())


def add_include(*, consent: bool, config: Path | None = None,
                managed: Path | None = None) -> IncludeState:
    """Put ``Include <managed>`` first in ``~/.ssh/config``: only with consent, only once."""
    config = config if config is not None else user_ssh_config()
    managed = managed if managed is not None else managed_file()
    if not consent:
        raise SshConfigError(MSG_NO_CONSENT, config=str(config))
    if has_include(config, managed):
        return "present"
    real = _real(config)
    line = include_line(managed).encode("utf-8")
    if not real.parent.exists():
        real.parent.mkdir(mode=0o700, parents=True)
        os.chmod(real.parent, 0o700)
    try:
        old = real.read_bytes()
        mode = real.stat().st_mode & 0o777
    except FileNotFoundError:
        old, mode = b"", 0o600
    newline = b"\r\n" if b"\r\n" in old else b"\n"
    atomic_write_bytes(real, line + newline + old, mode)
    return "added"


def remove_include(*, config: Path | None = None, managed: Path | None = None) -> IncludeState:
    """Take gpudesk's Include line(s) out again; every other byte stays."""
    config = config if config is not None else user_ssh_config()
    managed = managed if managed is not None else managed_file()
    real = _real(config)
    try:
        old = real.read_bytes()
        mode = real.stat().st_mode & 0o777
    except FileNotFoundError:
        return "absent"
    lines = old.splitlines(keepends=True)
    kept = [ln for ln in lines if not _is_our_line(ln, managed)]
    if len(kept) == len(lines):
        return "absent"
    atomic_write_bytes(real, b"".join(kept), mode)
    return "removed"


# --------------------------------------------------------------------------- ssh-agent

KeyLoader = Callable[[str], str | None]


def _keyring_pem(name: str) -> str | None:
    from gpudesk.services.cloud.credentials import load_private_key

    return load_private_key(name)


def add_keys_to_agent(key_names: Iterable[str], *, lifetime_s: int | None = None,
                      load: KeyLoader = _keyring_pem, ssh_add: str = "ssh-add",
                      env: Mapping[str, str] | None = None) -> list[Path]:
    """Give each keyring key to the running ssh-agent (on stdin) and write its public half.

    Returns the public key files written; the managed file's blocks point at them.
    """
    from gpudesk.services.cloud.credentials import private_key_from_pem

    written: list[Path] = []
    for name in dict.fromkeys(key_names):
        pem = load(name)
        if not pem:
            raise SshConfigError(MSG_NO_KEY, key=name)
        key = private_key_from_pem(pem)
        argv = [ssh_add, "-q"] + (["-t", str(int(lifetime_s))] if lifetime_s else []) + ["-"]
        try:
            proc = subprocess.run(argv, input=pem.encode("ascii"), capture_output=True,
                                  timeout=30, env=dict(env) if env is not None else None,
                                  check=False)
        except FileNotFoundError:
            raise SshConfigError(MSG_NO_SSH_ADD) from None
        detail = (proc.stderr or proc.stdout).decode("utf-8", "replace").strip()[-200:]
        if proc.returncode == 2 or "connection to your authentication agent" in detail:
            raise SshConfigError(MSG_NO_AGENT, detail=detail or "ssh-add exit status 2")
        if proc.returncode != 0:
            raise SshConfigError(MSG_AGENT_FAILED, key=name, status=proc.returncode,
                                 detail=detail)
        pub = public_key_file(name)
        atomic_write_bytes(pub, f"{key.get_name()} {key.get_base64()} gpudesk-{name}\n"
                           .encode("ascii"), 0o644)
        written.append(pub)
    return written
