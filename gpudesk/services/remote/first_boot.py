"""What a machine gpudesk launches carries from its first second: cloud user data.

One cloud-config document (EC2 ``UserData``, CVM ``UserData``; cloud-init
reads it on first boot) that

1. installs the SSH host key generated here before sshd first starts
   (``ssh_keys``; its private half lives only in the keyring and in this user
   data; the public half is pinned before the first connection), so there is
   no trust on first use;
2. runs a shell script (``runcmd``) that installs the first-boot guard
   (``gpudesk/agent/boot.py`` with the agent's rules, guard, events, clock and
   runs modules, and ``cloud_stop.py`` cut to the machine's cloud: the rules'
   ``gpudesk-cloud-stop``, the role's stop-that-ends-the-compute-bill, runs from
   the first second), its ``rules.json`` (price per hour, spend at launch, budget
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

A keep-alive group's machines (``KeepAlive``: the cloud starts each one from the
same launch template, with nobody watching) take their code from the run's
folder in the bucket instead: the script's fetch step (a stdlib bootstrap,
:data:`FETCH`) reads the role's short-lived credentials from the metadata
service, downloads ``boot/agent.tar.gz`` with a SigV4-signed GET, checks it
against the SHA-256 carried here, and unpacks it; the full agent it holds is
the unit's code from the first boot on (guard, uploads, spot watcher), and
``python3 -m gpudesk.agent.replacement`` then resumes the run from the bucket.
Inline, the boot guard is some 9 KB of lzma (12 KB once base64); the bootstrap is
under 2 KB. Sent gzip on AWS and Tencent Cloud (``providers/user_data.py``), either
fits every cloud's limit as that cloud counts it (:data:`USER_DATA_LIMITS`) with
2 KB to spare (tests/test_first_boot_size.py).

Tests run the same script with the service manager, the folders and the power
action replaced (``GPUDESK_BOOT_*`` variables, the rules' commands); nothing
else in it differs.
"""

from __future__ import annotations

import ast
import base64
import builtins
import hashlib
import importlib.resources
import itertools
import json
import keyword
import lzma
import string
from collections.abc import Callable
from collections.abc import Iterator
from dataclasses import dataclass

import paramiko

from gpudesk.i18n_marks import QT_TRANSLATE_NOOP
from gpudesk.services.cloud.providers import user_data as sent_user_data
from gpudesk.services.core.errors import TemplatedError
from gpudesk.services.core.settings import Settings
from gpudesk.services.money.ledger import Ledger
from gpudesk.services.money.ledger import Machine
from gpudesk.services.remote.agent_deploy import UNIT
from gpudesk.services.remote.agent_deploy import AgentRules
from gpudesk.services.remote.agent_deploy import unit_template
from gpudesk.services.remote.host_key_rotation import GUARD_STATUS_NAME
from gpudesk.services.remote.host_key_rotation import STATE_DIR
from gpudesk.services.remote.host_key_rotation import RotationConfig
from gpudesk.services.remote.host_key_rotation import first_login
from gpudesk.services.remote.host_key_rotation import host_key_entry as host_key_entry

# Each cloud's documented limit, for the launch templates of keep-alive groups too:
# (bytes, counted on the "raw" text or on its "base64"):
# - AWS: EC2 RunInstances and RequestLaunchTemplateData UserData, "limited to 16 KB" of
#   raw data before base64 (EC2 API Reference, RunInstances; User Guide, "user data");
# - Tencent Cloud: CVM RunInstances and AS CreateLaunchConfiguration UserData, the
#   base64-encoded text "不大于16KB" (API reference, RunInstances / CreateLaunchConfiguration);
# - Alibaba Cloud: ECS RunInstances and ESS CreateScalingConfiguration UserData, raw data
#   "最多为 32 KB" before base64 (API reference, RunInstances / CreateScalingConfiguration).
# What is counted is what is sent: gzip on AWS and Tencent Cloud (``providers.user_data``).
USER_DATA_LIMITS: dict[str, tuple[int, str]] = {
    "aws": (16 * 1024, "raw"), "tencent": (16 * 1024, "base64"),
    "aliyun": (32 * 1024, "raw")}
