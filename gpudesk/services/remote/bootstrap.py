"""Is this machine ready to train? Driver, CUDA, Python and torch checked in one round trip.

:func:`check_machine` sends one small ``sh`` script on stdin (``sh -s``): it
runs ``nvidia-smi`` (the table head: driver version and the newest CUDA the
driver supports), ``nvidia-smi -L`` (the GPUs), ``nvcc --version`` and a
Python probe (version, ``torch.__version__``, ``torch.version.cuda``,
``torch.cuda.is_available()``, the device count), each between markers, and
:func:`parse_probe` / :func:`assess` turn that into a :class:`BootstrapReport`:
one :class:`Check` per item, ok / warning / error, in plain words with the fix.

The CUDA rule: a torch build for CUDA X.y runs on a driver that supports CUDA
X.z for any z (CUDA minor-version compatibility, since CUDA 11), so only a
newer *major* version than the driver's is an error; a newer minor version is
a warning, or an error when ``torch.cuda.is_available()`` says it did not work.
The suggested wheel is the newest PyTorch CUDA tag the driver supports.

:func:`ensure_requirements` installs the project's ``requirements.txt`` into
a venv on the machine (``--system-site-packages``, so a torch that came with
the image is used rather than downloaded again), and remembers a hash of the
file and the Python in the venv: a second call with the same file does nothing
and says so. Everything blocks (paramiko does); the window uses ``to_thread``.
"""

from __future__ import annotations

import hashlib
import json
import re
import secrets
import select
import shlex
import time
from collections import deque
from collections.abc import Callable
from collections.abc import Mapping
from dataclasses import dataclass
from dataclasses import field
from pathlib import Path
from typing import Any
from typing import Literal

from gpudesk.i18n_marks import QT_TRANSLATE_NOOP
from gpudesk.services.core.errors import TemplatedError
from gpudesk.services.remote.ssh import SshConnection

Level = Literal["ok", "warning", "error"]
CONTEXT = "Bootstrap"
DEFAULT_PYTHON = "python3"
PROBE_TIMEOUT_S = 300.0  # importing torch and initialising CUDA can take a while
INSTALL_TIMEOUT_S = 3600.0
MARKER = ".gpudesk-requirements"
REQUIREMENTS = "requirements.txt"
TORCH_INDEX = "https://download.pytorch.org/whl/"
# PyTorch's CUDA wheel tags (major, minor), oldest first.
WHEEL_TAGS: tuple[tuple[int, int], ...] = (
    (11, 8), (12, 1), (12, 4), (12, 6), (12, 8), (12, 9), (13, 0))
MIN_PYTHON = (3, 9)

# ---------------------------------------------------------------- messages (context Bootstrap)
MSG_DRIVER_OK = QT_TRANSLATE_NOOP(
    "Bootstrap", "NVIDIA driver {driver}, which supports CUDA up to {cuda}.")
MSG_NO_DRIVER = QT_TRANSLATE_NOOP(
    "Bootstrap", "No NVIDIA driver: nvidia-smi was not found on {target}. Use a GPU image "
    "that has the driver (for example an AWS Deep Learning AMI), or install it (on Ubuntu: "
    "sudo ubuntu-drivers install, then reboot).")
MSG_DRIVER_FAILED = QT_TRANSLATE_NOOP(
    "Bootstrap", "nvidia-smi is installed on {target} but failed ({detail}). The driver is "
    "not loaded: reboot the machine, or reinstall the driver that matches its kernel.")
MSG_DRIVER_UNPARSED = QT_TRANSLATE_NOOP(
    "Bootstrap", "nvidia-smi ran on {target}, but its output shows no driver version "
    "({detail}).")
MSG_GPUS_OK = QT_TRANSLATE_NOOP(
    "Bootstrap", "{count} GPU(s): {names}.")
MSG_NO_GPU = QT_TRANSLATE_NOOP(
    "Bootstrap", "The NVIDIA driver on {target} sees no GPU. Check that the instance type has "
    "a GPU, or stop and start the machine.")
