"""Refresh, fill, check and compile gpudesk's translations.

The ``.ts`` file is the source of truth (translators can open it in Qt
Linguist). This script:

1. runs ``pyside6-lupdate`` over ``gpudesk/**/*.py`` into the ``.ts``
   (existing translations are kept; vanished strings are dropped);
2. with ``--fill FILE.json`` sets translations from ``[[context, source,
   translation], ...]`` (handy for adding many at once);
3. with ``--todo FILE.json`` writes the untranslated entries in that format;
4. compiles the ``.qm`` with ``pyside6-lrelease``;
5. exits 1 if any entry is still unfinished (so CI can run it with ``--check``,
   which also skips writing anything).

Usage: ``python scripts/update_translations.py [--fill F] [--todo F] [--check]``
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TS = ROOT / "resources" / "translations" / "gpudesk_zh_CN.ts"
QM = TS.with_suffix(".qm")


def tool(name: str) -> str:
    """A Qt tool from the venv next to this Python, else from PATH."""
    local = Path(sys.executable).parent / name
    found = str(local) if local.exists() else shutil.which(name)
    if not found:
        raise SystemExit(f"{name} not found; install PySide6 (it ships {name})")
    return found


def sources() -> list[str]:
    return sorted(str(p.relative_to(ROOT)) for p in (ROOT / "gpudesk").rglob("*.py"))


def run_lupdate(ts: Path) -> None:
    subprocess.run([tool("pyside6-lupdate"), *sources(), "-no-obsolete", "-locations",
                    "none", "-target-language", "zh_CN", "-ts", str(ts)],
                   cwd=ROOT, check=True, capture_output=True, text=True)


def run_lrelease(ts: Path, qm: Path) -> None:
    subprocess.run([tool("pyside6-lrelease"), str(ts), "-qm", str(qm)], cwd=ROOT,
                   check=True, capture_output=True, text=True)


def messages(tree: ET.ElementTree) -> list[tuple[str, str, ET.Element]]:
    """(context, source, <translation> element) for every message."""
    out = []
    for context in tree.getroot().iter("context"):
        name = context.findtext("name", "")
        for message in context.iter("message"):
            translation = message.find("translation")
            if translation is None:
                translation = ET.SubElement(message, "translation")
            out.append((name, message.findtext("source", ""), translation))
    return out


def unfinished(ts: Path) -> list[tuple[str, str]]:
    return [(c, s) for c, s, t in messages(ET.parse(ts))
            if t.get("type") in ("unfinished", "vanished", "obsolete") or not (t.text or "")]


def fill(ts: Path, table: list[list[str]]) -> int:
    tree = ET.parse(ts)
    wanted = {(c, s): t for c, s, t in table}
    count = 0
    for context, source, translation in messages(tree):
        text = wanted.get((context, source))
        if text:
            translation.text = text
            translation.attrib.pop("type", None)
            count += 1
    write_ts(tree, ts)
    return count


def write_ts(tree: ET.ElementTree, ts: Path) -> None:
    ET.indent(tree, space="    ")
    body = ET.tostring(tree.getroot(), encoding="unicode")
    ts.write_text('<?xml version="1.0" encoding="utf-8"?>\n<!DOCTYPE TS>\n' + body + "\n",
                  encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--fill", type=Path, help="JSON [[context, source, translation]]")
    parser.add_argument("--todo", type=Path, help="write untranslated entries as JSON")
    parser.add_argument("--check", action="store_true", help="only check; change nothing")
    args = parser.parse_args(argv)
    if args.check:
        with tempfile.TemporaryDirectory() as tmp:
            copy = Path(tmp) / TS.name
            shutil.copy(TS, copy)
            run_lupdate(copy)
            missing = unfinished(copy)
    else:
        TS.parent.mkdir(parents=True, exist_ok=True)
        run_lupdate(TS)
        if args.fill:
            print(f"filled {fill(TS, json.loads(args.fill.read_text(encoding='utf-8')))}")
        missing = unfinished(TS)
        if args.todo:
            args.todo.write_text(json.dumps([[c, s, ""] for c, s in missing], indent=1,
                                            ensure_ascii=False), encoding="utf-8")
        run_lrelease(TS, QM)
    for context, source in missing:
        print(f"untranslated: [{context}] {source}")
    return 1 if missing else 0


if __name__ == "__main__":
    sys.exit(main())