KEEP_ALIVE_AGENT = "boot/agent.tar.gz"  # in the run's folder, runs/<id>/
BOOT_MODULES = ("__init__.py", "clock.py", "events.py", "rules.py", "run_folder.py", "runs.py",
                "guard.py", "boot.py", "cloud_stop.py")
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

    def visit_Call(self, node: ast.Call) -> ast.Call:  # noqa: N802 - argparse's words out
        self.generic_visit(node)
        if isinstance(node.func, ast.Attribute) and node.func.attr in (
                "add_argument", "ArgumentParser"):
            node.keywords = [k for k in node.keywords if k.arg not in ("help", "description")]
        return node

    def visit_Expr(self, node: ast.Expr) -> ast.AST:  # noqa: N802 - log.x(...) out
        call = node.value
        if isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute) and \
                isinstance(call.func.value, ast.Name) and call.func.value.id == "log":
            return ast.copy_location(ast.Pass(), node)
        return node

    def visit_AnnAssign(self, node: ast.AnnAssign) -> ast.AST:  # noqa: N802
        if node.value is not None and (self._where or ["module"])[-1] != "class":
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


def _unused_out(trees: dict[str, ast.Module], others: list[ast.Module]) -> None:
    """Drop what no module of the bundle uses at run time: top-level functions, classes
    and constants (the full agent's spot and run-signalling helpers, the test clock, the
    other clouds' signing), imports their module no longer reads (those only for
    annotations), and ``__all__``: user data is small. ``trees``: file name -> module; a
    name another module imports from one (``from .m import f as g``) is used there."""
    while True:
        used: set[str] = set()  # any mention: a def or class is dropped when unmentioned
        loaded: set[str] = set()  # read somewhere: a constant is dropped when never read
        mine: dict[int, set[str]] = {}  # read in that module, or imported from it
        for tree in [*trees.values(), *others]:
            mine.setdefault(id(tree), set())
        for tree in [*trees.values(), *others]:
            for node in ast.walk(tree):
                if isinstance(node, ast.Name):
                    used.add(node.id)
                    if not isinstance(node.ctx, ast.Store):
                        loaded.add(node.id)
                        mine[id(tree)].add(node.id)
                elif isinstance(node, ast.Attribute):
                    used.add(node.attr)
                    loaded.add(node.attr)
                elif isinstance(node, ast.ImportFrom) and node.level:
                    imported = {a.name for a in node.names}
                    used.update(imported)
                    loaded.update(imported)
                    source = trees.get(f"{node.module or '__init__'}.py")
                    if source is not None:
                        mine[id(source)].update(imported)
                elif isinstance(node, ast.Global | ast.Nonlocal):
                    loaded.update(node.names)
        dropped = False
        for tree in trees.values():
            keep: list[ast.stmt] = []
            for n in tree.body:
                if isinstance(n, ast.Import | ast.ImportFrom) and \
                        getattr(n, "module", "") != "__future__":
                    names = [a for a in n.names if _bound(a) in mine[id(tree)]]
                    dropped |= len(names) != len(n.names)
                    n.names = names
                    if not names:
                        continue
                elif isinstance(n, ast.FunctionDef | ast.ClassDef) and n.name not in used or \
                        isinstance(n, ast.Assign) and any(
                            isinstance(t, ast.Name) and t.id == "__all__" for t in n.targets) \
                        or _unread_constant(n, loaded):
                    dropped = True
                    continue
                keep.append(n)
            tree.body = keep
        if not dropped:
            return


def _bound(alias: ast.alias) -> str:
    """The name an import binds: ``import a.b`` binds ``a``."""
    return alias.asname or alias.name.split(".")[0]


def _unread_constant(node: ast.stmt, loaded: set[str]) -> bool:
    """A top-level ``NAME = value`` (not a dunder) whose name nothing reads."""
    return isinstance(node, ast.Assign) and all(
        isinstance(t, ast.Name) and t.id not in loaded and not t.id.startswith("__")
        for t in node.targets)


