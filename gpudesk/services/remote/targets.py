"""Where a TARGET points: an ``ssh://user@host:port`` address, or a machine in the ledger.

Shared by the CLI verbs and the window, so both reach a machine the same way:
a launched machine's key comes from the keyring (never a file), an own machine
uses its key file or the SSH agent, and the host-key pin is named after the
machine (``gpudesk-<name>``) so that a swapped key is caught whatever the address.

Every connection to a machine gpudesk launched also finishes its first login when that
never happened or did not finish (``host_key_rotation.rotate_if_due``): the host key from
its user data is replaced once, at whichever connect comes first.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from gpudesk.i18n_marks import QT_TRANSLATE_NOOP
from gpudesk.services.money.ledger import Machine
from gpudesk.services.remote.host_key_rotation import RotationConfig
from gpudesk.services.remote.host_keys import HostKeyPolicy
from gpudesk.services.remote.host_keys import PinStore
from gpudesk.services.remote.ssh import MSG_NO_LOGIN_USER
from gpudesk.services.remote.ssh import SshConnection
from gpudesk.services.remote.ssh import SshError
from gpudesk.services.remote.ssh import SshTarget

MSG_NO_KEY_FILE = QT_TRANSLATE_NOOP("Ssh", "The SSH key file {target} does not exist.")
# A launched or adopted machine whose login user neither the ledger nor its image says: never
# a guess ("root" is wrong on Ubuntu images, "ubuntu" on Alibaba Cloud's), but how to say it.
MSG_LOGIN_UNKNOWN = QT_TRANSLATE_NOOP(
    "Ssh", "login user unknown")
MSG_LOGIN_HOW = QT_TRANSLATE_NOOP(
    "Ssh", "Set it with: gpudesk login-user {machine} USER (root on Alibaba Cloud and most "
    "Tencent Cloud images, ubuntu on Ubuntu images, ec2-user on Amazon Linux).")
CLOUDS = ("aws", "tencent", "aliyun")


def resolve(ref: str, identity: Path | None = None) -> SshTarget:
    """The SshTarget for ``ref`` (ledger id, cloud id or name, or ssh://...)."""
    return _resolve(ref, identity)[0]


def _resolve(ref: str, identity: Path | None) -> tuple[SshTarget, Machine | None]:
    """(the target, the ledger's machine; None for an ssh:// address)."""
    if identity is not None and not identity.is_file():
        raise SshError(MSG_NO_KEY_FILE, target=str(identity))
    if ref.startswith("ssh://"):
        return SshTarget.parse(ref, key_file=identity), None
    from gpudesk.services.cloud.machines import resolve as resolve_machine
    from gpudesk.services.money.ledger import Ledger
    from gpudesk.services.remote.ssh_config import host_alias

    with Ledger() as ledger:
        machine = resolve_machine(ledger, ref)
    if identity is None and machine.key_file:  # the machine's profile names its key file
        identity = Path(machine.key_file).expanduser()
        if not identity.is_file():
            raise SshError(MSG_NO_KEY_FILE, target=str(identity))
    if machine.provider in CLOUDS and not machine.ssh_user.strip():
        raise SshError(MSG_NO_LOGIN_USER, machine=machine.name or machine.id)
    pkey = None
    if identity is None and machine.provider in CLOUDS:
        from gpudesk.services.cloud import credentials

        # The keyring entry holding the key gpudesk launched this machine with.
        key_name = credentials.KEY_KINDS[credentials.key_kind_for(machine.provider)]
        pem = credentials.load_private_key(key_name)
        pkey = credentials.private_key_from_pem(pem) if pem else None
    return SshTarget(host=machine.public_ip, port=machine.ssh_port or 22,
                     # an own machine keeps the user it was given (none: root, as added)
                     user=machine.ssh_user.strip() or "root", key_file=identity, pkey=pkey,
                     pin_name=host_alias(machine),  # the HostKeyAlias of `ssh gpudesk-<name>`
                     allow_agent=identity is None and pkey is None), machine


def open_connection(ref: str, identity: Path | None, policy: HostKeyPolicy, *,
                    attempts: int = 3, rotation: RotationConfig | None = None
                    ) -> SshConnection:
    """A connected SshConnection; host-key and auth refusals raise (and nothing is left open).

    A launched machine still on its launch host key gets its own key now
    (``rotate_if_due``; ``rotation`` says where sshd keeps it and how it is reloaded,
    default the real sshd's); the connection stays usable whatever that does."""
    target, machine = _resolve(ref, identity)
    conn = SshConnection(target, policy, store=PinStore(), attempts=attempts)
    try:
        conn.connect()
    except BaseException:
        conn.close()
        raise
    if machine is not None:
        _finish_first_login(conn, machine, rotation)
    return conn


def _finish_first_login(conn: SshConnection, machine: Machine,
                        rotation: RotationConfig | None) -> None:
    from gpudesk.services.money.ledger import Ledger
    from gpudesk.services.remote.host_key_rotation import CLOUDS
    from gpudesk.services.remote.host_key_rotation import rotate_if_due

    if machine.provider not in CLOUDS:
        return
    with Ledger() as ledger:
        rotate_if_due(conn, machine, ledger, rotation)


@dataclass(frozen=True)
class LoginCheck:
    """What a first login to a new machine found: enough to say it works, in words."""

    target: str
    fingerprint: str  # the host key now pinned
    python: str  # the version, "" when the python is missing
    torch: str  # the version, "" when torch is missing
    gpus: int


def profile_target(name: str, host: str, port: int, user: str, key_file: str) -> SshTarget:
    """The SshTarget an own machine will resolve to once added (same pin name), so the host
    key pinned by the connection test is the one Run and Watch check later."""
    from gpudesk.services.money.ledger import Machine
    from gpudesk.services.remote.ssh_config import host_alias

    key = Path(key_file).expanduser() if key_file.strip() else None
    if key is not None and not key.is_file():
        raise SshError(MSG_NO_KEY_FILE, target=str(key))
    pin = host_alias(Machine(id="m-new", provider="own", name=name.strip() or host.strip()))
    return SshTarget(host=host.strip(), port=port, user=user.strip() or "root", key_file=key,
                     pin_name=pin, allow_agent=key is None)


_PROBE = ("{python} -c 'import sys; print(\"python\", sys.version.split()[0])'; "
          "{python} -c 'import torch; print(\"torch\", torch.__version__)' 2>/dev/null; "
          "echo gpus $(nvidia-smi -L 2>/dev/null | grep -c '^GPU')")


def check_login(target: SshTarget, policy: HostKeyPolicy, python: str = "python3"
                ) -> LoginCheck:
    """Log in (asking to pin the host key), then ask for python, torch and the GPU count."""
    import shlex

    conn = SshConnection(target, policy, store=PinStore(), attempts=1)
    try:
        conn.connect()
        result = conn.exec(_PROBE.format(python=shlex.quote(python or "python3")), timeout=120,
                           what="checking python and torch")
        found = dict(line.split(" ", 1) for line in result.text.splitlines() if " " in line)
        gpus = found.get("gpus", "0").strip()
        return LoginCheck(str(target), conn.host_key_fingerprint or "",
                          found.get("python", "").strip(), found.get("torch", "").strip(),
                          int(gpus) if gpus.isdigit() else 0)
    finally:
        conn.close()
