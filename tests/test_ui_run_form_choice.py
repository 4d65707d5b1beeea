"""What the user chose on the Run form stays chosen (issue 31): refilling the machine list
(a machine added on Accounts) or switching the language never picks another machine nor
takes another machine's GPU count."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QApplication
from PySide6.QtWidgets import QComboBox
from PySide6.QtWidgets import QSpinBox

from gpudesk.services.money.ledger import Ledger
from gpudesk.services.money.ledger import Machine
from gpudesk.ui.run.run_page import RunPage
from gpudesk.ui.shell.i18n import install_translator


@pytest.fixture
def ledger(tmp_path: Path) -> Iterator[Ledger]:
    with Ledger(tmp_path / "ledger.sqlite") as led:
        yield led


def _own(ledger: Ledger, name: str, gpus: int, address: str) -> Machine:
    return ledger.add(Machine(id=f"m-{name}", provider="own", name=name, public_ip=address,
                              ssh_user="alice", gpus=gpus, state="ready", origin="added"))


def test_chosen_machine_and_gpus_stay_across_reload_and_language(
        qtbot: Any, loop: Any, ledger: Ledger, qapp: QApplication) -> None:
    _own(ledger, "gpubox", 2, "10.8.0.12")
    _own(ledger, "cpubox", 0, "10.8.0.13")
    page = RunPage(ledger)
    qtbot.addWidget(page)
    page.show()
    page.reload_machines()
    combo = page.findChild(QComboBox, "runMachine")
    nproc = page.findChild(QSpinBox, "runNproc")
    assert combo is not None and nproc is not None
    # the user picks cpubox from the list, with the keyboard
    combo.setFocus()
    while not combo.currentText().startswith("cpubox"):
        qtbot.keyClick(combo, Qt.Key.Key_Down)
    assert page.machine_ref() == "m-cpubox" and nproc.value() == 0  # a CPU run
    # a machine added on Accounts refills the list: nothing the user chose moves
    _own(ledger, "another", 4, "10.8.0.14")
    page.reload_machines()
    assert combo.count() == 3
    assert page.machine_ref() == "m-cpubox" and combo.currentText().startswith("cpubox")
    assert nproc.value() == 0
    # a language switch relabels the list; the machine and its GPU count stay
    assert install_translator(qapp, "zh_CN") == "zh_CN"
    try:
        qtbot.waitUntil(lambda: "自己的机器" in combo.itemText(0) or
                        combo.itemText(0) != "gpubox — own machine (10.8.0.12)")
        page.reload_machines()
        assert page.machine_ref() == "m-cpubox" and combo.currentText().startswith("cpubox")
        assert combo.currentText() == combo.itemText(combo.currentIndex())
        assert nproc.value() == 0
    finally:
        install_translator(qapp, "en")
    page.reload_machines()
    assert page.machine_ref() == "m-cpubox" and nproc.value() == 0
    assert combo.currentText() == "cpubox — own machine (10.8.0.13)"
    # a typed address stays typed across a refill
    combo.lineEdit().selectAll()
    qtbot.keyClicks(combo.lineEdit(), "ssh://bob@10.9.9.9:2222")
    page.reload_machines()
    assert page.machine_ref() == "ssh://bob@10.9.9.9:2222"
    page.shutdown()