MSG_NVCC_OK = QT_TRANSLATE_NOOP(
    "Bootstrap", "CUDA toolkit (nvcc) {nvcc}.")
MSG_NO_NVCC = QT_TRANSLATE_NOOP(
    "Bootstrap", "No CUDA toolkit (nvcc) on {target}. PyTorch wheels bring their own CUDA "
    "runtime, so training works; only building CUDA extensions (flash-attn, apex) needs it.")
MSG_NVCC_NEWER = QT_TRANSLATE_NOOP(
    "Bootstrap", "nvcc {nvcc} is newer than the CUDA {cuda} the driver {driver} supports: CUDA "
    "extensions built with it may not load. Install a CUDA toolkit {cuda} or older, or use "
    "an image with a newer driver.")
MSG_PYTHON_OK = QT_TRANSLATE_NOOP(
    "Bootstrap", "Python {version} ({executable}).")
MSG_NO_PYTHON = QT_TRANSLATE_NOOP(
    "Bootstrap", "No Python on {target} ('{python}' was not found). Install it (on Ubuntu: "
    "sudo apt install python3 python3-venv), or give the right one with --python.")
MSG_PYTHON_FAILED = QT_TRANSLATE_NOOP(
    "Bootstrap", "'{python}' on {target} did not run ({detail}).")
MSG_PYTHON_OLD = QT_TRANSLATE_NOOP(
    "Bootstrap", "Python {version} is older than current PyTorch supports ({minimum} or newer "
    "is needed). Use a newer python3, or an image that has one.")
MSG_TORCH_OK = QT_TRANSLATE_NOOP(
    "Bootstrap", "torch {torch} (built for CUDA {torch_cuda}) sees {devices} GPU(s).")
MSG_TORCH_CPU_OK = QT_TRANSLATE_NOOP(
    "Bootstrap", "torch {torch}, a build without CUDA (this machine has no NVIDIA driver).")
MSG_NO_TORCH = QT_TRANSLATE_NOOP(
    "Bootstrap", "torch is not installed for {python} ({detail}). Add torch to the project's "
    "requirements.txt, or install it: {install}.")
MSG_TORCH_CPU_ONLY = QT_TRANSLATE_NOOP(
    "Bootstrap", "torch {torch} is a CPU-only build, so it cannot use the {gpus} GPU(s): "
    "install a CUDA build ({install}).")
MSG_TORCH_TOO_NEW = QT_TRANSLATE_NOOP(
    "Bootstrap", "torch {torch} is built for CUDA {torch_cuda} but the driver {driver} "
    "supports up to CUDA {cuda}: install a torch built for {tag} ({install}) or use an image "
    "with a newer driver.")
MSG_TORCH_DRIVER_ANCIENT = QT_TRANSLATE_NOOP(
    "Bootstrap", "torch {torch} is built for CUDA {torch_cuda} but the driver {driver} "
    "supports only CUDA {cuda}, older than any current PyTorch build: use an image with a "
    "newer driver (525 or newer), or update the driver.")
MSG_TORCH_MINOR = QT_TRANSLATE_NOOP(
    "Bootstrap", "torch {torch} is built for CUDA {torch_cuda}, newer than the CUDA {cuda} of "
    "driver {driver}; it runs through CUDA minor-version compatibility, but some kernels may "
    "fail. For a perfect match install a torch built for {tag} ({install}).")
MSG_CUDA_UNAVAILABLE = QT_TRANSLATE_NOOP(
    "Bootstrap", "torch {torch} (CUDA {torch_cuda}) cannot use the GPU: "
    "torch.cuda.is_available() is False{detail}. Install a torch built for {tag} ({install}), "
    "or reboot if the driver was just installed.")
MSG_DEVICE_COUNT = QT_TRANSLATE_NOOP(
    "Bootstrap", "torch sees {devices} GPU(s) but the driver lists {gpus}; check "
    "CUDA_VISIBLE_DEVICES on {target}.")
MSG_PROBE_FAILED = QT_TRANSLATE_NOOP(
    "Bootstrap", "The checks could not run on {target} (exit status {status}): {detail}")
