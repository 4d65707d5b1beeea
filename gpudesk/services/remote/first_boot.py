"""What a machine gpudesk launches carries from its first second: cloud user data.

One cloud-config document (EC2 ``UserData``, CVM ``UserData``; cloud-init
reads it on first boot) that

1. installs the SSH host key generated here before sshd first starts
   (``ssh_keys``; its private half lives only in the keyring and in this user
   data; the public half is pinned before the first connection), so there is
   no trust on first use;
2. runs a shell script (``runcmd``) that installs the first-boot guard
   (``gpudesk/agent/boot.py`` with the agent's rules, guard, events, clock and
   runs modules), its ``rules.json`` (price per hour, spend at launch, budget
   and action, idle rule) and a systemd unit that starts it on every boot and
   restarts it on failure.

The full agent, deployed on the first Watch, takes the guard's lock and
enforces the same ``rules.json``; ``guard_push.push_all`` rewrites it on every
reachable machine when a budget, Preferences or a price change.

Tests run the same script with the service manager, the folders and the power
action replaced (``GPUDESK_BOOT_*`` variables, the rules' commands); nothing
else in it differs.
"""

from __future__ import annotations

import ast
import base64
import gzip
import hashlib
import importlib.resources
import io
import json
import tarfile
from collections.abc import Callable
from dataclasses import dataclass

import paramiko

from gpudesk.i18n_marks import QT_TRANSLATE_NOOP
from gpudesk.services.core.errors import TemplatedError
from gpudesk.services.core.settings import Settings
from gpudesk.services.money.ledger import Ledger, Machine
from gpudesk.services.remote.agent_deploy import AgentRules

# EC2 takes 16 KB of user data before base64, CVM 16 KB after it: stay under both.
MAX_USER_DATA = 12 * 1024
UNIT = "gpudesk-agent.service"
BOOT_MODULES = ("__init__.py", "clock.py", "events.py", "rules.py", "runs.py", "guard.py",
                "boot.py")
MSG_TOO_BIG = QT_TRANSLATE_NOOP(
    "Agent", "The first-boot script is {size} bytes; clouds take at most {limit}.")


class FirstBootError(TemplatedError):
    translation_context = "Agent"


@dataclass(frozen=True)
class HostKey:
    private_pem: str  # OpenSSH private key: keyring and user data only, never a file here
    public_line: str  # "ssh-ed25519 AAAA..."

    @property
    def fingerprint(self) -> str:
        blob = base64.b64decode(self.public_line.split()[1])
        return "SHA256:" + base64.b64encode(hashlib.sha256(blob).digest()).decode().rstrip("=")


def new_host_key() -> HostKey:
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    key = Ed25519PrivateKey.generate()
    pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.OpenSSH,
                            serialization.NoEncryption()).decode("ascii")
    public = key.public_key().public_bytes(serialization.Encoding.OpenSSH,
                                           serialization.PublicFormat.OpenSSH).decode("ascii")
    return HostKey(pem, public)


# --------------------------------------------------------------------------- the bundle

class _Shrink(ast.NodeTransformer):
    """Docstrings and annotations out (user data is small); the code is unchanged."""

    def _doc(self, node: ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef
             ) -> None:
        body = node.body
        if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) \
                and isinstance(body[0].value.value, str):
            if len(body) > 1:
                del body[0]
            else:
                body[0] = ast.Pass()

    def visit_Module(self, node: ast.Module) -> ast.Module:  # noqa: N802 - ast API
        self._doc(node)
        self.generic_visit(node)
        return node

    def visit_ClassDef(self, node: ast.ClassDef) -> ast.ClassDef:  # noqa: N802
        self._doc(node)
        self.generic_visit(node)
        return node

    def visit_FunctionDef(self, node: ast.FunctionDef) -> ast.FunctionDef:  # noqa: N802
        self._doc(node)
        node.returns = None
        a = node.args
        for arg in [*a.posonlyargs, *a.args, *a.kwonlyargs, a.vararg, a.kwarg]:
            if arg is not None:
                arg.annotation = None
        self.generic_visit(node)
        return node