# Each cloud's call in cloud_stop.py (its ``_CALLS`` entry): a machine's bundle keeps its
# own cloud's, and ``_unused_out`` then drops the others' signing and constants.
_CLOUD_CALLS = {"aws": "_aws", "tencent": "_tencent", "aliyun": "_aliyun"}


class _OneCloud(ast.NodeTransformer):
    """cloud_stop.py for one cloud: the other clouds' calls out, and every dict keyed by
    cloud (``{"aws": ..., "tencent": ..., "aliyun": ...}``) down to this cloud's entry."""

    def __init__(self, cloud: str) -> None:
        self.cloud = cloud
        self.others = {name for c, name in _CLOUD_CALLS.items() if c != cloud}

    def visit_Module(self, node: ast.Module) -> ast.Module:  # noqa: N802 - ast API
        node.body = [n for n in node.body
                     if not (isinstance(n, ast.FunctionDef) and n.name in self.others)]
        self.generic_visit(node)
        return node

    def visit_Assign(self, node: ast.Assign) -> ast.Assign:  # noqa: N802 - PROVIDERS
        if [t.id for t in node.targets if isinstance(t, ast.Name)] == ["PROVIDERS"]:
            node.value = ast.Tuple([ast.Constant(self.cloud)], ast.Load())
        self.generic_visit(node)
        return node

    def visit_If(self, node: ast.If) -> ast.AST | list[ast.stmt]:  # noqa: N802
        """``if provider == "aws":`` (or ``self.provider``) decided: this cloud's branch."""
        self.generic_visit(node)
        test = node.test
        if isinstance(test, ast.Compare) and len(test.ops) == 1 and \
                isinstance(test.ops[0], ast.Eq | ast.NotEq) and \
                (isinstance(test.left, ast.Name) and test.left.id == "provider" or
                 isinstance(test.left, ast.Attribute) and test.left.attr == "provider") and \
                isinstance(test.comparators[0], ast.Constant) and \
                test.comparators[0].value in _CLOUD_CALLS:
            holds = (test.comparators[0].value == self.cloud) == isinstance(test.ops[0], ast.Eq)
            return (node.body if holds else node.orelse) or ast.copy_location(ast.Pass(), node)
        return node

    def visit_Dict(self, node: ast.Dict) -> ast.Dict:  # noqa: N802
        self.generic_visit(node)
        keys = [k.value if isinstance(k, ast.Constant) else None for k in node.keys]
        if len(keys) > 1 and all(k in _CLOUD_CALLS for k in keys):
            pairs = [(k, v) for k, v in zip(node.keys, node.values, strict=True)
                     if isinstance(k, ast.Constant) and k.value == self.cloud]
            node.keys = [k for k, _ in pairs]
            node.values = [v for _, v in pairs]
        return node


def boot_bundle(cloud: str = "") -> bytes:
    """The first-boot guard's files (a package folder ``agent/``), deterministic: lzma of
    ``\\0name\\0text`` for each file. No tar: its headers cost some 400 bytes of user data,
    and python3, which the guard needs anyway, unpacks this in one line (the script).

    ``cloud_stop.py`` rides along so that the guard can run the role's stop
    (``gpudesk-cloud-stop``: ``guard.expand_command`` makes it this file, run by the
    guard's own python): for ``cloud`` alone, or for every cloud when ``cloud`` is none
    of them."""
    from gpudesk.agent.metrics import DEFAULT_KEEP
    from gpudesk.agent.metrics import DEFAULT_MAX_BYTES

    files: dict[str, str] = {}
    package = importlib.resources.files("gpudesk.agent")
    trees = {name: _Shrink().visit(ast.parse(package.joinpath(name).read_text(encoding="utf-8")))
             for name in BOOT_MODULES}
    if cloud in _CLOUD_CALLS:
        trees["cloud_stop.py"] = _OneCloud(cloud).visit(trees["cloud_stop.py"])
    _unused_out(trees, [ast.parse(_SMI_STUB), ast.parse(_MAIN)])
    for name, tree in trees.items():
        files[name] = _one_space(ast.unparse(_short_locals(_passes_out(tree)))) + "\n"
    files["smi.py"] = _SMI_STUB
    files["metrics.py"] = (f"DEFAULT_MAX_BYTES = {DEFAULT_MAX_BYTES}\n"
                           f"DEFAULT_KEEP = {DEFAULT_KEEP}\n")
    files["__main__.py"] = _MAIN
    files[UNIT + ".in"] = unit_template()  # the unit, filled in on the machine
    packed = "".join(f"\0{name}\0{files[name]}" for name in sorted(files))
    return _pack(packed.encode())