# requirements
MSG_NO_REQUIREMENTS = QT_TRANSLATE_NOOP(
    "Bootstrap", "{project} has no requirements.txt: nothing to install.")
MSG_REQ_CACHED = QT_TRANSLATE_NOOP(
    "Bootstrap", "The requirements are already installed in {venv} (requirements.txt has not "
    "changed): nothing to do.")
MSG_REQ_DONE = QT_TRANSLATE_NOOP(
    "Bootstrap", "Installed requirements.txt into {venv} in {seconds} s.")
MSG_STEP_VENV = QT_TRANSLATE_NOOP(
    "Bootstrap", "Creating a virtual environment in {venv} (it sees the machine's own "
    "packages, such as a preinstalled torch).")
MSG_STEP_PIP = QT_TRANSLATE_NOOP(
    "Bootstrap", "Installing requirements.txt with pip.")
MSG_VENV_FAILED = QT_TRANSLATE_NOOP(
    "Bootstrap", "Could not create a virtual environment in {venv} on {target}: {detail}. "
    "Install the venv module (on Ubuntu: sudo apt install python3-venv) and try again.")
MSG_PIP_FAILED = QT_TRANSLATE_NOOP(
    "Bootstrap", "Installing requirements.txt on {target} failed (pip exit status {status}): "
    "{detail}. Check the package names and versions in requirements.txt, and that the "
    "machine can reach the package index.")
MSG_INSTALL_DROPPED = QT_TRANSLATE_NOOP(
    "Bootstrap", "The install on {target} ended without a result (exit status {status}): "
    "{detail}")


class BootstrapError(TemplatedError):
    translation_context = CONTEXT


@dataclass(frozen=True)
class Note:
    """A message as template + values, so the window can translate it (context Bootstrap)."""

    template: str
    values: dict[str, Any] = field(default_factory=dict)

    @property
    def text(self) -> str:
        return self.template.format(**self.values)


@dataclass(frozen=True)
class Check:
    name: str  # driver, gpus, nvcc, python, torch, torch-cuda
    level: Level
    template: str
    values: dict[str, Any] = field(default_factory=dict)

    @property
    def message(self) -> str:
        return self.template.format(**self.values)


@dataclass(frozen=True)
class MachineFacts:
    """What the probe found; ``None`` / empty where a tool is missing."""

    smi_found: bool = False
    smi_status: int | None = None
    smi_output: str = ""
    driver: str = ""
    driver_cuda: str = ""
    gpu_names: tuple[str, ...] = ()
    nvcc: str = ""
    nvcc_found: bool = False
    python_found: bool = False
    python_status: int | None = None
    python_output: str = ""
    python: str = ""
    python_executable: str = ""
    torch: str = ""
    torch_error: str = ""
    torch_cuda: str | None = None
    cuda_available: bool | None = None
    torch_devices: int | None = None
    torch_warning: str = ""


@dataclass(frozen=True)
class BootstrapReport:
    target: str
    python: str  # the python that ran the probe (the venv's when there is one)
    facts: MachineFacts
    checks: tuple[Check, ...]

    @property
    def ok(self) -> bool:
        return not self.errors

    @property
    def errors(self) -> list[Check]:
        return [c for c in self.checks if c.level == "error"]

    @property
    def warnings(self) -> list[Check]:
        return [c for c in self.checks if c.level == "warning"]

    def check(self, name: str) -> Check | None:
        return next((c for c in self.checks if c.name == name), None)


# --------------------------------------------------------------------------- the probe

_PROBE_PY = r"""
import json, sys
out = {"python": "%d.%d.%d" % tuple(sys.version_info[:3]), "executable": sys.executable}
try:
    import torch
except Exception as exc:
    out["torch_error"] = "%s: %s" % (type(exc).__name__, exc)
else:
    out["torch"] = str(getattr(torch, "__version__", "?"))
    out["torch_cuda"] = getattr(getattr(torch, "version", None), "cuda", None)
    try:
        out["cuda_available"] = bool(torch.cuda.is_available())
        out["devices"] = int(torch.cuda.device_count())
    except Exception as exc:
        out["cuda_available"] = False
        out["cuda_error"] = "%s: %s" % (type(exc).__name__, exc)
sys.stdout.flush()
print("@@json " + json.dumps(out))
"""

