"""What a push sends: the project folder walked under its ignore rules.

The project's ``.gitignore`` files, nested ones included (``pathspec``'s
GitIgnoreSpec), plus ``.git/info/exclude``; ``.git`` itself never goes; ignored
folders are not entered (git's rule). Its own module: the walk needs no SSH
(``sync`` is the push and pull over it).
"""

from __future__ import annotations

import contextlib
import os
import re
from collections.abc import Iterable
from dataclasses import dataclass
from dataclasses import field
from pathlib import Path

from pathspec import GitIgnoreSpec

from gpudesk.i18n_marks import QT_TRANSLATE_NOOP
from gpudesk.services.core.errors import TemplatedError

MSG_NOT_FOLDER = QT_TRANSLATE_NOOP(
    "Sync", "{path} is not a folder.")

MEASURE_LIMIT = 200_000  # entries counted per skipped folder for the plan, then "at least"


class SyncError(TemplatedError):
    translation_context = "Sync"


# --------------------------------------------------------------------------- results

@dataclass(slots=True)
class LocalFile:
    path: str  # relative, forward slashes
    size: int
    mtime_ns: int
    mode: int


@dataclass(frozen=True)
class Skipped:
    """Something not synced, and why: "gitignore", ".git", "symlink", "special"."""

    path: str
    reason: str
    size: int = 0  # bytes, measured only by plan_push
    files: int = 0
    is_dir: bool = False
    complete: bool = True  # False: the folder was too big to count fully


@dataclass(frozen=True)
class SyncPlan:
    """What a push would consider, for the "before the first sync" view."""

    root: Path
    files: tuple[LocalFile, ...]
    skipped: tuple[Skipped, ...]
    rules: IgnoreRules = field(repr=False, compare=False)

    @property
    def total_bytes(self) -> int:
        return sum(f.size for f in self.files)

    @property
    def skipped_bytes(self) -> int:
        return sum(s.size for s in self.skipped)


# --------------------------------------------------------------------------- ignore rules

_NAMED_GROUP = re.compile(r"\(\?P<[A-Za-z_][A-Za-z0-9_]*>")


class _Spec:
    """One .gitignore; a combined regex answers "no pattern matches" without a Python loop."""

    def __init__(self, lines: Iterable[str]) -> None:
        self.spec = GitIgnoreSpec.from_lines(lines)
        alternatives = [p.regex.pattern for p in self.spec.patterns
                        if p.include is not None and p.regex is not None]
        self.empty = not alternatives
        self.any: re.Pattern[str] | None = None
        if alternatives:
            with contextlib.suppress(re.error):
                self.any = re.compile("|".join(
                    f"(?:{_NAMED_GROUP.sub('(?:', a)})" for a in alternatives))

    def check(self, rel: str) -> bool | None:
        """True ignored, False re-included (``!``), None when no pattern speaks."""
        if self.empty or (self.any is not None and self.any.search(rel) is None):
            return None
        return self.spec.check_file(rel).include


Chain = tuple[tuple[int, _Spec], ...]  # (length of the base folder's prefix, spec)


class IgnoreRules:
    """The .gitignore files of one tree, keyed by the folder they sit in ("" for the top)."""

    def __init__(self) -> None:
        self.specs: dict[str, list[_Spec]] = {}

    def add(self, base: str, lines: Iterable[str]) -> _Spec | None:
        spec = _Spec(lines)
        if spec.empty:
            return None
        self.specs.setdefault(base, []).append(spec)
        return spec

    def chain_for(self, parent: Chain, base: str) -> Chain:
        extra = tuple((len(base) + 1 if base else 0, spec) for spec in self.specs.get(base, []))
        return parent + extra

    @staticmethod
    def decide(chain: Chain, rel: str, is_dir: bool) -> bool:
        probe = rel + "/" if is_dir else rel
        for offset, spec in reversed(chain):  # deeper files and later lines win
            sub = probe[offset:] if offset else probe
            if spec.any is not None and spec.any.search(sub) is None:
                continue  # the common case: no pattern of this file speaks
            verdict = spec.check(sub)
            if verdict is not None:
                return verdict
        return False

    def ignored(self, rel: str) -> bool:
        """Would a push skip ``rel`` (a file path) under these rules?"""
        parts = rel.split("/")
        if ".git" in parts:
            return True
        chain = self.chain_for((), "")
        for depth in range(1, len(parts)):
            folder = "/".join(parts[:depth])
            if self.decide(chain, folder, True):
                return True
            chain = self.chain_for(chain, folder)
        return self.decide(chain, rel, False)


