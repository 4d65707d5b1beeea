"""Open terminal on macOS: the ssh command reaches the shell word for word."""

from __future__ import annotations

import re
import shlex

import pytest

pytest.importorskip("PySide6")

from gpudesk.ui.run import run_page  # noqa: E402


def _unescape_applescript(literal: str) -> str:
    return re.sub(r'\\(["\\])', r"\1", literal)


def test_macos_terminal_gets_each_word_quoted(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(run_page.sys, "platform", "darwin")
    argv = ["ssh", "-o", "UserKnownHostsFile=/Users/a/Library/Application Support/gpudesk/kh",
            "-i", '/Users/a/keys/it"s $(touch pwned); key', "-p", "2222", "root@10.0.0.5"]
    found = run_page.terminal_command(argv)
    assert found is not None
    program, args = found
    assert program == "osascript"
    m = re.fullmatch(r'tell application "Terminal" to do script "(.*)"', args[1], re.S)
    assert m, args[1]
    literal = m.group(1)
    assert re.search(r'(?<!\\)"', literal) is None  # no quote ends the AppleScript string early
    assert shlex.split(_unescape_applescript(literal)) == argv  # the shell sees these words
