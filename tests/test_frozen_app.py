"""Build the one-folder PyInstaller bundle once, then use it the way a user would.

Slow (a build takes from half a minute to a few minutes), but part of the default
run: a bundle that cannot find its resources, its keyring backends or its Qt
plugins is only caught by running the frozen executables. Installs PyInstaller
into the current environment when it is missing. A second, probe bundle (the
same spec around another entry script, built in parallel) checks keyring and
pyqtgraph at run time. ``GPUDESK_FROZEN_BUNDLE=DIR`` tests an existing
``dist/gpudesk`` folder instead of building the app bundle.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
SPEC = REPO / "packaging" / "gpudesk.spec"
EXE_SUFFIX = ".exe" if sys.platform == "win32" else ""
MAX_BUNDLE_MIB = 400


@dataclass(frozen=True)
class Bundle:
    root: Path  # dist/gpudesk
    build_seconds: float | None  # None when GPUDESK_FROZEN_BUNDLE was used

    @property
    def internal(self) -> Path:
        return self.root / "_internal"

    def exe(self, name: str) -> Path:
        return self.root / f"{name}{EXE_SUFFIX}"


def _ensure_pyinstaller() -> None:
    if importlib.util.find_spec("PyInstaller") is not None:
        return
    # pyproject.toml's `test` extra should list pyinstaller; until then, install it here.
    result = subprocess.run(
        [sys.executable, "-m", "pip", "install", "--quiet", "--disable-pip-version-check",
         "pyinstaller>=6.10"],
        capture_output=True, text=True, timeout=600,
    )
    if result.returncode != 0:
        pytest.fail("cannot install PyInstaller:\n" + result.stdout[-2000:] + result.stderr[-2000:])
    importlib.invalidate_caches()


PROBE = """\
import json, os, sys
from importlib.metadata import entry_points

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
from PySide6.QtWidgets import QApplication

app = QApplication([])
import pyqtgraph

plot = pyqtgraph.PlotWidget()
plot.plot([1, 2, 3], [3, 1, 2])
plot.show()
app.processEvents()
import keyring

loaded = {}
for ep in entry_points(group="keyring.backends"):
    try:
        ep.load()
        loaded[ep.name] = "ok"
    except Exception as exc:
        loaded[ep.name] = repr(exc)
backend = type(keyring.get_keyring())
# The cloud SDKs with their data files: a client is built offline (no call is made).
import boto3, paramiko
from tencentcloud.common import credential
from tencentcloud.cvm.v20170312 import cvm_client
from tencentcloud.vpc.v20170312 import vpc_client

session = boto3.session.Session(aws_access_key_id="AKIAEXAMPLE", aws_secret_access_key="x")
clouds = [type(session.client(name, region_name="us-east-1")).__name__
          for name in ("ec2", "sts", "ssm")]
cred = credential.Credential("AKIDEXAMPLE", "x")
clouds += [type(cvm_client.CvmClient(cred, "ap-guangzhou")).__name__,
           type(vpc_client.VpcClient(cred, "ap-guangzhou")).__name__,
           type(paramiko.Ed25519Key).__name__]
print(json.dumps({"pyqtgraph": pyqtgraph.__version__, "entry_points": loaded,
                  "default": backend.__module__ + "." + backend.__name__, "clouds": clouds}))