def _passes_out(tree: ast.Module) -> ast.Module:
    """What the shrinking left behind: ``pass`` in a block with other statements, and the
    statements after a ``return`` or ``raise`` (a decided ``if`` of :class:`_OneCloud`)."""
    for node in ast.walk(tree):
        for name in ("body", "orelse", "finalbody"):
            block = getattr(node, name, None)
            if not isinstance(block, list) or not block:
                continue
            end = next((i for i, n in enumerate(block) if isinstance(n, ast.Return | ast.Raise)),
                       len(block))
            block = block[:end + 1]
            setattr(node, name, [n for n in block if not isinstance(n, ast.Pass)] or block[:1])
    return tree


_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)
_COMPREHENSIONS = (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)


def _short_locals(tree: ast.Module) -> ast.Module:
    """Each function's local variables (not its parameters, which callers may name) as one
    or two letters no name in the module uses: fewer bytes to compress. A function with a
    scope inside it (a def, lambda or class: closures) keeps its names; a comprehension's
    own variables keep theirs."""
    taken = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)} | \
        {n.arg for n in ast.walk(tree) if isinstance(n, ast.arg)} | set(dir(builtins)) | \
        set(keyword.kwlist) | set(keyword.softkwlist)
    for fn in [n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef)]:
        if any(isinstance(n, _SCOPES) for n in ast.walk(fn) if n is not fn):
            continue
        fixed = {a.arg for a in ast.walk(fn.args) if isinstance(a, ast.arg)}
        for n in ast.walk(fn):
            if isinstance(n, ast.Global | ast.Nonlocal):
                fixed.update(n.names)
        local = set(_stored(fn.body)) - fixed
        short = (name for name in itertools.chain(
            string.ascii_letters, (a + b for a in string.ascii_letters
                                   for b in string.ascii_letters + string.digits))
            if name not in taken)
        rename = {name: next(short) for name in sorted(local) if len(name) > 1}
        for n in ast.walk(fn):
            if isinstance(n, ast.Name) and n.id in rename:
                n.id = rename[n.id]
            elif isinstance(n, ast.ExceptHandler) and n.name in rename:
                n.name = rename[n.name]
    return tree


def _stored(nodes: list[ast.stmt]) -> Iterator[str]:
    """The names these statements bind in their function's scope (not a comprehension's)."""
    todo: list[ast.AST] = list(nodes)
    while todo:
        node = todo.pop()
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store | ast.Del):
            yield node.id
        elif isinstance(node, ast.ExceptHandler) and node.name:
            yield node.name
        if isinstance(node, _COMPREHENSIONS):
            # only a := inside binds in the function; the comprehension's own targets do not
            todo.extend(n.target for n in ast.walk(node) if isinstance(n, ast.NamedExpr))
            continue
        todo.extend(ast.iter_child_nodes(node))