# The real smi module samples in depth for the Watch page; the guard needs utilisation only.
_SMI_STUB = '''
import subprocess
from collections import namedtuple
GpuSample = namedtuple("GpuSample", "index uuid util")
def sample_once(exe="nvidia-smi", timeout=15.0):
    try:
        out = subprocess.run([exe, "--query-gpu=index,uuid,utilization.gpu",
                              "--format=csv,noheader,nounits"], stdout=subprocess.PIPE,
                             stderr=subprocess.DEVNULL, timeout=timeout, check=True).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    rows = []
    for line in out.decode("utf-8", "replace").splitlines():
        parts = [p.strip() for p in line.split(",")]
        if len(parts) == 3:
            try:
                util = float(parts[2])
            except ValueError:
                util = None
            rows.append(GpuSample(parts[0], parts[1], util))
    return rows
'''
_MAIN = '''
if __package__ in (None, ""):
    import importlib, os, sys
    _here = os.path.dirname(os.path.abspath(__file__))
    sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != _here]
    sys.path.insert(0, os.path.dirname(_here))
    __package__ = os.path.basename(_here)
    importlib.import_module(__package__)
import sys
from .boot import main
sys.exit(main())
'''


def boot_bundle() -> bytes:
    """The first-boot guard as a deterministic tar.gz of a package folder ``agent/``."""
    from gpudesk.agent.metrics import DEFAULT_KEEP, DEFAULT_MAX_BYTES

    files: dict[str, str] = {}
    package = importlib.resources.files("gpudesk.agent")
    for name in BOOT_MODULES:
        tree = _Shrink().visit(ast.parse(package.joinpath(name).read_text(encoding="utf-8")))
        files[name] = ast.unparse(tree) + "\n"
    files["smi.py"] = _SMI_STUB
    files["metrics.py"] = (f"DEFAULT_MAX_BYTES = {DEFAULT_MAX_BYTES}\n"
                           f"DEFAULT_KEEP = {DEFAULT_KEEP}\n")
    files["__main__.py"] = _MAIN
    raw = io.BytesIO()
    with gzip.GzipFile(fileobj=raw, mode="wb", compresslevel=9, mtime=0) as gz, \
            tarfile.open(fileobj=gz, mode="w") as tar:
        for name in sorted(files):
            data = files[name].encode()
            info = tarfile.TarInfo(f"agent/{name}")
            info.size, info.mode, info.mtime = len(data), 0o644, 0
            tar.addfile(info, io.BytesIO(data))
    return raw.getvalue()


# --------------------------------------------------------------------------- the script

_SCRIPT = """#!/bin/bash
# gpudesk first boot: the budget/idle guard and its systemd unit (root, from cloud-init).
set -eu
umask 022
U="${{GPUDESK_BOOT_USER:-{user}}}"
H="${{GPUDESK_BOOT_HOME:-$(getent passwd "$U" | cut -d: -f6)}}"
UNIT_DIR="${{GPUDESK_BOOT_UNIT_DIR:-/etc/systemd/system}}"
SYSTEMCTL="${{GPUDESK_BOOT_SYSTEMCTL:-systemctl}}"
PY="${{GPUDESK_BOOT_PYTHON:-python3}}"
ROOT="$H/{root}"
mkdir -p "$ROOT/agent/boot" "$ROOT/agent/data" "$ROOT/runs"
echo '{bundle}' | base64 -d | tar -xz -C "$ROOT/agent/boot"
cat > "$ROOT/agent/rules.json" <<'GPUDESK_RULES'
{rules}
GPUDESK_RULES
sed -i "s#@RUNS@#$ROOT/runs#" "$ROOT/agent/rules.json"
chown -R "$U" "$ROOT"
cat > "$UNIT_DIR/{unit}" <<GPUDESK_UNIT
[Unit]
Description=gpudesk guard: the machine's budget and idle rules
After=network-online.target
[Service]
User=$U
ExecStart=$PY $ROOT/agent/boot/agent --dir $ROOT/agent/data --rules $ROOT/agent/rules.json
Restart=on-failure
RestartSec=5
RestartPreventExitStatus=3
[Install]
WantedBy=multi-user.target
GPUDESK_UNIT
$SYSTEMCTL daemon-reload
$SYSTEMCTL enable --now {unit}
"""