_PROBE_SH = r"""
section() { _n=$1; shift; echo "@@begin $_n"; _o=$("$@" 2>&1); _rc=$?
  [ -n "$_o" ] && printf '%s\n' "$_o"; echo "@@end $_n $_rc"; }
if [ -n "${GPUDESK_VENV:-}" ] && [ -x "$GPUDESK_VENV/bin/python" ]; then
  PY="$GPUDESK_VENV/bin/python"; fi
T=""; command -v timeout >/dev/null 2>&1 && T="timeout 60"  # a wedged driver can hang it
if command -v nvidia-smi >/dev/null 2>&1; then
  section smi $T nvidia-smi; section smil $T nvidia-smi -L
else echo "@@missing smi"; fi
NVCC=$(command -v nvcc 2>/dev/null)
[ -z "$NVCC" ] && [ -x /usr/local/cuda/bin/nvcc ] && NVCC=/usr/local/cuda/bin/nvcc
if [ -n "$NVCC" ]; then section nvcc "$NVCC" --version; else echo "@@missing nvcc"; fi
if command -v "$PY" >/dev/null 2>&1; then section py "$PY" -c "$GPUDESK_PROBE"
else echo "@@missing py"; fi
exit 0
"""


def sh_path(path: str) -> str:
    """A remote path as a shell word; a leading ``~`` becomes ``$HOME`` (quoted ``~`` is not)."""
    if path == "~":
        return '"$HOME"'
    if path.startswith("~/"):
        return '"$HOME"/' + shlex.quote(path[2:])
    return shlex.quote(path)


def _heredoc(var: str, text: str) -> str:
    end = "GPUDESK_" + secrets.token_hex(6).upper()
    return f"{var}=$(cat <<'{end}'\n{text.rstrip(chr(10))}\n{end}\n)\n"


def probe_script(python: str = DEFAULT_PYTHON, *, path_prefix: str = "",
                 env: Mapping[str, str] | None = None, venv: str | None = None) -> str:
    """The ``sh`` script of one check round trip (sent on stdin, so nothing lands in argv)."""
    lines = ["#!/bin/sh"]
    if path_prefix:
        lines.append(f"PATH={shlex.quote(path_prefix)}:\"$PATH\"; export PATH")
    for key, value in (env or {}).items():
        if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", key):
            raise ValueError(f"not an environment variable name: {key!r}")
        lines.append(f"{key}={shlex.quote(value)}; export {key}")
    lines.append(f"PY={shlex.quote(python)}")
    lines.append(f"GPUDESK_VENV={sh_path(venv) if venv else ''}")
    return "\n".join(lines) + "\n" + _heredoc("GPUDESK_PROBE", _PROBE_PY) + _PROBE_SH


_SECTION = re.compile(r"^@@(begin|end|missing) (\w+)(?: (-?\d+))?$")
_DRIVER = re.compile(r"Driver Version:\s*([0-9][0-9.]*)")
_CUDA = re.compile(r"CUDA Version:\s*([0-9][0-9.]*)")
_GPU_LINE = re.compile(r"^GPU \d+: (.*?)(?: \(UUID: [^)]*\))?\s*$")
_NVCC = re.compile(r"release (\d+\.\d+)")


