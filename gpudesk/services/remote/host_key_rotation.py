"""The first login to a launched machine: read what its first boot did, then replace its host key.

A machine gpudesk launches boots with a host key made on the desktop (``first_boot``):
its public half is pinned before the first connection, its private half rides in the
cloud's user data. User data is no place for a lasting secret: every process on the
machine can read it from the metadata service, and so can anyone allowed
``DescribeInstanceAttribute`` / ``DescribeUserData``. Whoever holds it could pose as the
machine. So, on the first login (verified against that pin):

1. the first-boot script's marker says whether the guard installed (``installed`` /
   ``not-installed: why``); it goes to the ledger, and a machine whose guard did not
   install is no longer counted as guarded by its agent (only the cloud's cap is left);
2. a new host key is made *on the machine* (``ssh-keygen -t ed25519`` into sshd's host
   key path), its public half read back over the verified channel and pinned in place
   of the old one, and sshd reloaded; a fresh connection must then present the new key
   (and only the new pin is trusted), after which the old private half leaves the
   keyring and the ledger records ``host-key-rotated``. From then on the key in user
   data proves nothing.

A machine whose first login came before this, failed or was cut short is rotated at a
later connect (``rotate_if_due``, from ``targets.open_connection``): the same two steps,
recorded the same way, when the ledger says the key was never replaced and the machine
still offers the key from its user data (its private half still in the keyring).

The key path, the reload command and the privilege prefix are configurable
(:class:`RotationConfig`), so tests turn them on the test's own sshd. Blocking (paramiko).
"""

from __future__ import annotations

import base64
import logging
import shlex
from dataclasses import dataclass
from typing import Literal

import paramiko

from gpudesk.i18n_marks import QT_TRANSLATE_NOOP
from gpudesk.services.core.errors import TemplatedError
from gpudesk.services.money.ledger import Ledger
from gpudesk.services.money.ledger import Machine
from gpudesk.services.remote.host_keys import HostKeyPolicy
from gpudesk.services.remote.host_keys import PinStore
from gpudesk.services.remote.host_keys import fingerprint
from gpudesk.services.remote.ssh import SshConnection
from gpudesk.services.remote.ssh import SshTarget

log = logging.getLogger(__name__)

DEFAULT_KEY_PATH = "/etc/ssh/ssh_host_ed25519_key"
DEFAULT_RELOAD = "systemctl reload ssh || systemctl reload sshd"
# Where the first-boot script says whether the guard installed (readable by the login user).
STATE_DIR = "/var/lib/gpudesk"
GUARD_STATUS_NAME = "guard-status"
GUARD_STATUS_PATH = f"{STATE_DIR}/{GUARD_STATUS_NAME}"
GUARD_WAIT_S = 180.0  # the first boot runs after sshd starts: give it this long to finish

STEP_ROTATING = "host-key-rotating"
STEP_ROTATED = "host-key-rotated"
STEP_ROTATE_FAILED = "host-key-rotate-failed"
STEP_GUARD = "guard-install"
# A kept-alive group's new member (issue 23): its pin is the key its launch template's
# user data carries; that key is replaced at the next connect as a launch key is.
STEP_MEMBER_KEY = "host-key-member"
CLOUDS = ("aws", "tencent", "aliyun")
# After a failed rotation, later connects try again no sooner than this (a machine without
# sudo would otherwise be asked at every connect).
RETRY_AFTER_S = 3600.0

MSG_NOT_VERIFIED = QT_TRANSLATE_NOOP(
    "HostKey", "The host key of {host} was not replaced: the connection was not verified "
    "against its pinned key ({offered}).")
MSG_ROTATE_FAILED = QT_TRANSLATE_NOOP(
    "HostKey", "The host key of {host} could not be replaced ({step}): {detail}. The machine "
    "keeps the key from its launch, which anyone who can read its user data also holds.")
MSG_NOT_PROVEN = QT_TRANSLATE_NOOP(
    "HostKey", "{host} was given a new host key ({expected}), but after sshd reloaded it "
    "offered {offered}.")

GuardInstalled = Literal["installed", "not-installed", "unknown"]


class RotationError(TemplatedError):
    translation_context = "HostKey"


def host_key_entry(ledger_id: str) -> str:
    """The keyring entry of a machine's launch host key (its private half)."""
    return f"host-key-{ledger_id}"


