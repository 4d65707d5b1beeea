"""The first screen is made without naming Qt's namespace (issue 31, a fast start).

Naming any member of ``Qt`` makes PySide6 build Python enums for all of it (93 enums,
about 13 ms): ``ui/widgets/qt_early`` gives the Plan page Qt's values by number and by
key instead. These tests hold the numbers to Qt's enums, the keys to their effect, and
the Plan page to being made, restored inputs and all, before ``Qt`` is built.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QLabel
from PySide6.QtWidgets import QScrollArea
from PySide6.QtWidgets import QSplitter

from gpudesk.ui.widgets import qt_early

REPO = Path(__file__).resolve().parent.parent


def test_the_numbers_are_qts_own() -> None:
    role = Qt.ItemDataRole
    assert role.DisplayRole.value == qt_early.DISPLAY_ROLE
    assert role.ToolTipRole.value == qt_early.TOOLTIP_ROLE
    assert role.TextAlignmentRole.value == qt_early.TEXT_ALIGNMENT_ROLE
    assert role.ForegroundRole.value == qt_early.FOREGROUND_ROLE
    assert role.UserRole.value == qt_early.USER_ROLE
    right = Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter
    assert right.value == qt_early.ALIGN_RIGHT_VCENTER


def test_keys_set_what_the_enums_would(qtbot: object) -> None:
    label, splitter, scroll = QLabel(), QSplitter(), QScrollArea()
    qt_early.set_keys(label, textFormat="PlainText", alignment="AlignLeft|AlignTop",
                      textInteractionFlags="TextSelectableByMouse")
    qt_early.set_keys(splitter, orientation="Vertical")
    qt_early.set_keys(scroll, horizontalScrollBarPolicy="ScrollBarAlwaysOff")
    assert label.textFormat() == Qt.TextFormat.PlainText
    assert label.alignment() == Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignTop
    assert label.textInteractionFlags() == Qt.TextInteractionFlag.TextSelectableByMouse
    assert splitter.orientation() == Qt.Orientation.Vertical
    assert scroll.horizontalScrollBarPolicy() == Qt.ScrollBarPolicy.ScrollBarAlwaysOff
    with pytest.raises(ValueError, match="textFormat"):  # a misspelt key is no silent no-op
        qt_early.set_keys(label, textFormat="Plaintext")


_MAKE_PLAN_PAGE = """
import sys
import PySide6.QtCore as core
from PySide6.QtWidgets import QApplication

app = QApplication([])
from gpudesk.services.core.settings import load_settings
from gpudesk.ui.shell.main_window import MainWindow

window = MainWindow(load_settings(), deferred=True)
window.show()
window.finish_start(background_later=True)
print("plan made, Qt built:", "Qt" in core.__dict__, window.plan.form.preset.currentData())
window.start_background()
print("started, Qt built:", "Qt" in core.__dict__)
"""


@pytest.mark.parametrize("last_plan", [None, "restored"])
def test_the_plan_page_is_made_before_qt_is_built(gpudesk_home: Path,
                                                  last_plan: str | None) -> None:
    settings: dict[str, object] = {"version": 1, "language": "en", "welcomed": True,
                                   "theme": "light", "system_scheme_seen": "light"}
    if last_plan:  # a user's last inputs: another sort, filters, spot, another model
        settings["last_plan"] = {"preset": "llama-2-7b", "sort": "price", "batch": "4",
                                 "filters": {"spot": True, "max_price": "3",
                                             "provider": "aws", "region": "us-east-1"}}
    (gpudesk_home / "config").mkdir(parents=True)
    (gpudesk_home / "config" / "settings.json").write_text(json.dumps(settings))
    env = dict(os.environ, QT_QPA_PLATFORM="offscreen",
               PYTHONPATH=os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])))
    result = subprocess.run([sys.executable, "-c", _MAKE_PLAN_PAGE], cwd=REPO, env=env,
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr[-3000:]
    preset = "llama-2-7b" if last_plan else "gpt2"
    assert f"plan made, Qt built: False {preset}" in result.stdout, result.stdout
    # ...and it is built once what works behind the first screen starts (key shortcuts)
    assert "started, Qt built: True" in result.stdout, result.stdout