def _one_space(code: str) -> str:
    """``ast.unparse``'s four-space indents as one space (it writes every string on one
    line, so every line's leading spaces are indentation): fewer bytes to compress."""
    return "\n".join(" " * ((len(line) - len(stripped)) // 4) + stripped
                     for line in code.split("\n") for stripped in [line.lstrip(" ")])


# The legacy .lzma container (13 bytes of header, no index or footer: some 40 bytes less than
# .xz) with text-tuned settings (pb=0: byte-aligned text; the longest matches), 100 bytes of
# user data in all; lzma.decompress on the machine reads it as it read .xz (FORMAT_AUTO).
_LZMA_TEXT = [{"id": lzma.FILTER_LZMA1, "preset": 9 | lzma.PRESET_EXTREME, "lc": 3, "lp": 0,
               "pb": 0, "nice_len": 273}]


def _pack(data: bytes) -> bytes:
    return lzma.compress(data, format=lzma.FORMAT_ALONE, filters=_LZMA_TEXT)


def bundle_files(bundle: bytes) -> dict[str, str]:
    """What :func:`boot_bundle` packed: file name -> text (as the script unpacks it)."""
    parts = lzma.decompress(bundle).decode().split("\0")
    return dict(zip(parts[1::2], parts[2::2], strict=True))


# --------------------------------------------------------------------------- keep-alive

@dataclass(frozen=True)
class KeepAlive:
    """A keep-alive group's machine: where its run's folder is and which role reads it.

    No secret: the role's credentials come from the metadata service on the machine.
    ``sha256`` is the agent bundle's (``run_package``), checked before it is unpacked.
    """

    cloud: str  # aws | tencent | aliyun
    region: str
    bucket: str
    prefix: str  # the run's folder: "<store prefix>runs/<run-id>/"
    role: str
    sha256: str
    endpoint: str = ""  # "" → the cloud's S3-compatible endpoint in the region

    @property
    def key(self) -> str:
        return self.prefix + KEEP_ALIVE_AGENT

    def to_json(self) -> dict[str, str]:
        from gpudesk.agent.store import default_endpoint

        return {"cloud": self.cloud, "region": self.region, "bucket": self.bucket,
                "prefix": self.prefix, "role": self.role, "key": self.key,
                "sha256": self.sha256,
                "endpoint": self.endpoint or default_endpoint(self.cloud, self.region)}


# The keep-alive fetch step's bootstrap (stdlib, Python 3.6+), run as
# ``python3 -c 'exec(<this>)' keep-alive.json DEST``: the role's credentials from the
# metadata service (IMDSv2 on AWS; the hardened-mode token on Aliyun where asked), one
# SigV4-signed GET of the agent bundle (the agent's store.py signs the same way), its
# SHA-256 checked, then unpacked. One line on stderr and exit 1 when anything fails.
# ``GPUDESK_STORE_{METADATA,ENDPOINT,ADDRESSING}_<CLOUD>`` point it elsewhere (tests).
FETCH = r'''
import hashlib as L,hmac,io,json,os,sys,tarfile,time,urllib.parse as Q,urllib.request as U
c=json.load(open(sys.argv[1]));P=c["cloud"]
V=lambda n:os.environ.get("GPUDESK_STORE_%s_%s"%(n,P.upper()))
o=U.build_opener(U.ProxyHandler({}))
def get(r,n=6):
 for i in range(n):
  try:return o.open(r,timeout=30).read()
  except Exception as e:
   x=e
   if i<n-1:time.sleep(2**i)
 raise x
try:
 m=V("METADATA") or {"aws":"http://169.254.169.254","tencent":"http://metadata.tencentyun.com",
                     "aliyun":"http://100.100.100.200"}[P]
 h={}
 if P!="tencent":
  t="X-%s-metadata-token"%("aws-ec2" if P=="aws" else "aliyun-ecs")
  try:
   h={t:get(U.Request(m+"/latest/api/token",b"",{t+"-ttl-seconds":"300"},method="PUT"),
            6 if P=="aws" else 1).decode()}
  except Exception:
   if P=="aws":raise
 f={"aws":"iam","tencent":"cam","aliyun":"ram"}[P]
 d=json.loads(get(U.Request(m+"/latest/meta-data/%s/security-credentials/%s"%(f,c["role"]),
                            headers=h)))
 a,s,k=[d[n] for n in {"aws":("AccessKeyId","SecretAccessKey","Token"),
                       "tencent":("TmpSecretId","TmpSecretKey","Token"),
                       "aliyun":("AccessKeyId","AccessKeySecret","SecurityToken")}[P]]
 e=Q.urlsplit(V("ENDPOINT") or c["endpoint"]);K=Q.quote(c["key"],safe="/-_.~")
 if V("ADDRESSING")=="path":H,p=e.netloc,"/%s/%s"%(c["bucket"],K)
 else:H,p=c["bucket"]+"."+e.netloc,"/"+K
 z=time.strftime("%Y%m%dT%H%M%SZ",time.gmtime());y=z[:8];E=L.sha256(b"").hexdigest()
 g={"host":H,"x-amz-content-sha256":E,"x-amz-date":z,"x-amz-security-token":k};n=sorted(g)
 q="GET\n%s\n\n%s\n%s\n%s"%(p,"".join(i+":"+g[i]+"\n" for i in n),";".join(n),E)
 S="%s/%s/s3/aws4_request"%(y,c.get("sign_region") or c["region"]);b=("AWS4"+s).encode()
 for i in S.split("/"):b=hmac.new(b,i.encode(),L.sha256).digest()
 r="AWS4-HMAC-SHA256\n%s\n%s\n%s"%(z,S,L.sha256(q.encode()).hexdigest())
 r=hmac.new(b,r.encode(),L.sha256).hexdigest()
 g["Authorization"]="AWS4-HMAC-SHA256 Credential=%s/%s, SignedHeaders=%s, Signature=%s"%(
  a,S,";".join(n),r)
 B=get(U.Request("%s://%s%s"%(e.scheme,H,p),headers=g))
except Exception as x:
 sys.exit("cannot fetch %s from %s: %s"%(c["key"],c["bucket"],str(x)[:200] or type(x).__name__))
D=L.sha256(B).hexdigest()
if D!=c["sha256"]:
 sys.exit("%s is not the agent this machine was made for (SHA-256 %s, expected %s)"%(
  c["key"],D,c["sha256"]))
T=tarfile.open(fileobj=io.BytesIO(B))
T.extractall(sys.argv[2],**({"filter":"data"} if hasattr(tarfile,"data_filter") else {}))
'''


def fetch_blob() -> str:
    """The bootstrap for the script: xz, then base64 (one shell word)."""
    return base64.b64encode(_pack(FETCH.strip().encode())).decode("ascii")


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
{unpack}
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
{after}"""
_UNPACK = """mkdir -p "$ROOT/agent/boot/agent" "$ROOT/agent/data" "$ROOT/runs"
echo '{bundle}' | base64 -d | "$PY" -c 'import lzma,sys
d=sys.argv[1];p=lzma.decompress(sys.stdin.buffer.read()).decode().split("\\0")
for n,t in zip(p[1::2],p[2::2]):open(d+n,"w").write(t)' "$ROOT/agent/boot/agent/\""""
# A keep-alive group's machine: the agent from the run's folder in the bucket (see above).
_FETCH_STEP = """P=fetch
mkdir -p "$ROOT/agent/boot" "$ROOT/agent/data" "$ROOT/runs";touch "$ROOT/agent/data/agent.log"
cat > "$ROOT/agent/keep-alive.json" <<'GPUDESK_KEEP_ALIVE'
{keep_alive}
GPUDESK_KEEP_ALIVE
W=$(echo '{fetch}' | base64 -d | "$PY" -c 'import lzma,sys
exec(lzma.decompress(sys.stdin.buffer.read()))' "$ROOT/agent/keep-alive.json" \\
  "$ROOT/agent/boot" 2>&1) || fail "$(echo "$W" | tail -n 1)"
ln -sfn gpudesk/agent "$ROOT/agent/boot/agent\""""
# ... and, with its guard running, the run resumed from the bucket, detached (its lines go
# to the agent's log), as the login user.
_RESUME_STEP = """P=resume
A=;[ "$(id -u)" = 0 ] && [ "$U" != root ] && A="runuser -u $U --"
cd "$ROOT/agent/boot"
setsid $A env PYTHONPATH="$ROOT/agent/boot" "$PY" -m gpudesk.agent.replacement \\
  --root "$ROOT" >>"$ROOT/agent/data/agent.log" 2>&1 </dev/null &
"""


def script(rules: AgentRules, *, user: str = "ubuntu", root: str = "gpudesk",
           keep_alive: KeepAlive | None = None, cloud: str = "") -> str:
    """The first-boot script: the guard, its rules and its unit (run as root, once); with
    ``keep_alive`` the guard is the full agent from the bucket and the run resumes. The
    guard carries ``cloud``'s stop (:func:`boot_bundle`)."""
    rules.validate()
    data = rules.to_json()
    data.setdefault("runs_dir", "@RUNS@")  # <home>/<root>/runs: the script knows the home
    if keep_alive is None:
        unpack = _UNPACK.format(bundle=base64.b64encode(boot_bundle(cloud)).decode("ascii"))
        after = ""
    else:
        unpack = _FETCH_STEP.format(
            keep_alive=json.dumps(keep_alive.to_json(), separators=(",", ":")),
            fetch=fetch_blob())
        after = _RESUME_STEP
    return _SCRIPT.format(user=user, root=root.strip("/") or "gpudesk", state=STATE_DIR,
                          status=GUARD_STATUS_NAME, unpack=unpack, after=after,
                          rules=json.dumps(data, separators=(",", ":")), unit=UNIT)


SCRIPT_PATH = "/var/lib/gpudesk/first-boot.sh"


def user_data_size(cloud: str, text: str) -> tuple[int, int]:
    """(size as ``cloud`` counts it, its limit): the bytes sent (``user_data.encode``: gzip
    on AWS and Tencent Cloud), or their base64 where the cloud counts that
    (:data:`USER_DATA_LIMITS`)."""
    limit, counted = USER_DATA_LIMITS[cloud]
    sent = sent_user_data.encode(cloud, text)
    return (len(base64.b64encode(sent)) if counted == "base64" else len(sent)), limit


def user_data(rules: AgentRules, host_key: HostKey, *, user: str = "ubuntu",
              root: str = "gpudesk", keep_alive: KeepAlive | None = None,
              cloud: str = "") -> str:
    """The user data: cloud-config whose ``ssh_keys`` installs the desktop's host key before
    sshd first starts (cloud-init's ssh module; every other host key deleted, none
    generated), and whose ``runcmd`` runs :func:`script` (with ``cloud``'s stop). Under
    the clouds' size limit as each counts what it is sent (``user_data_size``):
    ``cloud``'s own (a keep-alive machine's, by its bucket's cloud), else every cloud's."""

    def block(text: str, indent: int) -> str:
        pad = " " * indent
        return "".join(pad + line + "\n" if line else "\n"
                       for line in text.rstrip("\n").split("\n"))

    cloud = cloud or (keep_alive.cloud if keep_alive is not None else "")
    text = ("#cloud-config\n"
            "ssh_deletekeys: true\n"
            "ssh_genkeytypes: []\n"
            "ssh_keys:\n"
            "  ed25519_private: |\n" + block(host_key.private_pem, 4)
            + f"  ed25519_public: {host_key.public_line}\n"
            "write_files:\n"
            f"  - path: {SCRIPT_PATH}\n"
            "    permissions: '0700'\n"
            "    content: |\n"
            + block(script(rules, user=user, root=root, keep_alive=keep_alive,
                           cloud=cloud), 6)
            + "runcmd:\n"
            f"  - [bash, {SCRIPT_PATH}]\n")
    for each in [cloud] if cloud in USER_DATA_LIMITS else list(USER_DATA_LIMITS):
        size, limit = user_data_size(each, text)
        if size > limit:
            raise FirstBootError(MSG_TOO_BIG, size=size, limit=limit)
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
                 rotation: RotationConfig | bool = True,
                 keep_alive: KeepAlive | None = None) -> None:
        self.settings = settings
        self.ledger = ledger
        self.keep_alive = keep_alive  # a keep-alive group's launch template (see above)
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
                         user=machine.ssh_user or "ubuntu", keep_alive=self.keep_alive,
                         cloud=machine.provider)
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
               rotation: RotationConfig | bool = True,
               keep_alive: KeepAlive | None = None) -> FirstBoot:
    """The launcher's first-boot hook (see :class:`FirstBoot`)."""
    return FirstBoot(settings, ledger, rotation, keep_alive)


def _paramiko_key(public_line: str) -> paramiko.PKey:
    kind, blob = public_line.split()[:2]
    return paramiko.PKey.from_type_string(kind, base64.b64decode(blob))