@dataclass(frozen=True)
class RotationConfig:
    """Where sshd keeps its ed25519 host key on the machine and how it is told to reread it.

    ``become``: the prefix that makes the script root (``None``: ``sudo -n`` unless the
    login user is root; ``""``: none).
    """

    key_path: str = DEFAULT_KEY_PATH
    reload_command: str = DEFAULT_RELOAD
    become: str | None = None
    guard_status_path: str = GUARD_STATUS_PATH
    guard_wait_s: float = GUARD_WAIT_S
    timeout_s: float = 120.0


@dataclass(frozen=True)
class GuardStatus:
    state: GuardInstalled
    detail: str = ""


@dataclass(frozen=True)
class FirstLogin:
    guard: GuardStatus
    host_key_fingerprint: str  # the pinned key now
    rotated: bool


# --------------------------------------------------------------------------- on the machine

_ROTATE_SH = r"""set -u
NEW="$KEY.gpudesk-new"; OLD="$KEY.gpudesk-old"
umask 077
rm -f "$NEW" "$NEW.pub"
if ! ssh-keygen -q -t ed25519 -N '' -C '' -f "$NEW" </dev/null >/dev/null 2>&1; then
  echo "@@fail keygen"; exit 3; fi
echo "@@pub $(cat "$NEW.pub")"
[ -f "$KEY" ] && cp -p "$KEY" "$OLD"
[ -f "$KEY.pub" ] && cp -p "$KEY.pub" "$OLD.pub"
if ! { mv -f "$NEW" "$KEY" && mv -f "$NEW.pub" "$KEY.pub"; }; then
  echo "@@fail install"; exit 4; fi
chmod 600 "$KEY"; chmod 644 "$KEY.pub"
if OUT=$(sh -c "$RELOAD" 2>&1); then
  rm -f "$OLD" "$OLD.pub"; echo "@@done"; exit 0; fi
[ -f "$OLD" ] && mv -f "$OLD" "$KEY"
[ -f "$OLD.pub" ] && mv -f "$OLD.pub" "$KEY.pub"
printf '@@fail reload %s\n' "$(printf '%s' "$OUT" | tr '\n' ' ' | cut -c1-300)"; exit 5
"""


def rotation_script(key_path: str, reload_command: str) -> str:
    """The ``sh`` script (sent on stdin) that makes, installs and announces the new key.

    It prints only the new *public* key; a failed reload puts the old key back, so sshd
    keeps offering the pinned one."""
    return (f"KEY={shlex.quote(key_path)}\nRELOAD={shlex.quote(reload_command)}\n"
            + _ROTATE_SH)


def _become(config: RotationConfig, user: str) -> str:
    if config.become is not None:
        return config.become.strip()
    return "" if user == "root" else "sudo -n"


def rotate(conn: SshConnection, machine_id: str, ledger: Ledger,
           config: RotationConfig | None = None) -> str:
    """Replace the host key of the machine behind ``conn`` (connected or not; its pin must
    verify it); return the new fingerprint, now the only pin of its name."""
    from gpudesk.services.cloud import credentials

    config = config or RotationConfig()
    store, name = conn.store, conn.target.known_as
    conn.connect()
    if conn.host_key_fingerprint not in store.fingerprints(name):
        raise RotationError(MSG_NOT_VERIFIED, host=name, offered=conn.host_key_fingerprint)
    ledger.log(machine_id, STEP_ROTATING, conn.host_key_fingerprint)
    become = _become(config, conn.target.user)
    command = f"{become} sh -s" if become else "sh -s"
    result = conn.exec(command, input=rotation_script(config.key_path,
                                                      config.reload_command).encode(),
                       timeout=config.timeout_s, what="replacing the host key")
    lines = result.text.splitlines()
    public = next((ln[len("@@pub "):].strip() for ln in lines if ln.startswith("@@pub ")), "")
    if not result.ok or "@@done" not in lines or not public:
        failed = next((ln[len("@@fail "):] for ln in lines if ln.startswith("@@fail ")), "")
        step, _, detail = failed.partition(" ")
        detail = detail or result.stderr.decode("utf-8", "replace").strip()[-300:] \
            or f"exit status {result.exit_status}"
        ledger.log(machine_id, STEP_ROTATE_FAILED, f"{step or 'ssh'}: {detail}")
        raise RotationError(MSG_ROTATE_FAILED, host=name, step=step or "ssh", detail=detail)
    kind, blob = public.split()[:2]
    new_key = paramiko.PKey.from_type_string(kind, base64.b64decode(blob))
    new_fp = fingerprint(new_key)
    if any(old.get_name() != new_key.get_name() for old in store.keys(name)):
        store.forget(name)  # the new key alone: no pin of another kind stays trusted
    store.pin(name, new_key)
    # Proof: a fresh connection trusting only the new pin must be let in.
    with SshConnection(conn.target, HostKeyPolicy.refuse(), store=store,
                       connect_timeout_s=conn.connect_timeout_s, attempts=6) as check:
        check.connect()
        if check.host_key_fingerprint != new_fp:  # cannot happen: the pin decides
            raise RotationError(MSG_NOT_PROVEN, host=name, expected=new_fp,
                                offered=check.host_key_fingerprint)
    credentials.delete_private_key(host_key_entry(machine_id))
    ledger.update(machine_id, host_key_fingerprint=new_fp, step=STEP_ROTATED, detail=new_fp)
    return new_fp