def script(rules: AgentRules, *, user: str = "ubuntu", root: str = "gpudesk") -> str:
    """The first-boot script: the guard, its rules and its unit (run as root, once)."""
    rules.validate()
    data = rules.to_json()
    data.setdefault("runs_dir", "@RUNS@")  # <home>/<root>/runs: the script knows the home
    return _SCRIPT.format(user=user, root=root.strip("/") or "gpudesk",
                          bundle=base64.b64encode(boot_bundle()).decode("ascii"),
                          rules=json.dumps(data, indent=1), unit=UNIT)


SCRIPT_PATH = "/var/lib/gpudesk/first-boot.sh"


def user_data(rules: AgentRules, host_key: HostKey, *, user: str = "ubuntu",
              root: str = "gpudesk") -> str:
    """The user data: cloud-config whose ``ssh_keys`` installs the desktop's host key before
    sshd first starts (cloud-init's ssh module; every other host key deleted, none
    generated), and whose ``runcmd`` runs :func:`script`. Under the clouds' size limit."""

    def block(text: str, indent: int) -> str:
        pad = " " * indent
        return "".join(pad + line + "\n" if line else "\n"
                       for line in text.rstrip("\n").split("\n"))

    text = ("#cloud-config\n"
            "ssh_deletekeys: true\n"
            "ssh_genkeytypes: []\n"
            "ssh_keys:\n"
            "  ed25519_private: |\n" + block(host_key.private_pem, 4)
            + f"  ed25519_public: {host_key.public_line}\n"
            "write_files:\n"
            f"  - path: {SCRIPT_PATH}\n"
            "    permissions: '0700'\n"
            "    content: |\n" + block(script(rules, user=user, root=root), 6)
            + "runcmd:\n"
            f"  - [bash, {SCRIPT_PATH}]\n")
    size = len(text.encode())
    if size > MAX_USER_DATA:
        raise FirstBootError(MSG_TOO_BIG, size=size, limit=MAX_USER_DATA)
    return text


# --------------------------------------------------------------------------- for a launch

FirstBootFn = Callable[[Machine], tuple[str, str]]


def host_key_entry(ledger_id: str) -> str:
    """The keyring entry of a machine's host private key."""
    return f"host-key-{ledger_id}"


def for_launch(settings: Callable[[], Settings], ledger: Ledger | None = None) -> FirstBootFn:
    """The launcher's hook: (user data, host key fingerprint) for a machine about to launch.

    The key's private half goes to the keyring and its public half is pinned
    under the machine's SSH name, both before the cloud is asked for anything.
    """

    def build(machine: Machine) -> tuple[str, str]:
        from gpudesk.services.cloud import credentials
        from gpudesk.services.remote.host_keys import PinStore
        from gpudesk.services.remote.machine_rules import agent_rules
        from gpudesk.services.remote.ssh_config import host_alias

        key = new_host_key()
        text = user_data(agent_rules(machine, settings(), ledger), key,
                         user=machine.ssh_user or "ubuntu")
        credentials.save_private_key(host_key_entry(machine.id), key.private_pem)
        PinStore().pin(host_alias(machine), _paramiko_key(key.public_line))
        return text, key.fingerprint

    return build


def _paramiko_key(public_line: str) -> paramiko.PKey:
    kind, blob = public_line.split()[:2]
    return paramiko.PKey.from_type_string(kind, base64.b64decode(blob))