def parse_probe(text: str) -> MachineFacts:
    """The probe's output (sections between markers) as facts."""
    sections: dict[str, str] = {}
    status: dict[str, int] = {}
    missing: set[str] = set()
    current: str | None = None
    body: list[str] = []
    for line in text.splitlines():
        match = _SECTION.match(line)
        if match is None:
            if current is not None:
                body.append(line)
            continue
        kind, name, code = match.groups()
        if kind == "missing":
            missing.add(name)
        elif kind == "begin":
            current, body = name, []
        elif current == name:
            sections[name] = "\n".join(body)
            status[name] = int(code) if code is not None else -1
            current = None
    smi = sections.get("smi", "")
    driver = _DRIVER.search(smi)
    cuda = _CUDA.search(smi)
    names: list[str] = []
    if status.get("smil") == 0:
        for line in sections.get("smil", "").splitlines():
            if gpu := _GPU_LINE.match(line.strip()):
                names.append(gpu.group(1))
    nvcc = _NVCC.search(sections.get("nvcc", ""))
    facts: dict[str, Any] = dict(
        smi_found="smi" in sections, smi_status=status.get("smi"), smi_output=smi,
        driver=driver.group(1) if driver else "", driver_cuda=cuda.group(1) if cuda else "",
        gpu_names=tuple(names), nvcc=nvcc.group(1) if nvcc else "", nvcc_found="nvcc" in sections,
        python_found="py" in sections, python_status=status.get("py"),
        python_output=sections.get("py", ""))
    warnings: list[str] = []
    for line in sections.get("py", "").splitlines():
        if line.startswith("@@json "):
            try:
                data = json.loads(line[len("@@json "):])
            except ValueError:
                continue
            facts.update(python=str(data.get("python", "")),
                         python_executable=str(data.get("executable", "")),
                         torch=str(data.get("torch", "")),
                         torch_error=str(data.get("torch_error", "")),
                         torch_cuda=data.get("torch_cuda") or None,
                         cuda_available=data.get("cuda_available"),
                         torch_devices=data.get("devices"))
            if data.get("cuda_error"):
                warnings.append(str(data["cuda_error"]))
        elif "Warning" in line or "warn(" in line or "Error" in line:
            warnings.append(line.strip())
    facts["torch_warning"] = " ".join(w for w in warnings if w)[:400]
    return MachineFacts(**facts)


# --------------------------------------------------------------------------- judging

def version_tuple(text: str | None) -> tuple[int, ...]:
    """``"12.4"`` -> (12, 4); ``"2.5.1+cu124"`` -> (2, 5, 1); nothing parsable -> ()."""
    numbers = re.findall(r"\d+", (text or "").split("+", 1)[0])
    return tuple(int(n) for n in numbers[:3])


def wheel_tag_for(driver_cuda: str) -> str | None:
    """The newest PyTorch CUDA tag the driver runs: the newest at or below its CUDA version,
    else the oldest of the same major version (minor-version compatibility); else None."""
    have = version_tuple(driver_cuda)[:2]
    if len(have) < 2:
        return None
    fitting = [tag for tag in WHEEL_TAGS if tag <= have]
    if not fitting:
        fitting = [tag for tag in WHEEL_TAGS if tag[0] == have[0]][:1]
    return f"cu{fitting[-1][0]}{fitting[-1][1]}" if fitting else None


def install_command(tag: str | None) -> str:
    if tag is None:
        return "pip install torch"
    return f"pip install torch --index-url {TORCH_INDEX}{tag}"


