"""How gpudesk's modules may import each other.

The core (calc, services, cli) must import with Qt absent, and without torch:
those checks run in a fresh interpreter whose import system refuses PySide6,
shiboken6, qasync and pyqtgraph, as if they were not installed. Each room
imports only what its ``__init__`` docstring allows, and no two modules import
each other, however indirectly (read statically, with ``ast``).
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

    def on_error(name):
        failures[name] = traceback.format_exc()

    try_import("gpudesk.sizing")  # the calculator's old name, kept importable
    for room in ("gpudesk.calc", "gpudesk.services"):
        package = try_import(room)
        if package is not None:
            for info in pkgutil.walk_packages(package.__path__, room + ".", onerror=on_error):
                try_import(info.name)
    package = try_import("gpudesk.cli")
    if package is not None:
        for info in pkgutil.walk_packages(package.__path__, "gpudesk.cli.", onerror=on_error):
            try_import(info.name)
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
    assert {"gpudesk.sizing", "gpudesk.calc.sizing", "gpudesk.calc.tracing",
            "gpudesk.cli", "gpudesk.cli.entry", "gpudesk.cli.cloud"} <= set(report["imported"])
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
LEAVES = {"gpudesk", "gpudesk.i18n_marks", "gpudesk.resources"}
# Old names of moved modules: thin re-exports, judged as the module they stand for.
# gpudesk.sizing stays for good; the others go once nothing imports them.
MOVED = {f"gpudesk.{name}": f"gpudesk.calc.{name}"
         for name in ("sizing",)}  # the old name kept importable
ROOM_RULES: dict[str, set[str]] = {
    "gpudesk.calc": {"gpudesk.services.core"},
    "gpudesk.services.core": set(),
    "gpudesk.services.money": {"gpudesk.services.core"},
    "gpudesk.services.cloud": {"gpudesk.services.core", "gpudesk.services.money"},
    "gpudesk.services.storage": {"gpudesk.services.core", "gpudesk.services.money",
                                 "gpudesk.services.cloud"},
    "gpudesk.services.remote": {"gpudesk.services.core", "gpudesk.services.money",
                                "gpudesk.services.cloud", "gpudesk.agent"},
    "gpudesk.services.runs": {"gpudesk.services.core", "gpudesk.services.money",
                              "gpudesk.services.cloud", "gpudesk.services.remote",
                              "gpudesk.services.storage", "gpudesk.training",
                              "gpudesk.agent"},
    "gpudesk.services.plan": {"gpudesk.services.core", "gpudesk.services.cloud", "gpudesk.calc",
                              "gpudesk.services.runs"},
    "gpudesk.ui.widgets": {"gpudesk.services", "gpudesk.calc"},
    "gpudesk.ui.plan": {"gpudesk.services", "gpudesk.ui.widgets", "gpudesk.calc"},
    "gpudesk.ui.machines": {"gpudesk.services", "gpudesk.ui.widgets"},
    "gpudesk.ui.run": {"gpudesk.services", "gpudesk.ui.widgets"},
    "gpudesk.ui.watch": {"gpudesk.services", "gpudesk.ui.widgets"},
    "gpudesk.ui.data": {"gpudesk.services", "gpudesk.ui.widgets"},
    "gpudesk.ui.shell": {"gpudesk.services", "gpudesk.ui", "gpudesk.app", "gpudesk.calc"},
    "gpudesk.cli": {"gpudesk.services", "gpudesk.calc", "gpudesk.agent", "gpudesk.logs"},
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
    # gpudesk/ itself: the entry points and the leaves every room may use; the command
    # line lives in gpudesk/cli, the calculator in gpudesk/calc (sizing.py is its old name)
    top = sorted(p.stem for p in (REPO / "gpudesk").glob("*.py"))
    assert top == ["__init__", "__main__", "app", "i18n_marks", "logs", "resources",
                   "sizing"], top


def test_rooms_import_only_what_their_docstring_allows() -> None:
    broken = []
    for room, allowed in ROOM_RULES.items():
        folder = REPO / Path(*room.split("."))
        assert (folder / "__init__.py").exists(), room
        assert "import" in (folder / "__init__.py").read_text(), f"{room}: say what it may import"
        for path in folder.rglob("*.py"):
            for name in _gpudesk_imports(path):
                name = next((new + name[len(old):] for old, new in MOVED.items()
                             if name == old or name.startswith(old + ".")), name)
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


# --------------------------------------------------------------------------- no circles


def _module_files(root: Path, package: str) -> dict[str, Path]:
    """Every module of ``package`` (a folder under ``root``) by dotted name."""
    found: dict[str, Path] = {}
    for path in (root / Path(*package.split("."))).rglob("*.py"):
        parts = path.relative_to(root).with_suffix("").parts
        found[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return found


def _import_graph(root: Path, package: str = "gpudesk") -> dict[str, set[str]]:
    """Module -> the modules of ``package`` it imports, read with ``ast``.

    Every ``import`` and ``from ... import`` counts, wherever it is: at the top,
    inside a function (a lazy import) or under ``if TYPE_CHECKING:``; a circle
    that only a lazy import closes is still a circle. Relative imports are
    resolved against the importing module's package. ``from pkg import name``
    is an edge to ``pkg.name`` when that is a module, else to ``pkg``; a name
    that is not a module resolves to its longest prefix that is. Not counted:
    the parent packages that Python runs on the way (``import a.b.c`` runs
    ``a/__init__`` and ``a/b/__init__``), which are the package's own mechanics,
    not an arrow; with them every ``__init__`` that imports a child would be a
    circle. No package ``__init__`` is otherwise exempt.
    """
    import ast

    files = _module_files(root, package)

    def module_of(dotted: str) -> str | None:
        while dotted and dotted not in files:
            dotted = dotted.rpartition(".")[0]
        return dotted or None

    graph: dict[str, set[str]] = {}
    for name, path in files.items():
        here = name if path.name == "__init__.py" else name.rpartition(".")[0]
        targets: set[str | None] = set()
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                targets.update(module_of(a.name) for a in node.names)
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    up = here.split(".")[: len(here.split(".")) - (node.level - 1)]
                    base = ".".join(up + ([node.module] if node.module else []))
                for a in node.names:
                    full = f"{base}.{a.name}"
                    targets.add(full if full in files else module_of(base))
        graph[name] = {t for t in targets if t is not None and t != name}
    return graph


def _circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def test_no_import_circles() -> None:
    graph = _import_graph(REPO)
    assert "gpudesk.calc.sizing" in graph["gpudesk.sizing"]
    assert "gpudesk.services.money.billing" in graph["gpudesk.services.money.ledger"]
    circles = _circles(graph)
    assert circles == [], "modules that import each other (move what they share down):\n" + \
        "\n".join(" <-> ".join(c) for c in circles)


def test_the_circle_check_can_fail(tmp_path: Path) -> None:
    pkg = tmp_path / "gpudesk"
    (pkg / "room").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "room" / "__init__.py").write_text('"""May import nothing."""\n')
    (pkg / "top.py").write_text("from gpudesk.room import low\n")
    # a relative import one way, a lazy one back, and one under TYPE_CHECKING
    (pkg / "room" / "low.py").write_text("from . import mid\n")
    (pkg / "room" / "mid.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from ..top import x\n")
    (pkg / "room" / "lazy.py").write_text("def f():\n    import gpudesk.room.other\n")
    (pkg / "room" / "other.py").write_text("from gpudesk.room.lazy import f\n")
    graph = _import_graph(tmp_path)
    assert graph["gpudesk.room.low"] == {"gpudesk.room.mid"}
    assert graph["gpudesk.room.mid"] == {"gpudesk.top"}
    assert _circles(graph) == [["gpudesk.room.lazy", "gpudesk.room.other"],
                               ["gpudesk.room.low", "gpudesk.room.mid", "gpudesk.top"]]
    (pkg / "room" / "lazy.py").write_text("def f():\n    pass\n")
    (pkg / "room" / "mid.py").write_text("")
    assert _circles(_import_graph(tmp_path)) == []
