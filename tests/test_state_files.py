"""State files: written whole or not at all, and readable by their owner alone."""

from __future__ import annotations

import logging
import os
import stat
from pathlib import Path

import pytest

from gpudesk import logs
from gpudesk.cli.args import number_of
from gpudesk.services.core import files
from gpudesk.services.money.ledger import Ledger

posix_only = pytest.mark.skipif(os.name != "posix", reason="file modes are POSIX")


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


@posix_only
def test_atomic_write_replaces_whole_and_private(tmp_path: Path) -> None:
    target = tmp_path / "deep" / "state.json"
    files.atomic_write_text(target, "old\n")
    target.chmod(0o644)  # an older version's file, too wide
    files.atomic_write_text(target, "new\n")
    assert target.read_text() == "new\n"
    assert _mode(target) == 0o600
    assert [p.name for p in target.parent.iterdir()] == ["state.json"]


def test_atomic_write_failure_keeps_the_old_file(tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    target = tmp_path / "pins"
    files.atomic_write_text(target, "kept")

    def broken_replace(src: str, dst: str) -> None:
        raise OSError("disk full")

    monkeypatch.setattr(files.os, "replace", broken_replace)
    with pytest.raises(OSError, match="disk full"):
        files.atomic_write_text(target, "lost")
    assert target.read_text() == "kept"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["pins"]  # no temp file left


@posix_only
def test_ledger_database_is_private(tmp_path: Path) -> None:
    path = tmp_path / "ledger.sqlite3"
    path.touch(mode=0o644)
    path.chmod(0o644)
    ledger = Ledger(path)
    try:
        assert _mode(path) == 0o600
    finally:
        ledger.close()


@posix_only
def test_log_file_is_private(tmp_path: Path) -> None:
    path = tmp_path / "gpudesk.log"
    handler = logs.private_rotating_handler(str(path), max_bytes=200, backups=1)
    try:
        record = logging.LogRecord("t", logging.INFO, __file__, 1, "x" * 300, None, None)
        handler.emit(record)
        handler.emit(record)  # rotates: the new file is private too
    finally:
        handler.close()
    assert _mode(path) == 0o600
    assert _mode(path.with_name("gpudesk.log.1")) == 0o600


@pytest.mark.parametrize(("text", "zero_ok", "ok"), [
    ("1.5", False, True), ("0", False, False), ("0", True, True), ("-2", True, False),
    ("nan", True, False), ("ten", False, False)])
def test_number_arguments(text: str, zero_ok: bool, ok: bool) -> None:
    import argparse

    parse = number_of("seconds", zero_ok=zero_ok)
    if ok:
        assert parse(text) == float(text)
    else:
        with pytest.raises(argparse.ArgumentTypeError, match="number of seconds"):
            parse(text)


def test_records_from_before_the_log_file_opens_reach_it(tmp_path: Path,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """The window opens its log file after the first paint; what was logged before is kept."""
    monkeypatch.setenv("GPUDESK_HOME", str(tmp_path))
    root = logging.getLogger()
    saved = root.handlers[:]
    for handler in saved:
        root.removeHandler(handler)
    try:
        logs.hold_early_records()
        logging.getLogger("gpudesk.early").warning("said before the file was open")
        logs.setup_logging()
        logging.getLogger("gpudesk.late").info("said after")
        for handler in root.handlers:
            handler.flush()
        text = (tmp_path / "log" / "gpudesk.log").read_text(encoding="utf-8")
    finally:
        for handler in root.handlers[:]:
            root.removeHandler(handler)
            handler.close()
        for handler in saved:
            root.addHandler(handler)
    early, late = text.index("said before the file was open"), text.index("said after")
    assert early < late
    assert text.count("said before the file was open") == 1
