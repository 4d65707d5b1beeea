"""The whole journey by clicking (issue 14): only what a user uses — buttons clicked and
fields typed into, found by their object names (docs/object-names.md) — on a real loopback
sshd with real torchrun (CPU, gloo).

Add an own machine with its key (the dialog tests the login and pins the host key) → Run
an unmodified script (plain torch: no gpudesk import) → its log appears → Stop is enabled
→ confirm → stopped; close the window, open a new one → the run and its log come back.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("pytestqt")

from fixtures_sshd import SshdServer  # noqa: E402, F401
from fixtures_sshd import sshd  # noqa: E402, F401
from PySide6.QtCore import Qt  # noqa: E402
from PySide6.QtWidgets import QAbstractButton  # noqa: E402
from PySide6.QtWidgets import QComboBox  # noqa: E402
from PySide6.QtWidgets import QDialog  # noqa: E402
from PySide6.QtWidgets import QLabel  # noqa: E402
from PySide6.QtWidgets import QLineEdit  # noqa: E402
from PySide6.QtWidgets import QListWidget  # noqa: E402
from PySide6.QtWidgets import QMessageBox  # noqa: E402
from PySide6.QtWidgets import QPlainTextEdit  # noqa: E402
from PySide6.QtWidgets import QSpinBox  # noqa: E402
from PySide6.QtWidgets import QWidget  # noqa: E402

from gpudesk.services.cloud.catalog import load_catalog  # noqa: E402
from gpudesk.services.core.settings import Settings  # noqa: E402
from gpudesk.services.money.ledger import Ledger  # noqa: E402
from gpudesk.ui.shell.main_window import MainWindow  # noqa: E402

WAIT_MS = 120_000

# Not gpudesk's: a plain torch loop, as a third-party example would be.
SCRIPT = """\
import time
import torch