def assess(facts: MachineFacts, target: str, python: str = DEFAULT_PYTHON) -> tuple[Check, ...]:
    """One check per item, each with its level and a message that says what to do."""
    checks: list[Check] = []
    driver_ok = False
    if not facts.smi_found:
        checks.append(Check("driver", "error", MSG_NO_DRIVER, {"target": target}))
    elif facts.smi_status != 0:
        detail = _first_line(facts.smi_output) or f"exit status {facts.smi_status}"
        checks.append(Check("driver", "error", MSG_DRIVER_FAILED,
                            {"target": target, "detail": detail}))
    elif not facts.driver:
        checks.append(Check("driver", "error", MSG_DRIVER_UNPARSED,
                            {"target": target, "detail": _first_line(facts.smi_output)}))
    else:
        driver_ok = True
        checks.append(Check("driver", "ok", MSG_DRIVER_OK,
                            {"driver": facts.driver, "cuda": facts.driver_cuda or "?"}))
    gpus = len(facts.gpu_names)
    if driver_ok:
        if gpus:
            checks.append(Check("gpus", "ok", MSG_GPUS_OK,
                                {"count": gpus, "names": ", ".join(facts.gpu_names)}))
        else:
            checks.append(Check("gpus", "error", MSG_NO_GPU, {"target": target}))
    tag = wheel_tag_for(facts.driver_cuda) if driver_ok else None
    install = install_command(tag)
    if not facts.nvcc_found or not facts.nvcc:
        checks.append(Check("nvcc", "warning", MSG_NO_NVCC, {"target": target}))
    elif (driver_ok and facts.driver_cuda
          and version_tuple(facts.nvcc)[:2] > version_tuple(facts.driver_cuda)[:2]):
        checks.append(Check("nvcc", "warning", MSG_NVCC_NEWER,
                            {"nvcc": facts.nvcc, "cuda": facts.driver_cuda,
                             "driver": facts.driver}))
    else:
        checks.append(Check("nvcc", "ok", MSG_NVCC_OK, {"nvcc": facts.nvcc}))
    if not facts.python_found:
        checks.append(Check("python", "error", MSG_NO_PYTHON,
                            {"target": target, "python": python}))
        return tuple(checks)
    if not facts.python:
        detail = _first_line(facts.python_output) or f"exit status {facts.python_status}"
        checks.append(Check("python", "error", MSG_PYTHON_FAILED,
                            {"target": target, "python": python, "detail": detail}))
        return tuple(checks)
    if version_tuple(facts.python)[:2] < MIN_PYTHON:
        checks.append(Check("python", "warning", MSG_PYTHON_OLD,
                            {"version": facts.python,
                             "minimum": ".".join(map(str, MIN_PYTHON))}))
    else:
        checks.append(Check("python", "ok", MSG_PYTHON_OK,
                            {"version": facts.python, "executable": facts.python_executable}))
    if not facts.torch:
        checks.append(Check("torch", "error", MSG_NO_TORCH,
                            {"python": facts.python_executable or python,
                             "detail": facts.torch_error[:200], "install": install}))
        return tuple(checks)
    checks.append(_torch_check(facts, target, tag, install, driver_ok, gpus))
    return tuple(checks)


def _torch_check(facts: MachineFacts, target: str, tag: str | None, install: str,
                 driver_ok: bool, gpus: int) -> Check:
    values: dict[str, Any] = {"torch": facts.torch, "torch_cuda": facts.torch_cuda or "-",
                              "driver": facts.driver, "cuda": facts.driver_cuda,
                              "tag": tag or "-", "install": install,
                              "devices": facts.torch_devices or 0, "gpus": gpus,
                              "target": target}
    if not driver_ok:
        if facts.torch_cuda is None:
            return Check("torch", "ok", MSG_TORCH_CPU_OK, values)
        return Check("torch", "ok", MSG_TORCH_OK, values)  # the driver check says the rest
    if facts.torch_cuda is None:
        level: Level = "error" if gpus else "ok"
        return Check("torch", level, MSG_TORCH_CPU_ONLY if gpus else MSG_TORCH_CPU_OK, values)
    built = version_tuple(facts.torch_cuda)[:2]
    have = version_tuple(facts.driver_cuda)[:2]
    if len(built) == 2 and len(have) == 2 and built[0] > have[0]:
        return Check("torch", "error", MSG_TORCH_TOO_NEW if tag else MSG_TORCH_DRIVER_ANCIENT,
                     values)
    if len(built) == 2 and len(have) == 2 and built > have:
        if facts.cuda_available is False:
            return Check("torch", "error", MSG_TORCH_TOO_NEW, values)
        return Check("torch", "warning", MSG_TORCH_MINOR, values)
    if facts.cuda_available is False and gpus:
        detail = f" ({facts.torch_warning[:200]})" if facts.torch_warning else ""
        return Check("torch", "error", MSG_CUDA_UNAVAILABLE, {**values, "detail": detail})
    if facts.torch_devices is not None and gpus and facts.torch_devices != gpus:
        return Check("torch", "warning", MSG_DEVICE_COUNT, values)
    return Check("torch", "ok", MSG_TORCH_OK, values)


def _first_line(text: str) -> str:
    for line in text.splitlines():
        if line.strip():
            return line.strip()[:200]
    return ""


