"""Where a TARGET points: an ``ssh://user@host:port`` address, or a machine in the ledger.

Shared by the CLI verbs and the window, so both reach a machine the same way:
a launched machine's key comes from the keyring (never a file), an own machine
uses its key file or the SSH agent, and the host-key pin is named after the
machine (``gpudesk-<name>``) so that a swapped key is caught whatever the address.
"""

from __future__ import annotations

from pathlib import Path

from gpudesk.i18n_marks import QT_TRANSLATE_NOOP
from gpudesk.services.remote.host_keys import HostKeyPolicy, PinStore
from gpudesk.services.remote.ssh import SshConnection, SshError, SshTarget

MSG_NO_KEY_FILE = QT_TRANSLATE_NOOP("Ssh", "The SSH key file {target} does not exist.")


def resolve(ref: str, identity: Path | None = None) -> SshTarget:
    """The SshTarget for ``ref`` (ledger id, cloud id or name, or ssh://...)."""
    if identity is not None and not identity.is_file():
        raise SshError(MSG_NO_KEY_FILE, target=str(identity))
    if ref.startswith("ssh://"):
        return SshTarget.parse(ref, key_file=identity)
    from gpudesk.services.cloud.machines import resolve as resolve_machine
    from gpudesk.services.money.ledger import Ledger
    from gpudesk.services.remote.ssh_config import host_alias

    with Ledger() as ledger:
        machine = resolve_machine(ledger, ref)
    pkey = None
    if identity is None and machine.provider in ("aws", "tencent"):
        from gpudesk.services.cloud import credentials

        # The keyring entry holding the key gpudesk launched this machine with.
        key_name = credentials.KEY_KINDS[credentials.key_kind_for(machine.provider)]
        pem = credentials.load_private_key(key_name)
        pkey = credentials.private_key_from_pem(pem) if pem else None
    return SshTarget(host=machine.public_ip, port=machine.ssh_port or 22,
                     user=machine.ssh_user or "root", key_file=identity, pkey=pkey,
                     pin_name=host_alias(machine),  # the HostKeyAlias of `ssh gpudesk-<name>`
                     allow_agent=identity is None and pkey is None)


def open_connection(ref: str, identity: Path | None, policy: HostKeyPolicy, *,
                    attempts: int = 3) -> SshConnection:
    """A connected SshConnection; host-key and auth refusals raise (and nothing is left open)."""
    conn = SshConnection(resolve(ref, identity), policy, store=PinStore(), attempts=attempts)
    try:
        conn.connect()
    except BaseException:
        conn.close()
        raise
    return conn