model = torch.nn.Linear(16, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.01)
x, y = torch.randn(64, 16), torch.randn(64, 1)
for step in range(1, 100000):
    loss = torch.nn.functional.mse_loss(model(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
    print(f"step {step} loss {loss.item():.4f}", flush=True)
    time.sleep(0.2)
"""


def find(root: QWidget, kind: type, name: str) -> Any:
    widget = root.findChild(kind, name)
    assert widget is not None, f"no {kind.__name__} named {name}"
    return widget


def click(qtbot, button: QAbstractButton) -> None:  # type: ignore[no-untyped-def]
    assert button.isVisible() and button.isEnabled(), button.objectName()
    qtbot.mouseClick(button, Qt.MouseButton.LeftButton)


def type_into(qtbot, field: QLineEdit, text: str) -> None:  # type: ignore[no-untyped-def]
    field.selectAll()
    qtbot.keyClick(field, Qt.Key.Key_Delete)
    qtbot.keyClicks(field, text)


def type_number(qtbot, spin: QSpinBox, value: int) -> None:  # type: ignore[no-untyped-def]
    line = spin.lineEdit()
    line.selectAll()
    qtbot.keyClicks(line, str(value))
    qtbot.keyClick(line, Qt.Key.Key_Tab)
    assert spin.value() == value


def go_to(qtbot, window: MainWindow, title: str) -> None:  # type: ignore[no-untyped-def]
    nav = find(window, QListWidget, "nav")
    item = nav.findItems(title, Qt.MatchFlag.MatchExactly)[0]
    rect = nav.visualItemRect(item)
    qtbot.mouseClick(nav.viewport(), Qt.MouseButton.LeftButton, pos=rect.center())
    assert nav.currentItem() is item


def visible_box(qtbot, root: QWidget, name: str) -> QMessageBox:  # type: ignore[no-untyped-def]
    qtbot.waitUntil(lambda: any(b.isVisible() for b in root.findChildren(QMessageBox, name)),
                    timeout=WAIT_MS)
    return next(b for b in root.findChildren(QMessageBox, name) if b.isVisible())


def answer_yes(qtbot, root: QWidget, name: str) -> str:  # type: ignore[no-untyped-def]
    box = visible_box(qtbot, root, name)
    text = box.text()
    click(qtbot, box.button(QMessageBox.StandardButton.Yes))
    return text


def open_window(qtbot) -> tuple[MainWindow, Ledger]:  # type: ignore[no-untyped-def]
    ledger = Ledger()
    window = MainWindow(Settings(language="en", welcomed=True), load_catalog(), ledger=ledger)
    window.show()
    qtbot.waitExposed(window)
    return window, ledger


def close_window(qtbot, window: MainWindow, ledger: Ledger) -> None:  # type: ignore[no-untyped-def]
    """Quit as a user does (the window saves what it shows), then gone: a real restart."""
    window.close()
    with qtbot.waitSignal(window.destroyed, timeout=WAIT_MS):
        window.deleteLater()
    ledger.close()


def test_the_whole_journey_by_clicking(qtbot, loop, sshd: SshdServer,  # noqa: F811
                                       tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    project = tmp_path / "example"
    project.mkdir()
    (project / "main.py").write_text(SCRIPT)
    machine_root = tmp_path / "machine"
    window, ledger = open_window(qtbot)

    # -- Accounts: add my own SSH machine, with its key; the dialog tests and pins
    go_to(qtbot, window, "Accounts")
    click(qtbot, find(window, QAbstractButton, "ownAdd"))
    dialog = find(window, QDialog, "ownMachineDialog")
    qtbot.waitExposed(dialog)
    type_into(qtbot, find(dialog, QLineEdit, "ownName"), "lab")
    type_into(qtbot, find(dialog, QLineEdit, "ownHost"), sshd.host)
    type_into(qtbot, find(dialog, QLineEdit, "ownUser"), sshd.user)
    type_number(qtbot, find(dialog, QSpinBox, "ownPort"), sshd.port)
    type_into(qtbot, find(dialog, QLineEdit, "ownKeyFile"), str(sshd.client_key))
    type_into(qtbot, find(dialog, QLineEdit, "ownPython"), sys.executable)
    type_into(qtbot, find(dialog, QLineEdit, "ownRoot"), str(machine_root))
    click(qtbot, find(dialog, QAbstractButton, "ownTestAdd"))
    asked = answer_yes(qtbot, dialog, "hostKeyQuestion")
    assert sshd.host_key_fingerprint in asked
    message = find(dialog, QLabel, "ownMessage")
    qtbot.waitUntil(lambda: "Added as lab" in message.text(), timeout=WAIT_MS)
    assert "pinned" in message.text() and "torch" in message.text(), message.text()
    click(qtbot, find(dialog, QAbstractButton, "ownClose"))
    own_list = find(window, QListWidget, "ownList")
    assert own_list.count() == 1 and str(sshd.client_key) in own_list.item(0).text()

    # -- Run: the machine from the list (its profile brings key and python), the script
    go_to(qtbot, window, "Run")
    combo = find(window, QComboBox, "runMachine")
    combo.setFocus()
    for _ in range(combo.count()):
        if combo.currentText().startswith("lab"):
            break
        qtbot.keyClick(combo, Qt.Key.Key_Down)
    assert combo.currentText().startswith("lab")
    assert find(window, QLineEdit, "runPython").text() == sys.executable  # from the profile
    type_into(qtbot, find(window, QLineEdit, "runProject"), str(project))
    type_into(qtbot, find(window, QLineEdit, "runScript"), "main.py")
    click(qtbot, find(window, QAbstractButton, "runStart"))
    log = find(window, QPlainTextEdit, "runLog")
    qtbot.waitUntil(lambda: "step 3 loss" in log.toPlainText(), timeout=WAIT_MS)
    assert "gpudesk: preflight on" in log.toPlainText()
    stop = find(window, QAbstractButton, "runStop")
    qtbot.waitUntil(stop.isEnabled, timeout=WAIT_MS)  # while it runs, not after
    state = find(window, QLabel, "runState")
    assert state.text() == "running"
    assert (machine_root / "projects").is_dir()  # the profile's folder on the machine

    # -- Stop asks first; Cancel keeps it running, Stop run stops it
    click(qtbot, stop)
    box = visible_box(qtbot, window, "stopRunQuestion")
    click(qtbot, box.button(QMessageBox.StandardButton.Cancel))
    qtbot.waitUntil(lambda: not box.isVisible(), timeout=WAIT_MS)
    assert state.text() == "running"
    click(qtbot, stop)
    click(qtbot, find(visible_box(qtbot, window, "stopRunQuestion"), QAbstractButton,
                      "stopRunConfirm"))
    qtbot.waitUntil(lambda: state.text().startswith("stopped on request"), timeout=WAIT_MS)
    assert not stop.isEnabled()
    shown_before = log.toPlainText()
    run_list = find(window, QComboBox, "runList")
    run_id = run_list.currentData()
    assert run_id and "main.py" in run_list.currentText()

    # -- close, open again: the run, its log and the form come back
    close_window(qtbot, window, ledger)
    window, ledger = open_window(qtbot)
    try:
        go_to(qtbot, window, "Run")
        run_list = find(window, QComboBox, "runList")
        assert run_list.currentData() == run_id
        log = find(window, QPlainTextEdit, "runLog")
        qtbot.waitUntil(lambda: "step 3 loss" in log.toPlainText(), timeout=WAIT_MS)
        state = find(window, QLabel, "runState")
        qtbot.waitUntil(lambda: state.text().startswith("stopped on request"),
                        timeout=WAIT_MS)
        steps = [line for line in shown_before.splitlines() if "step " in line]
        assert steps and steps[-1] in log.toPlainText()  # the whole log, to its last step
        assert find(window, QLineEdit, "runProject").text() == str(project)
        assert find(window, QLineEdit, "runScript").text() == "main.py"
        assert find(window, QComboBox, "runMachine").currentText().startswith("lab")
        assert not find(window, QAbstractButton, "runStop").isEnabled()
    finally:
        close_window(qtbot, window, ledger)


def test_object_names_of_the_journey_are_documented() -> None:
    doc = (Path(__file__).resolve().parent.parent / "docs" / "object-names.md").read_text()
    source = Path(__file__).read_text()
    import re

    used = set(re.findall(r',\s*"([a-z]+[A-Z]\w*)"\)', source))  # find(root, type, "name")
    assert {"ownAdd", "ownTestAdd", "runStart", "runStop", "stopRunConfirm"} <= used
    missing = sorted(n for n in used if f"`{n}`" not in doc)
    assert not missing, missing