def check_machine(conn: SshConnection, *, python: str = DEFAULT_PYTHON, path_prefix: str = "",
                  env: Mapping[str, str] | None = None, venv: str | None = None,
                  timeout: float = PROBE_TIMEOUT_S) -> BootstrapReport:
    """Run every check on the machine in one round trip; ``venv``'s python wins if it exists."""
    script = probe_script(python, path_prefix=path_prefix, env=env, venv=venv)
    result = conn.exec("sh -s", input=script.encode(), timeout=timeout,
                       what="checking the driver, CUDA, Python and torch")
    if not result.ok:
        detail = (result.stderr or result.stdout).decode("utf-8", "replace").strip()[-300:]
        raise BootstrapError(MSG_PROBE_FAILED, target=str(conn.target),
                             status=result.exit_status, detail=detail)
    facts = parse_probe(result.text)
    return BootstrapReport(str(conn.target), facts.python_executable or python, facts,
                           assess(facts, str(conn.target), python))


# --------------------------------------------------------------------------- requirements

@dataclass(frozen=True)
class RequirementsResult:
    venv: str
    python: str  # the venv's python on the machine, for gpudesk run --python
    digest: str
    cached: bool
    installed: bool
    seconds: float
    note: Note


Progress = Callable[[Note], None]


def requirements_digest(requirements: bytes, python: str) -> str:
    """What the cache is keyed on: the file's bytes and the Python the venv was made from."""
    h = hashlib.sha256(b"gpudesk-requirements-v1\0")
    h.update(python.encode("utf-8") + b"\0" + requirements)
    return h.hexdigest()


def install_script(requirements: bytes, venv: str, digest: str, *,
                   python: str = DEFAULT_PYTHON, cwd: str | None = None, path_prefix: str = "",
                   env: Mapping[str, str] | None = None) -> str:
    text = requirements.decode("utf-8", "replace")
    end = "GPUDESK_REQ_" + secrets.token_hex(6).upper()
    head = ["#!/bin/sh"]
    if path_prefix:
        head.append(f"PATH={shlex.quote(path_prefix)}:\"$PATH\"; export PATH")
    for key, value in (env or {}).items():
        if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", key):
            raise ValueError(f"not an environment variable name: {key!r}")
        head.append(f"{key}={shlex.quote(value)}; export {key}")
    head += [f"VENV={sh_path(venv)}", f"HASH={digest}", f"PY={shlex.quote(python)}",
             f"CWD={sh_path(cwd) if cwd else ''}"]
    body = f"""
MARK="$VENV/{MARKER}"
if [ -x "$VENV/bin/python" ] && [ "$(cat "$MARK" 2>/dev/null)" = "$HASH" ]; then
  echo "@@cached"; exit 0; fi
if ! command -v "$PY" >/dev/null 2>&1; then echo "@@nopython"; exit 20; fi
if [ ! -x "$VENV/bin/python" ]; then
  echo "@@step venv"
  mkdir -p "$VENV" && "$PY" -m venv --system-site-packages "$VENV" 2>&1 \\
    || {{ echo "@@fail venv"; exit 21; }}
fi
rm -f "$MARK"
cat > "$VENV/requirements.txt" <<'{end}'
{text.rstrip(chr(10))}
{end}
echo "@@step pip"
if [ -n "$CWD" ] && [ -d "$CWD" ]; then cd "$CWD"; fi
"$VENV/bin/python" -m pip install --disable-pip-version-check --no-input --progress-bar off \\
  -r "$VENV/requirements.txt" 2>&1
RC=$?
if [ "$RC" -ne 0 ]; then echo "@@fail pip $RC"; exit 22; fi
printf '%s\\n' "$HASH" > "$MARK.tmp" && mv "$MARK.tmp" "$MARK"
echo "@@done"
"""
    return "\n".join(head) + body


