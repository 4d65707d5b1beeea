"""The sentences that decide money are always readable (issue 31): the Launch dialog's guard
text for a Tencent "stop" and a kept-alive spot machine, and Change budget's refusal, are
shown whole — the dialog grows to them and scrolls past the screen, never clips — in English
and in Chinese. Typed and clicked like a person."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QApplication
from PySide6.QtWidgets import QDialog
from PySide6.QtWidgets import QLabel
from PySide6.QtWidgets import QPushButton
from PySide6.QtWidgets import QWidget

from gpudesk.services.cloud.catalog import load_catalog
from gpudesk.services.money.ledger import Ledger
from gpudesk.services.money.ledger import Machine
from gpudesk.ui.machines.budget_dialog import BudgetDialog
from gpudesk.ui.machines.launch_dialog import LaunchDialog
from gpudesk.ui.shell.i18n import install_translator
from gpudesk.ui.widgets.money import DISPLAY


@pytest.fixture(params=["en", "zh_CN"])
def language(request: pytest.FixtureRequest, qapp: QApplication) -> Iterator[str]:
    assert install_translator(qapp, request.param) == request.param
    yield request.param
    install_translator(qapp, "en")


def assert_whole(qtbot: Any, dialog: QDialog, label: QLabel) -> None:
    """The label's whole text shows: as tall as its wrapped lines need, inside the dialog's
    visible part (after scrolling to it, where the screen is smaller than the text), and
    the dialog within the screen's free area."""
    qtbot.waitUntil(lambda: label.height() >= label.heightForWidth(label.width()))
    body = dialog.body  # type: ignore[attr-defined]
    body.ensureWidgetVisible(label, 0, 0)
    qtbot.waitUntil(lambda: label.visibleRegion().boundingRect() == label.rect())
    assert label.text() and label.isVisible()
    # never cut off sideways: the label is no wider than what the dialog shows of it
    assert label.mapTo(dialog, label.rect().topRight()).x() <= dialog.width()
    screen = dialog.screen().availableGeometry()
    assert dialog.height() <= screen.height()
    assert dialog.width() <= screen.width()


def _launch_dialog(qtbot: Any, provider: str, *, spot: bool) -> LaunchDialog:
    catalog = load_catalog()
    offer = next(o for o in catalog.offers if o.provider == provider
                 and (not spot or o.spot_price is not None or provider == "aws"))

    async def never(_plan: object, _report: object) -> None:
        raise RuntimeError

    dialog = LaunchDialog(offer, catalog, never, spot=spot, money=DISPLAY,  # type: ignore[arg-type]
                          detect=False, on_budget="stop")
    qtbot.addWidget(dialog)
    dialog.show()
    qtbot.waitExposed(dialog)
    qtbot.waitUntil(lambda: not dialog.body.settling)
    qtbot.waitUntil(lambda: dialog.width() >= dialog.minimumSizeHint().width())
    return dialog


def _type_budget(qtbot: Any, dialog: LaunchDialog, amount: str) -> None:
    dialog.budget.setFocus()
    dialog.budget.selectAll()
    qtbot.keyClicks(dialog.budget, amount)
    qtbot.keyClick(dialog.budget, Qt.Key.Key_Tab)


def test_tencent_stop_guard_is_shown_whole(qtbot: Any, language: str) -> None:
    dialog = _launch_dialog(qtbot, "tencent", spot=False)
    _type_budget(qtbot, dialog, "40")
    assert dialog.budget.value() == 40.0
    text = dialog.guard_text.text()
    # the end of the sentence that decides money (it was cut off after "A stop from inside a")
    assert ("STOP_CHARGING" in text) and len(text) > 120
    assert_whole(qtbot, dialog, dialog.guard_text)
    assert_whole(qtbot, dialog, dialog.cost)


def test_kept_alive_spot_guard_is_shown_whole(qtbot: Any, language: str) -> None:
    dialog = _launch_dialog(qtbot, "aws", spot=True)
    assert dialog.spot.isChecked()
    width = dialog.width()
    dialog.keep_alive.setFocus()
    qtbot.keyClick(dialog.keep_alive, Qt.Key.Key_Space)
    assert dialog.keep_alive.isChecked()
    _type_budget(qtbot, dialog, "5")
    assert "$5.00" in dialog.guard_text.text()
    assert_whole(qtbot, dialog, dialog.guard_text)
    assert dialog.width() == width  # taller, never wider


def test_change_budget_refusal_is_shown_whole(qtbot: Any, language: str) -> None:
    ledger = Ledger()
    m = ledger.add(Machine(id="m-textvisible", provider="tencent", region="ap-guangzhou",
                           instance_type="GN7.2XLARGE32", cloud_id="ins-8k2j4h1q",
                           state="running", name="m-textvisible", budget=12.0,
                           on_budget="terminate"))
    parent = QWidget()
    qtbot.addWidget(parent)
    dialog = BudgetDialog(ledger, m, None, DISPLAY, parent=parent)  # type: ignore[arg-type]
    dialog.show()
    qtbot.waitExposed(dialog)
    dialog.amount.clear()
    qtbot.keyClicks(dialog.amount, "0")
    qtbot.mouseClick(dialog.findChild(QPushButton, "budgetApply"), Qt.MouseButton.LeftButton)
    assert dialog.error.isVisible() and "0" in dialog.error.text()
    assert_whole(qtbot, dialog, dialog.error)
    assert ledger.get(m.id).budget == 12.0  # nothing changed
    dialog.close()
