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
    assert "gpudesk.services.core.paths" in services_modules
    assert "gpudesk.services.core.settings" in services_modules
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


# What each room may import (besides itself, the standard library, third-party
# packages and the Qt-free leaves below). Mirrors the rooms' __init__ docstrings.
LEAVES = {"gpudesk", "gpudesk.i18n_marks", "gpudesk.resources", "gpudesk.sizing"}
ROOM_RULES: dict[str, set[str]] = {
    "gpudesk.services.core": set(),
    "gpudesk.services.money": {"gpudesk.services.core"},
    "gpudesk.services.cloud": {"gpudesk.services.core", "gpudesk.services.money"},
    "gpudesk.services.remote": {"gpudesk.services.core", "gpudesk.services.money",
                                "gpudesk.services.cloud", "gpudesk.agent"},
    "gpudesk.services.runs": {"gpudesk.services.core", "gpudesk.services.money",
                              "gpudesk.services.cloud", "gpudesk.services.remote",
                              "gpudesk.training"},
    "gpudesk.services.plan": {"gpudesk.services.core", "gpudesk.services.cloud"},
    "gpudesk.ui.widgets": {"gpudesk.services"},
    "gpudesk.ui.plan": {"gpudesk.services", "gpudesk.ui.widgets", "gpudesk.tracing"},
    "gpudesk.ui.machines": {"gpudesk.services", "gpudesk.ui.widgets"},
    "gpudesk.ui.run": {"gpudesk.services", "gpudesk.ui.widgets"},
    "gpudesk.ui.watch": {"gpudesk.services", "gpudesk.ui.widgets"},
    "gpudesk.ui.shell": {"gpudesk.services", "gpudesk.ui", "gpudesk.app"},
}


def _room_of(module: str) -> str | None:
    for room in sorted(ROOM_RULES, key=len, reverse=True):
        if module == room or module.startswith(room + "."):
            return room
    return None


def _gpudesk_imports(path: Path) -> set[str]:
    import ast

    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names if a.name.startswith("gpudesk"))
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0 \
                and node.module.startswith("gpudesk"):
            # `from gpudesk.services.cloud import accounts` names a module too
            found.update(f"{node.module}.{a.name}" for a in node.names)
    return found


def test_every_module_lives_in_a_room() -> None:
    for package in ("services", "ui"):
        loose = [p.name for p in (REPO / "gpudesk" / package).glob("*.py")
                 if p.name != "__init__.py"]
        assert loose == [], f"gpudesk/{package}/ holds modules outside any room: {loose}"


def test_rooms_import_only_what_their_docstring_allows() -> None:
    broken = []
    for room, allowed in ROOM_RULES.items():
        folder = REPO / Path(*room.split("."))
        assert (folder / "__init__.py").exists(), room
        assert "import" in (folder / "__init__.py").read_text(), f"{room}: say what it may import"
        for path in folder.rglob("*.py"):
            for name in _gpudesk_imports(path):
                if name.rsplit(".", 1)[0] in LEAVES or name in LEAVES:
                    continue
                target = _room_of(name)
                if target == room:
                    continue
                if not any(name == a or name.startswith(a + ".") for a in allowed):
                    broken.append(f"{path.relative_to(REPO)} imports {name}")
    assert broken == [], "\n".join(broken)


def test_the_room_rules_can_fail(tmp_path: Path) -> None:
    bad = tmp_path / "bad.py"
    bad.write_text("from gpudesk.services.remote import ssh\nimport gpudesk.ui.shell.theme\n")
    assert _gpudesk_imports(bad) == {"gpudesk.services.remote.ssh", "gpudesk.ui.shell.theme"}
    assert _room_of("gpudesk.services.remote.ssh") == "gpudesk.services.remote"