def _read_lines(path: str) -> list[str]:
    try:
        with open(path, encoding="utf-8", errors="surrogateescape") as handle:
            return handle.read().splitlines()
    except OSError:
        return []


# --------------------------------------------------------------------------- scanning

def _measure(path: str) -> tuple[int, int, bool]:
    size = count = 0
    todo = [path]
    while todo:
        try:
            entries = list(os.scandir(todo.pop()))
        except OSError:
            continue
        for entry in entries:
            count += 1
            if count > MEASURE_LIMIT:
                return size, count, False
            try:
                if entry.is_dir(follow_symlinks=False):
                    todo.append(entry.path)
                elif entry.is_file(follow_symlinks=False):
                    size += entry.stat(follow_symlinks=False).st_size
            except OSError:
                continue
    return size, count, True


def scan(local: Path, *, measure_skipped: bool = False) -> SyncPlan:
    """Walk ``local`` under its ignore rules. Ignored folders are not entered (git's rule)."""
    root = Path(local)
    if not root.is_dir():
        raise SyncError(MSG_NOT_FOLDER, path=str(root))
    rules = IgnoreRules()
    rules.add("", _read_lines(os.path.join(root, ".git", "info", "exclude")))
    files: list[LocalFile] = []
    skipped: list[Skipped] = []
    windows = os.name == "nt"
    todo: list[tuple[str, str, Chain]] = [("", str(root), ())]
    while todo:
        rel_dir, abs_dir, parent_chain = todo.pop()
        try:
            entries = list(os.scandir(abs_dir))
        except OSError:
            skipped.append(Skipped(rel_dir, "unreadable", is_dir=True))
            continue
        if any(entry.name == ".gitignore" for entry in entries):
            rules.add(rel_dir, _read_lines(os.path.join(abs_dir, ".gitignore")))
        chain = rules.chain_for(parent_chain, rel_dir)
        for entry in entries:
            name = entry.name
            rel = f"{rel_dir}/{name}" if rel_dir else name
            try:
                if name == ".git":
                    skipped.append(_skip(entry, rel, ".git", measure_skipped))
                elif entry.is_symlink():
                    skipped.append(Skipped(rel, "symlink"))
                elif entry.is_dir():
                    if IgnoreRules.decide(chain, rel, True):
                        skipped.append(_skip(entry, rel, "gitignore", measure_skipped))
                    else:
                        todo.append((rel, entry.path, chain))
                elif entry.is_file():
                    info = entry.stat()
                    if IgnoreRules.decide(chain, rel, False):
                        skipped.append(Skipped(rel, "gitignore", info.st_size, 1))
                    else:
                        mode = 0o644 if windows else info.st_mode & 0o777
                        files.append(LocalFile(rel, info.st_size, info.st_mtime_ns, mode))
                else:
                    skipped.append(Skipped(rel, "special"))
            except OSError:
                skipped.append(Skipped(rel, "unreadable"))
    files.sort(key=lambda f: f.path)
    skipped.sort(key=lambda s: s.path)
    return SyncPlan(root, tuple(files), tuple(skipped), rules)


def _skip(entry: os.DirEntry[str], rel: str, reason: str, measure: bool) -> Skipped:
    if not entry.is_dir(follow_symlinks=False):
        return Skipped(rel, reason, entry.stat(follow_symlinks=False).st_size, 1)
    if not measure:
        return Skipped(rel, reason, is_dir=True)
    size, count, complete = _measure(entry.path)
    return Skipped(rel, reason, size, count, True, complete)


def plan_push(local: Path) -> SyncPlan:
    """What a push of ``local`` sends and skips, with the skipped folders' sizes."""
    return scan(local, measure_skipped=True)