# --------------------------------------------------------------------------- the guard marker

def guard_status_command(path: str, wait_s: float) -> str:
    """Wait (on the machine) up to ``wait_s`` for the first boot's marker, then print it."""
    return (f"P={shlex.quote(path)}; i=0; while [ ! -s \"$P\" ] && [ $i -lt {int(wait_s)} ]; "
            "do sleep 1; i=$((i+1)); done; cat \"$P\" 2>/dev/null; exit 0")


def parse_guard_status(text: str) -> GuardStatus:
    line = text.strip().splitlines()[0].strip() if text.strip() else ""
    if line == "installed":
        return GuardStatus("installed")
    if line.startswith("not-installed"):
        return GuardStatus("not-installed", line[len("not-installed"):].lstrip(": ").strip())
    return GuardStatus("unknown", line[:200])


def read_guard_status(conn: SshConnection, config: RotationConfig | None = None
                      ) -> GuardStatus:
    config = config or RotationConfig()
    result = conn.exec(guard_status_command(config.guard_status_path, config.guard_wait_s),
                       timeout=config.guard_wait_s + config.timeout_s,
                       what="reading whether the guard installed")
    return parse_guard_status(result.text)


def record_guard(ledger: Ledger, machine_id: str, status: GuardStatus) -> None:
    """The marker in the ledger. A guard that did not install stops counting as an enforcer,
    and so does EC2's shutdown behaviour (it acts on the agent's power-off): what is left is
    the cloud's own cap, where there is one, and the desktop while it runs."""
    detail = status.state + (f": {status.detail}" if status.detail else "")
    m = ledger.get(machine_id)
    if status.state == "not-installed" and m is not None:
        kept = [x for x in m.enforced_by.split(",")
                if x and x not in ("agent", "shutdown-behavior")]
        ledger.update(machine_id, enforced_by=",".join(kept), step=STEP_GUARD, detail=detail)
    else:
        ledger.log(machine_id, STEP_GUARD, detail)


# --------------------------------------------------------------------------- what show says

def host_key_rotated(ledger: Ledger, machine_id: str) -> bool:
    return any(e.step == STEP_ROTATED for e in ledger.events(machine_id))


def guard_installed(ledger: Ledger, machine_id: str) -> bool | str:
    """True / False from the first boot's marker; ``"unknown"`` until a login has read it."""
    marks = [e.detail for e in ledger.events(machine_id) if e.step == STEP_GUARD]
    if not marks:
        return "unknown"
    if marks[-1] == "installed":
        return True
    return False if marks[-1].startswith("not-installed") else "unknown"


def login_facts(ledger: Ledger, machine_id: str) -> tuple[bool, bool | str]:
    """(host key rotated, guard installed: True / False / "unknown") for ``gpudesk show``."""
    return host_key_rotated(ledger, machine_id), guard_installed(ledger, machine_id)


GUARD_WORDS = {True: "installed", False: "not installed (the machine's agent does not enforce "
               "the budget: only the cloud's own cap, where there is one, and gpudesk while it "
               "runs)", "unknown": "not known yet (read at the first login)"}


# --------------------------------------------------------------------------- the first login

