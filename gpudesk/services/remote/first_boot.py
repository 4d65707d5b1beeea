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
   and action, idle rule) and the machine's one systemd unit
   (``agent_deploy.unit_template``: ``Restart=always``) that runs
   ``<root>/agent/current`` (here the boot guard) on every boot and again
   whenever it ends; ``service.json`` records how the login user reaches the
   service manager (``sudo -n systemctl``).

The full agent, deployed on the first Watch, upgrades that unit in place: the
deploy points ``current`` at the new code and restarts the unit through the
service manager; it enforces the same ``rules.json`` and goes on from the same
``spend.json``. ``guard_push.push_all`` rewrites the rules on every reachable
machine when a budget, Preferences or a price change.

Tests run the same script with the service manager, the folders and the power
action replaced (``GPUDESK_BOOT_*`` variables, the rules' commands); nothing
else in it differs.
"""

from __future__ import annotations

import ast
import base64
import hashlib
import importlib.resources
import json
import lzma
from collections.abc import Callable
from dataclasses import dataclass

import paramiko

from gpudesk.i18n_marks import QT_TRANSLATE_NOOP
from gpudesk.services.core.errors import TemplatedError
from gpudesk.services.core.settings import Settings
from gpudesk.services.money.ledger import Ledger, Machine
from gpudesk.services.remote.agent_deploy import UNIT, AgentRules, unit_template
from gpudesk.services.remote.host_key_rotation import (
    GUARD_STATUS_NAME,
    STATE_DIR,
    RotationConfig,
    first_login,
)
from gpudesk.services.remote.host_key_rotation import host_key_entry as host_key_entry

# EC2 takes 16 KB of user data before base64, CVM 16 KB after it: stay under both.
MAX_USER_DATA = 12 * 1024
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
    """Docstrings, annotations and log calls out (user data is small; the guard's events
    file says what it did); the code is otherwise unchanged."""

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

    def __init__(self) -> None:
        self._where: list[str] = []  # "def" or "class", innermost last

    def visit_ClassDef(self, node: ast.ClassDef) -> ast.ClassDef:  # noqa: N802
        self._doc(node)
        self._where.append("class")
        self.generic_visit(node)
        self._where.pop()
        return node

    def visit_Expr(self, node: ast.Expr) -> ast.AST:  # noqa: N802 - log.x(...) out
        call = node.value
        if isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute) and \
                isinstance(call.func.value, ast.Name) and call.func.value.id == "log":
            return ast.copy_location(ast.Pass(), node)
        return node

    def visit_AnnAssign(self, node: ast.AnnAssign) -> ast.AST:  # noqa: N802
        if node.value is not None and (self._where or ["module"])[-1] == "def":
            return ast.copy_location(ast.Assign([node.target], node.value), node)
        return node  # a dataclass field stays

    def visit_FunctionDef(self, node: ast.FunctionDef) -> ast.FunctionDef:  # noqa: N802
        self._doc(node)
        node.returns = None
        a = node.args
        for arg in [*a.posonlyargs, *a.args, *a.kwonlyargs, a.vararg, a.kwarg]:
            if arg is not None:
                arg.annotation = None
        self._where.append("def")
        self.generic_visit(node)
        self._where.pop()
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


def _unused_out(trees: list[ast.Module], others: list[ast.Module]) -> None:
    """Drop what no module of the bundle uses at run time: top-level functions and classes
    (the full agent's spot and run-signalling helpers, the test clock), names imported only
    for annotations, and ``__all__``: user data is small."""
    while True:
        used: set[str] = set()
        for tree in [*trees, *others]:
            for node in ast.walk(tree):
                if isinstance(node, ast.Name):
                    used.add(node.id)
                elif isinstance(node, ast.Attribute):
                    used.add(node.attr)
        dropped = False
        for tree in trees:
            keep: list[ast.stmt] = []
            for n in tree.body:
                if isinstance(n, ast.ImportFrom) and n.module != "__future__":
                    names = [a for a in n.names if (a.asname or a.name) in used]
                    dropped |= len(names) != len(n.names)
                    n.names = names
                    if not names:
                        continue
                elif isinstance(n, ast.FunctionDef | ast.ClassDef) and n.name not in used or \
                        isinstance(n, ast.Assign) and any(
                            isinstance(t, ast.Name) and t.id == "__all__" for t in n.targets):
                    dropped = True
                    continue
                keep.append(n)
            tree.body = keep
        if not dropped:
            return


def boot_bundle() -> bytes:
    """The first-boot guard's files (a package folder ``agent/``), deterministic: xz of
    ``\\0name\\0text`` for each file. No tar: its headers cost some 400 bytes of user data,
    and python3, which the guard needs anyway, unpacks this in one line (the script)."""
    from gpudesk.agent.metrics import DEFAULT_KEEP, DEFAULT_MAX_BYTES

    files: dict[str, str] = {}
    package = importlib.resources.files("gpudesk.agent")
    trees = {name: _Shrink().visit(ast.parse(package.joinpath(name).read_text(encoding="utf-8")))
             for name in BOOT_MODULES}
    _unused_out(list(trees.values()), [ast.parse(_SMI_STUB), ast.parse(_MAIN)])
    for name, tree in trees.items():
        files[name] = ast.unparse(tree) + "\n"
    files["smi.py"] = _SMI_STUB
    files["metrics.py"] = (f"DEFAULT_MAX_BYTES = {DEFAULT_MAX_BYTES}\n"
                           f"DEFAULT_KEEP = {DEFAULT_KEEP}\n")
    files["__main__.py"] = _MAIN
    files[UNIT + ".in"] = unit_template()  # the unit, filled in on the machine
    packed = "".join(f"\0{name}\0{files[name]}" for name in sorted(files))
    return lzma.compress(packed.encode(), check=lzma.CHECK_CRC32,
                         preset=9 | lzma.PRESET_EXTREME)


def bundle_files(bundle: bytes) -> dict[str, str]:
    """What :func:`boot_bundle` packed: file name -> text (as the script unpacks it)."""
    parts = lzma.decompress(bundle).decode().split("\0")
    return dict(zip(parts[1::2], parts[2::2], strict=True))


# --------------------------------------------------------------------------- the script

_SCRIPT = """#!/bin/bash
# gpudesk first boot: the budget/idle guard and its systemd unit (root, from cloud-init).
set -eu
umask 022
S=${{GPUDESK_BOOT_STATE_DIR:-{state}}};M=$S/{status};E=;P=start
mkdir -p "$S";rm -f "$M"
mark(){{ echo "$1">"$M.t";chmod 644 "$M.t";mv -f "$M.t" "$M";}}
fail(){{ E=$1;exit 2;}}
trap 'R=$?;[ $R = 0 ]||{{ W=${{E:-$P failed (exit $R)}};mark "not-installed: $W"
echo "gpudesk: the guard did not install: $W">&2;}}' EXIT
U="${{GPUDESK_BOOT_USER:-{user}}}"
getent passwd "$U" >/dev/null || fail "no user $U on this machine"
H="${{GPUDESK_BOOT_HOME:-$(getent passwd "$U" | cut -d: -f6)}}"
[ -n "$H" ] || fail "no home folder for $U"
UNIT_DIR="${{GPUDESK_BOOT_UNIT_DIR:-/etc/systemd/system}}"
SYSTEMCTL="${{GPUDESK_BOOT_SYSTEMCTL:-systemctl}}"
PY="${{GPUDESK_BOOT_PYTHON:-python3}}"
ROOT="$H/{root}";P=unpack
PY=$(command -v "$PY") || fail "no $PY on this machine"
mkdir -p "$ROOT/agent/boot/agent" "$ROOT/agent/data" "$ROOT/runs"
echo '{bundle}' | base64 -d | "$PY" -c 'import lzma,sys
d=sys.argv[1];p=lzma.decompress(sys.stdin.buffer.read()).decode().split("\\0")
for n,t in zip(p[1::2],p[2::2]):open(d+n,"w").write(t)' "$ROOT/agent/boot/agent/"
ln -sfn boot "$ROOT/agent/current"
P=rules
cat > "$ROOT/agent/rules.json" <<'GPUDESK_RULES'
{rules}
GPUDESK_RULES
sed -i "s#@RUNS@#$ROOT/runs#" "$ROOT/agent/rules.json"
C="${{GPUDESK_BOOT_USER_SYSTEMCTL:-sudo -n systemctl}}"
printf '{{"systemctl":"%s","unit_dir":"%s","python":"%s"}}\\n' "$C" "$UNIT_DIR" "$PY" \\
  >"$ROOT/agent/service.json"