"""


def _start_build(tmp: Path, entry: Path | None) -> subprocess.Popen[str]:
    env = dict(os.environ)
    if entry is not None:
        env["GPUDESK_PYI_ENTRY"] = str(entry)
    return subprocess.Popen(
        [sys.executable, "-m", "PyInstaller", "--noconfirm", "--log-level", "WARN",
         "--distpath", str(tmp / "dist"), "--workpath", str(tmp / "work"), str(SPEC)],
        cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )


def _finish_build(process: subprocess.Popen[str], what: str) -> None:
    output, _ = process.communicate(timeout=1800)
    if process.returncode != 0:
        pytest.fail(f"PyInstaller failed on the {what} ({process.returncode}):\n{output[-6000:]}")


@pytest.fixture(scope="session")
def builds(tmp_path_factory: pytest.TempPathFactory) -> tuple[Bundle, Path]:
    """The app bundle, and a probe bundle: the same spec around PROBE (built in parallel)."""
    _ensure_pyinstaller()
    tmp = tmp_path_factory.mktemp("pyinstaller")
    probe_script = tmp / "gpudesk_probe.py"
    probe_script.write_text(PROBE, encoding="utf-8")
    given = os.environ.get("GPUDESK_FROZEN_BUNDLE", "").strip()
    started = time.monotonic()
    probe = _start_build(tmp / "probe", probe_script)
    app = None if given else _start_build(tmp / "app", None)
    if app is not None:
        _finish_build(app, "app")
    seconds = time.monotonic() - started
    _finish_build(probe, "probe")
    if given:
        return Bundle(Path(given), None), tmp / "probe" / "dist" / "gpudesk"
    return Bundle(tmp / "app" / "dist" / "gpudesk", seconds), tmp / "probe" / "dist" / "gpudesk"


@pytest.fixture(scope="session")
def bundle(builds: tuple[Bundle, Path]) -> Bundle:
    return builds[0]


def _run(
    bundle: Bundle, name: str, args: list[str], home: Path, **env: str
) -> subprocess.CompletedProcess[str]:
    full_env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "GPUDESK_"))}
    full_env.update(GPUDESK_HOME=str(home), QT_QPA_PLATFORM="offscreen", **env)
    return subprocess.run(
        [str(bundle.exe(name)), *args], env=full_env, cwd=home.parent,
        capture_output=True, text=True, timeout=120,
    )


def _bundle_mb(root: Path) -> float:
    total = sum(p.lstat().st_size for p in root.rglob("*") if p.is_file() and not p.is_symlink())
    return total / 2**20


def test_gui_exe_shows_the_window_and_quits(bundle: Bundle, gpudesk_home: Path) -> None:
    # Needs gpudesk/ui/shell/main_window.py; without it this fails with an ImportError.
    result = _run(bundle, "gpudesk-gui", [], gpudesk_home,
                  GPUDESK_QUIT_AFTER_MS="500", GPUDESK_REPORT_SHOWN="1")
    tail = result.stderr[-4000:]
    assert result.returncode == 0, tail
    assert re.search(r"^shown-at \d+\.\d+$", result.stderr, re.M), "window never shown:\n" + tail
    assert "starting" in (gpudesk_home / "log" / "gpudesk.log").read_text(encoding="utf-8")


def test_cli_exe_sizes_a_model(bundle: Bundle, gpudesk_home: Path) -> None:
    result = _run(bundle, "gpudesk", ["size", "--model", "gpt2", "--json"], gpudesk_home)
    assert result.returncode == 0, result.stderr[-4000:]
    out = json.loads(result.stdout)
    assert out["model"] == "gpt2"
    assert isinstance(out["total_bytes"], int) and out["total_bytes"] > 0


def test_cli_exe_keeps_the_ledger(bundle: Bundle, gpudesk_home: Path) -> None:
    added = _run(bundle, "gpudesk",
                 ["add-machine", "lab", "ssh://alice@10.0.0.1:2222", "--no-test"], gpudesk_home)
    assert added.returncode == 0, added.stderr[-4000:]
    listed = _run(bundle, "gpudesk", ["ls", "--json", "--no-reconcile"], gpudesk_home)
    assert listed.returncode == 0, listed.stderr[-4000:]
    (row,) = json.loads(listed.stdout)
    assert (row["name"], row["provider"], row["public_address"]) == ("lab", "own", "10.0.0.1")


def test_cli_exe_ranks_offers_from_the_bundled_catalog(bundle: Bundle, gpudesk_home: Path) -> None:
    result = _run(bundle, "gpudesk", ["offers", "--model", "gpt2", "--json"], gpudesk_home)
    assert result.returncode == 0, result.stderr[-4000:]
    out = json.loads(result.stdout)
    assert out["catalog_price_date"]
    assert out["offers"], "no offers: the catalog CSVs were not found in the bundle?"


def test_bundle_has_no_torch_and_a_bounded_size(
    bundle: Bundle, capsys: pytest.CaptureFixture[str]
) -> None:
    assert not (bundle.internal / "torch").exists(), "torch must not be bundled"
    assert not list(bundle.internal.glob("torch-*.dist-info"))
    assert not (bundle.internal / "tensorflow").exists()
    assert "torch" not in _pyz_modules(bundle)
    size_mb = _bundle_mb(bundle.root)
    with capsys.disabled():
        built = "" if bundle.build_seconds is None else f", built in {bundle.build_seconds:.0f} s"
        print(f"\nfrozen bundle {bundle.root}: {size_mb:.1f} MiB{built}")
    assert size_mb < MAX_BUNDLE_MIB


def test_bundle_has_resources_and_translations(bundle: Bundle) -> None:
    resources = bundle.internal / "resources"
    assert (resources / "translations" / "gpudesk_zh_CN.qm").is_file()
    assert list((resources / "catalog").glob("*.csv"))
    assert (resources / "icons" / "gpudesk.png").is_file()


def _pyz_modules(bundle: Bundle) -> set[str]:
    """Module names in the bytecode archive embedded in the console executable."""
    from PyInstaller.archive.readers import CArchiveReader

    archive = CArchiveReader(str(bundle.exe("gpudesk")))
    names = [name for name in archive.toc if name.endswith(".pyz")]
    assert names, f"no PYZ in {sorted(archive.toc)}"
    return set(archive.open_embedded_archive(names[0]).toc)


def test_bundle_has_keyring_backends_and_only_the_qt_modules_it_needs(bundle: Bundle) -> None:
    modules = _pyz_modules(bundle)
    # keyring discovers backends through its entry points, then imports them.
    assert {"keyring.backends.SecretService", "keyring.backends.Windows",
            "keyring.backends.macOS", "secretstorage", "jeepney.io.blocking"} <= modules
    (dist_info,) = bundle.internal.glob("keyring-*.dist-info")
    assert "SecretService" in (dist_info / "entry_points.txt").read_text(encoding="utf-8")
    assert {"gpudesk.app", "gpudesk.cli", "qasync", "pyqtgraph"} <= modules

    pyside = bundle.internal / "PySide6"
    present = {p.name.split(".")[0] for p in pyside.glob("Qt*.*") if p.suffix in (".so", ".pyd")}
    # pyqtgraph imports QtOpenGL and QtOpenGLWidgets unconditionally.
    assert {"QtCore", "QtGui", "QtWidgets", "QtSvg", "QtOpenGL", "QtOpenGLWidgets"} <= present
    assert not present & {"QtNetwork", "QtQml", "QtQuick", "QtWebEngineCore", "QtTest"}


def test_frozen_keyring_pyqtgraph_and_cloud_sdks_work(builds: tuple[Bundle, Path],
                                                      gpudesk_home: Path) -> None:
    probe = Bundle(builds[1], None)
    result = _run(probe, "gpudesk", [], gpudesk_home,
                  DBUS_SESSION_BUS_ADDRESS=os.environ.get("DBUS_SESSION_BUS_ADDRESS", ""))
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-4000:]
    out = json.loads(result.stdout.strip().splitlines()[-1])
    assert out["pyqtgraph"]
    assert out["clouds"][:3] == ["EC2", "STS", "SSM"], out
    assert out["clouds"][3:5] == ["CvmClient", "VpcClient"], out
    platform_backend = {"linux": "SecretService", "win32": "Windows", "darwin": "macOS"}
    name = platform_backend.get(sys.platform)
    if name is not None:
        assert out["entry_points"].get(name) == "ok", out
    # With a session bus and an unlocked keyring (scripts/test.sh sets one up), the
    # frozen app must pick the real Secret Service, not keyring's fail backend.
    if sys.platform == "linux" and os.environ.get("DBUS_SESSION_BUS_ADDRESS"):
        assert out["default"].startswith("keyring.backends.SecretService."), out
    elif sys.platform in ("win32", "darwin"):
        assert out["default"].startswith(f"keyring.backends.{name}"), out