def ensure_requirements(conn: SshConnection, project: Path, venv: str, *,
                        python: str = DEFAULT_PYTHON, cwd: str | None = None,
                        path_prefix: str = "", env: Mapping[str, str] | None = None,
                        progress: Progress | None = None,
                        timeout: float = INSTALL_TIMEOUT_S) -> RequirementsResult:
    """Install ``project/requirements.txt`` into ``venv`` on the machine unless it is already
    there for this exact file; pip's output comes to ``progress`` line by line."""
    report = progress or (lambda _n: None)
    started = time.monotonic()
    venv_python = venv.rstrip("/") + "/bin/python"
    try:
        requirements = (Path(project) / REQUIREMENTS).read_bytes()
    except FileNotFoundError:
        note = Note(MSG_NO_REQUIREMENTS, {"project": str(project)})
        report(note)
        return RequirementsResult(venv, python, "", False, False, 0.0, note)
    digest = requirements_digest(requirements, python)
    script = install_script(requirements, venv, digest, python=python, cwd=cwd,
                            path_prefix=path_prefix, env=env)
    target = str(conn.target)
    tail: deque[str] = deque(maxlen=40)
    marks: list[str] = []

    def on_line(line: str) -> None:
        if line.startswith("@@"):
            marks.append(line)
            if line == "@@step venv":
                report(Note(MSG_STEP_VENV, {"venv": venv}))
            elif line == "@@step pip":
                report(Note(MSG_STEP_PIP))
            return
        tail.append(line)
        if line.strip():
            report(Note("{line}", {"line": line}))

    status = _stream(conn, "sh -s", script.encode(), on_line, timeout,
                     "installing the requirements")
    seconds = round(time.monotonic() - started, 1)
    if "@@cached" in marks:
        note = Note(MSG_REQ_CACHED, {"venv": venv})
        report(note)
        return RequirementsResult(venv, venv_python, digest, True, False, seconds, note)
    if "@@done" in marks and status == 0:
        note = Note(MSG_REQ_DONE, {"venv": venv, "seconds": seconds})
        report(note)
        return RequirementsResult(venv, venv_python, digest, False, True, seconds, note)
    if "@@nopython" in marks:
        raise BootstrapError(MSG_NO_PYTHON, target=target, python=python)
    if "@@fail venv" in marks:
        raise BootstrapError(MSG_VENV_FAILED, venv=venv, target=target,
                             detail=_error_lines(tail))
    pip = next((m for m in marks if m.startswith("@@fail pip")), None)
    if pip is not None:
        raise BootstrapError(MSG_PIP_FAILED, target=target, status=pip.split()[-1],
                             detail=_error_lines(tail))
    raise BootstrapError(MSG_INSTALL_DROPPED, target=target, status=status,
                         detail=_error_lines(tail) or "-")


def _error_lines(lines: deque[str]) -> str:
    """pip's ``ERROR:`` lines when it printed any, else the last few lines."""
    wanted = [ln.strip() for ln in lines if ln.strip().startswith(("ERROR", "error:"))]
    if not wanted:
        wanted = [ln.strip() for ln in lines if ln.strip()][-3:]
    return " ".join(wanted)[-600:]


def _stream(conn: SshConnection, command: str, data: bytes, on_line: Callable[[str], None],
            timeout: float, what: str) -> int:
    """Run ``command`` with ``data`` on stdin, handing each output line over as it comes."""
    chan = conn.start(command, what)
    try:
        chan.sendall(data)
        chan.shutdown_write()
        deadline = time.monotonic() + timeout
        pending = b""
        while True:
            if chan.recv_ready():
                chunk = chan.recv(1 << 16)
                if not chunk:
                    break
                pending += chunk
                *lines, pending = pending.split(b"\n")
                for raw in lines:
                    on_line(raw.decode("utf-8", "replace").rstrip("\r"))
                continue
            while chan.recv_stderr_ready():
                for raw in chan.recv_stderr(1 << 16).splitlines():
                    on_line(raw.decode("utf-8", "replace"))
            if chan.eof_received and not chan.recv_ready():
                break
            left = deadline - time.monotonic()
            if left <= 0:
                raise BootstrapError(MSG_INSTALL_DROPPED, target=str(conn.target), status="-",
                                     detail=f"no result within {int(timeout)} s")
            select.select([chan], [], [], min(1.0, left))
        if pending:
            on_line(pending.decode("utf-8", "replace"))
        return chan.recv_exit_status()
    finally:
        chan.close()