def machine_target(machine: Machine) -> SshTarget:
    """How gpudesk logs in to a machine it launched: the keyring's key, the machine's user."""
    from gpudesk.services.cloud import credentials
    from gpudesk.services.remote.ssh import MSG_NO_LOGIN_USER
    from gpudesk.services.remote.ssh import SshError
    from gpudesk.services.remote.ssh_config import host_alias

    if not machine.ssh_user.strip():  # the image did not say who logs in: never a guess
        raise SshError(MSG_NO_LOGIN_USER, machine=machine.name or machine.id)
    key_name = credentials.KEY_KINDS[credentials.key_kind_for(machine.provider)]
    pem = credentials.load_private_key(key_name)
    pkey = credentials.private_key_from_pem(pem) if pem else None
    return SshTarget(host=machine.public_ip, port=machine.ssh_port or 22,
                     user=machine.ssh_user.strip(), pkey=pkey, pin_name=host_alias(machine),
                     allow_agent=pkey is None)


def first_login(ledger: Ledger, machine: Machine, *, config: RotationConfig | None = None,
                target: SshTarget | None = None, store: PinStore | None = None,
                attempts: int = 1, connect_timeout_s: float = 10.0) -> FirstLogin:
    """Log in to a just-launched machine (its launch pin only), record the guard's marker and
    replace the host key unless that was done already."""
    config = config or RotationConfig()
    with SshConnection(target or machine_target(machine), HostKeyPolicy.refuse(),
                       store=store or PinStore(), attempts=attempts,
                       connect_timeout_s=connect_timeout_s) as conn:
        conn.connect()
        guard = read_guard_status(conn, config)
        record_guard(ledger, machine.id, guard)
        if host_key_rotated(ledger, machine.id):
            return FirstLogin(guard, conn.host_key_fingerprint, False)
        return FirstLogin(guard, rotate(conn, machine.id, ledger, config), True)


# --------------------------------------------------------------------------- later connects

def launch_key_offered(conn: SshConnection, machine_id: str) -> bool:
    """Whether the machine behind ``conn`` still offers its launch host key: the one whose
    private half rode in its user data and is still in the keyring. Only then is there a
    key to replace; a keyring that does not answer counts as no."""
    from gpudesk.services.cloud import credentials

    try:
        pem = credentials.load_private_key(host_key_entry(machine_id))
        key = credentials.private_key_from_pem(pem) if pem else None
    except Exception as exc:  # noqa: BLE001 - no key known: nothing to replace now
        log.info("launch host key of %s not read: %s", machine_id, type(exc).__name__)
        return False
    return key is not None and fingerprint(key) == conn.host_key_fingerprint


def rotation_due(ledger: Ledger, machine: Machine, now: float) -> bool:
    """The ledger's part: a machine gpudesk launched whose host key was never replaced, and
    no failed try within :data:`RETRY_AFTER_S`."""
    if machine.provider not in CLOUDS:
        return False
    events = ledger.events(machine.id)
    member = [i for i, e in enumerate(events) if e.step == STEP_MEMBER_KEY]
    events = events[member[-1]:] if member else events  # a new member: its own key's story
    if any(e.step == STEP_ROTATED for e in events):
        return False
    failed = [e.at for e in events if e.step == STEP_ROTATE_FAILED]
    return not failed or now - max(failed) >= RETRY_AFTER_S


def rotate_if_due(conn: SshConnection, machine: Machine, ledger: Ledger,
                  config: RotationConfig | None = None, now: float | None = None
                  ) -> str | None:
    """At a later connect (``conn`` connected, verified by its pin): what the first login
    does, once, when it never happened or did not finish. The guard's marker is read
    without waiting (the first boot is long over) where the ledger has none; the host key
    is replaced and recorded as :func:`rotate` does. Returns the new fingerprint, None when
    nothing was due. A failure is recorded and never breaks the connection: the machine
    keeps its pinned launch key, and a later connect tries again."""
    import time
    from dataclasses import replace

    config = config or RotationConfig()
    now = time.time() if now is None else now
    if not rotation_due(ledger, machine, now) or not launch_key_offered(conn, machine.id):
        return None
    try:
        if guard_installed(ledger, machine.id) == "unknown":
            status = read_guard_status(conn, replace(config, guard_wait_s=0))
            if status.state != "unknown":
                record_guard(ledger, machine.id, status)
        return rotate(conn, machine.id, ledger, config)
    except RotationError as exc:  # recorded by rotate
        log.warning("host key of %s not replaced: %s", machine.id, exc.message())
    except Exception as exc:  # noqa: BLE001 - ssh, keyring: the connection itself stands
        log.warning("host key of %s not replaced: %s", machine.id, type(exc).__name__)
        ledger.log(machine.id, STEP_ROTATE_FAILED, f"{type(exc).__name__}: {exc}"[:300])
    return None
