"""The core (sizing, services, cli) must import with Qt absent, and without torch.

Each check runs in a fresh interpreter whose import system refuses PySide6,
shiboken6, qasync and pyqtgraph, as if they were not installed.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent

BLOCKER = textwrap.dedent(
    """
    import importlib.abc
    import sys

    BLOCKED = ("PySide6", "shiboken6", "qasync", "pyqtgraph")

    class BlockQt(importlib.abc.MetaPathFinder):
        def find_spec(self, name, path=None, target=None):
            if name.split(".")[0] in BLOCKED:
                raise ModuleNotFoundError(f"{name} is blocked in this test", name=name)
            return None

    sys.meta_path.insert(0, BlockQt())
    try:
        import PySide6  # noqa: F401
    except ImportError:
        pass
    else:
        raise SystemExit("the Qt blocker does not work")
    """
)

IMPORT_CORE = textwrap.dedent(
    """
    import importlib
    import json
    import pkgutil
    import traceback

    failures = {}
    imported = []

    def try_import(name):
        try:
            module = importlib.import_module(name)
        except BaseException:
            failures[name] = traceback.format_exc()
            return None
        imported.append(name)
        return module

    try_import("gpudesk.sizing")
    services = try_import("gpudesk.services")
    if services is not None:
        def on_error(name):
            failures[name] = traceback.format_exc()
        for info in pkgutil.walk_packages(
            services.__path__, "gpudesk.services.", onerror=on_error
        ):
            try_import(info.name)
    try_import("gpudesk.cli")
    try_import("gpudesk.__main__")
    try_import("gpudesk.resources")

    print(json.dumps({
        "failures": failures,
        "imported": imported,
        "torch": sorted(m for m in sys.modules if m == "torch" or m.startswith("torch.")),
        "qt": sorted(m for m in sys.modules if m.split(".")[0] in BLOCKED),
    }))
    """
)


def _run(code: str, *args: str) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH")]))
    return subprocess.run(
        [sys.executable, "-c", code, *args],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_core_imports_without_qt_and_without_torch() -> None:
    result = _run(BLOCKER + IMPORT_CORE)
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout.strip().splitlines()[-1])
    assert not report["failures"], "\n".join(
        f"--- {name}\n{tb}" for name, tb in report["failures"].items()
    )
    services_modules = [m for m in report["imported"] if m.startswith("gpudesk.services.")]
    assert "gpudesk.services.paths" in services_modules
    assert "gpudesk.services.settings" in services_modules
    assert {"gpudesk.sizing", "gpudesk.cli"} <= set(report["imported"])
    assert report["qt"] == []
    assert report["torch"] == [], "torch must only be imported when tracing a model"


def test_cli_help_runs_without_qt() -> None:
    code = BLOCKER + textwrap.dedent(
        """
        import runpy
        sys.argv = ["gpudesk", "--help"]
        runpy.run_module("gpudesk", run_name="__main__", alter_sys=True)
        """
    )
    result = _run(code)
    assert result.returncode == 0, result.stderr
    assert "usage" in result.stdout.lower()