chown -R "$U" "$ROOT"
P=unit
sed -e "s#@USER@#$U#g" -e "s#@PY@#$PY#g" -e "s#@BASE@#$ROOT/agent#g" \\
  "$ROOT/agent/boot/agent/{unit}.in" >"$UNIT_DIR/{unit}"
P=systemd
$SYSTEMCTL daemon-reload
$SYSTEMCTL enable --now {unit}
mark installed
"""


def script(rules: AgentRules, *, user: str = "ubuntu", root: str = "gpudesk") -> str:
    """The first-boot script: the guard, its rules and its unit (run as root, once)."""
    rules.validate()
    data = rules.to_json()
    data.setdefault("runs_dir", "@RUNS@")  # <home>/<root>/runs: the script knows the home
    return _SCRIPT.format(user=user, root=root.strip("/") or "gpudesk", state=STATE_DIR,
                          status=GUARD_STATUS_NAME,
                          bundle=base64.b64encode(boot_bundle()).decode("ascii"),
                          rules=json.dumps(data, separators=(",", ":")), unit=UNIT)


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


class FirstBoot:
    """The launcher's hooks for one kind of launch (``for_launch``).

    Called with a machine about to launch: (user data, host key fingerprint); the key's
    private half goes to the keyring and its public half is pinned under the machine's SSH
    name, both before the cloud is asked to make anything. ``first_login`` runs once SSH
    answers: the guard's marker into the ledger, the launch host key replaced
    (``host_key_rotation``); ``None`` when ``rotation`` is False.
    """

    def __init__(self, settings: Callable[[], Settings], ledger: Ledger | None = None,
                 rotation: RotationConfig | bool = True) -> None:
        self.settings = settings
        self.ledger = ledger
        self.rotation = rotation if isinstance(rotation, RotationConfig) else (
            RotationConfig() if rotation else None)
        self.first_login: Callable[[Machine], None] | None = (
            self._first_login if self.rotation is not None else None)

    def __call__(self, machine: Machine) -> tuple[str, str]:
        from gpudesk.services.cloud import credentials
        from gpudesk.services.remote.host_keys import PinStore
        from gpudesk.services.remote.machine_rules import agent_rules
        from gpudesk.services.remote.ssh_config import host_alias

        key = new_host_key()
        text = user_data(agent_rules(machine, self.settings(), self.ledger), key,
                         user=machine.ssh_user or "ubuntu")
        credentials.save_private_key(host_key_entry(machine.id), key.private_pem)
        PinStore().pin(host_alias(machine), _paramiko_key(key.public_line))
        return text, key.fingerprint

    def _first_login(self, machine: Machine) -> None:
        """Blocking: the first login to ``machine`` once its SSH answers (see above)."""
        if self.ledger is not None:
            first_login(self.ledger, machine, config=self.rotation)
            return
        with Ledger() as ledger:
            first_login(ledger, machine, config=self.rotation)


def for_launch(settings: Callable[[], Settings], ledger: Ledger | None = None, *,
               rotation: RotationConfig | bool = True) -> FirstBoot:
    """The launcher's first-boot hook (see :class:`FirstBoot`)."""
    return FirstBoot(settings, ledger, rotation)


def _paramiko_key(public_line: str) -> paramiko.PKey:
    kind, blob = public_line.split()[:2]
    return paramiko.PKey.from_type_string(kind, base64.b64decode(blob))
