"""Nothing makes the window wider than it was (issue 31): a stopped run's folded traceback
("Show the stop's traceback (29 lines)"), a lost run's "Recover on a new machine…" and its
long state appear on the Run page of a 1280 px window, in English and in Chinese, and the
window keeps its width; the buttons' whole words stay in their text and tooltip."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QApplication
from PySide6.QtWidgets import QPushButton

from gpudesk.services.cloud.catalog import load_catalog
from gpudesk.services.core.settings import Settings
from gpudesk.services.money.ledger import Ledger
from gpudesk.services.runs.detached import RunStatus
from gpudesk.ui.shell.i18n import install_translator
from gpudesk.ui.shell.main_window import MainWindow

WIDTH = 1280
STOPPED_LOG = "".join(
    ["[default0]:step 100 loss 1.2\n", "[default0]:Traceback (most recent call last):\n"]
    + [f'[default0]:  File "train.py", line {i}, in step\n' for i in range(27)]
    + ["torch.distributed.elastic.multiprocessing.api.SignalException: Process 4127 got "
       "signal: 15\n"])


@pytest.fixture(params=["en", "zh_CN"])
def window(request: pytest.FixtureRequest, qtbot: Any, qapp: QApplication
           ) -> Iterator[MainWindow]:
    assert install_translator(qapp, request.param) == request.param
    ledger = Ledger()
    w = MainWindow(Settings(language=request.param, welcomed=True), load_catalog(),
                   ledger=ledger)
    qtbot.addWidget(w)
    w.resize(WIDTH, 760)
    w.show()
    qtbot.waitExposed(w)
    yield w
    w.close()
    install_translator(qapp, "en")


def test_traceback_and_recover_never_widen_the_window(window: MainWindow, qtbot: Any) -> None:
    window.show_page("run")
    page = window.page("run")
    qtbot.waitUntil(lambda: window.width() == WIDTH)
    log, runs = page.log_view, page.run_list
    log.append_bytes(STOPPED_LOG.encode())
    assert log.fold_stop_traceback() == 29
    unfold = log.unfold_button
    qtbot.waitUntil(unfold.isVisible)
    assert unfold.text() == ("Show the stop's traceback (29 lines)"
                             if window.settings.language == "en" else unfold.text())
    assert "29" in unfold.text()
    runs.runs.addItem("vit-cifar-20261203-101502-4c1e — train_with_a_long_name.py "
                      "(ubuntu@54.210.7.19) · 1 GPU · not found on the machine", "run-x")
    runs.runs.setCurrentIndex(0)
    lost = RunStatus(state="lost")
    runs.show_state(lost, following=False, doubt=None)
    runs.update_buttons(lost, gone=True)
    qtbot.waitUntil(runs.recover_button.isVisible)
    QApplication.processEvents()
    assert window.width() == WIDTH
    assert window.minimumSizeHint().width() <= WIDTH
    # a button cut short shows its whole text on hover; the click still does what it says
    for button in (unfold, runs.recover_button):
        assert button.isVisible() and button.width() > 0
        shown = QPushButton.text(button)  # what is painted
        assert shown == button.text() or (shown.endswith("…") and button.toolTip())
    qtbot.mouseClick(unfold, Qt.MouseButton.LeftButton)
    assert unfold.isChecked() and "29" not in unfold.text()  # "Hide the stop's traceback"
    QApplication.processEvents()
    assert window.width() == WIDTH
