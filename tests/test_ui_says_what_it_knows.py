"""Issue 25, "a window that never says more than it knows", by clicking: Preferences that
check every field and keep still, Welcome's own-machine button, the page the window
reopens on, the own-machine dialog's pins and messages, the Tencent key check's words.

Only what a user uses: buttons clicked and fields typed into, found by object name.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("pytestqt")

from fixtures_aws import MotoAws  # noqa: E402, F401
from fixtures_aws import aws  # noqa: E402, F401
from fixtures_aws import moto_server  # noqa: E402, F401
from fixtures_keyring import memory_keyring  # noqa: E402, F401
from fixtures_sshd import SshdServer  # noqa: E402, F401
from fixtures_sshd import _write_ed25519  # noqa: E402, F401
from fixtures_sshd import sshd  # noqa: E402, F401
from fixtures_tencent import SECRET_ID  # noqa: E402, F401
from fixtures_tencent import SECRET_KEY  # noqa: E402, F401
from fixtures_tencent import tencent  # noqa: E402, F401
from fixtures_tencent import tencent_server  # noqa: E402, F401
from PySide6.QtCore import QCoreApplication  # noqa: E402
from PySide6.QtCore import QEvent  # noqa: E402
from PySide6.QtCore import QPoint  # noqa: E402
from PySide6.QtCore import Qt  # noqa: E402
from PySide6.QtWidgets import QAbstractButton  # noqa: E402
from PySide6.QtWidgets import QComboBox  # noqa: E402
from PySide6.QtWidgets import QDialog  # noqa: E402
from PySide6.QtWidgets import QDialogButtonBox  # noqa: E402
from PySide6.QtWidgets import QLabel  # noqa: E402
from PySide6.QtWidgets import QLineEdit  # noqa: E402
from PySide6.QtWidgets import QListWidget  # noqa: E402
from PySide6.QtWidgets import QMessageBox  # noqa: E402
from PySide6.QtWidgets import QScrollArea  # noqa: E402
from PySide6.QtWidgets import QSpinBox  # noqa: E402
from PySide6.QtWidgets import QWidget  # noqa: E402

from gpudesk.services.cloud.accounts import TENCENT_ENDPOINT_ENV  # noqa: E402
from gpudesk.services.cloud.catalog import load_catalog  # noqa: E402
from gpudesk.services.cloud.credentials import save_credentials  # noqa: E402
from gpudesk.services.core.settings import Settings  # noqa: E402
from gpudesk.services.core.settings import load_settings  # noqa: E402
from gpudesk.services.core.settings import save_settings  # noqa: E402
from gpudesk.services.money.ledger import Ledger  # noqa: E402
from gpudesk.services.remote.host_keys import PinStore  # noqa: E402
from gpudesk.ui.shell.main_window import MainWindow  # noqa: E402

WAIT_MS = 60_000


# ---------------------------------------------------------------- helpers: a user's hands


def find(root: QWidget, kind: type, name: str) -> Any:
    widget = root.findChild(kind, name)
    assert widget is not None, f"no {kind.__name__} named {name}"
    return widget


def click(qtbot, button: QAbstractButton) -> None:  # type: ignore[no-untyped-def]
    assert button.isVisible() and button.isEnabled(), button.objectName()
    qtbot.mouseClick(button, Qt.MouseButton.LeftButton)


def type_into(qtbot, field: QLineEdit, text: str) -> None:  # type: ignore[no-untyped-def]
    field.setFocus()
    field.selectAll()
    qtbot.keyClick(field, Qt.Key.Key_Delete)
    if text:
        qtbot.keyClicks(field, text)


def type_number(qtbot, spin: QSpinBox, value: int) -> None:  # type: ignore[no-untyped-def]
    line = spin.lineEdit()
    line.selectAll()
    qtbot.keyClicks(line, str(value))
    qtbot.keyClick(line, Qt.Key.Key_Tab)
    assert spin.value() == value


def choose(qtbot, combo: QComboBox, key: str) -> None:  # type: ignore[no-untyped-def]
    """Pick the item whose data is ``key`` with the arrow keys."""
    combo.setFocus()
    target = combo.findData(key)
    assert target >= 0, key
    step = Qt.Key.Key_Down if target > combo.currentIndex() else Qt.Key.Key_Up
    while combo.currentIndex() != target:
        qtbot.keyClick(combo, step)


def go_to(qtbot, window: MainWindow, title: str) -> None:  # type: ignore[no-untyped-def]
    nav = find(window, QListWidget, "nav")
    item = nav.findItems(title, Qt.MatchFlag.MatchExactly)[0]
    qtbot.mouseClick(nav.viewport(), Qt.MouseButton.LeftButton,
                     pos=nav.visualItemRect(item).center())
    assert nav.currentItem() is item


def visible_box(qtbot, root: QWidget, name: str) -> QMessageBox:  # type: ignore[no-untyped-def]
    qtbot.waitUntil(lambda: any(b.isVisible() for b in root.findChildren(QMessageBox, name)),
                    timeout=WAIT_MS)
    return next(b for b in root.findChildren(QMessageBox, name) if b.isVisible())


def ok_button(dialog: QDialog) -> QAbstractButton:
    buttons = dialog.findChild(QDialogButtonBox)
    assert buttons is not None
    return buttons.button(QDialogButtonBox.StandardButton.Ok)


def open_window(qtbot, ledger: Ledger | None = None,  # type: ignore[no-untyped-def]
                settings: Settings | None = None) -> MainWindow:
    window = MainWindow(settings or Settings(language="en", welcomed=True), load_catalog(),
                        ledger=ledger)
    window.show()
    qtbot.waitExposed(window)
    return window


def close_window(window: MainWindow, ledger: Ledger) -> None:
    """Closed and deleted before its ledger closes (its timers read the ledger)."""
    window.close()
    window.deleteLater()
    QCoreApplication.sendPostedEvents(None, QEvent.Type.DeferredDelete)
    ledger.close()


@pytest.fixture
def window(qtbot, loop):  # type: ignore[no-untyped-def]
    ledger = Ledger()
    w = open_window(qtbot, ledger)
    yield w
    close_window(w, ledger)


# ---------------------------------------------------------------- Preferences


def preferences(qtbot, window: MainWindow) -> QDialog:  # type: ignore[no-untyped-def]
    window.preferences_action.trigger()  # File → Preferences… (Ctrl+,)
    dialog = find(window, QDialog, "settingsDialog")
    qtbot.waitExposed(dialog)
    return dialog


def test_every_field_says_its_own_message_and_it_goes_when_fixed(window, qtbot) -> None:  # type: ignore[no-untyped-def]
    save_settings(window.settings)
    before = load_settings()
    dialog = preferences(qtbot, window)
    type_into(qtbot, find(dialog, QLineEdit, "pref_mfu"), "-10")
    type_into(qtbot, find(dialog, QLineEdit, "pref_default_region"), "mars-north-9")
    click(qtbot, ok_button(dialog))
    assert dialog.isVisible() and load_settings() == before  # nothing saved
    mfu = find(dialog, QLabel, "prefError_mfu")
    region = find(dialog, QLabel, "prefError_default_region")
    summary = find(dialog, QLabel, "prefsErrors")
    assert mfu.isVisible() and "percentage above 0 and at most 100" in mfu.text()
    assert "between 0 and 1" not in mfu.text()  # the field's unit: percent
    assert region.isVisible() and "'mars-north-9' is not a region" in region.text()
    assert summary.isVisible() and "MFU" in summary.text() and "region" in summary.text()
    assert not find(dialog, QLabel, "prefError_idle_minutes").isVisible()
    # fixing a field takes its mark and message away at once, and its name off the summary;
    # the message's room stays while the dialog is open, so nothing below jumps (issue 31)
    type_into(qtbot, find(dialog, QLineEdit, "pref_mfu"), "35")
    qtbot.waitUntil(lambda: mfu.text() == "")
    assert find(dialog, QLineEdit, "pref_mfu").property("invalid") is False
    assert summary.isVisible() and "MFU" not in summary.text()
    type_into(qtbot, find(dialog, QLineEdit, "pref_default_region"), "ap-shanghai")
    qtbot.waitUntil(lambda: not summary.isVisible())  # no "Please correct" left behind
    assert region.text() == ""
    with qtbot.waitSignal(dialog.saved):  # type: ignore[attr-defined]
        click(qtbot, ok_button(dialog))
    assert load_settings().default_region == "ap-shanghai"


def test_a_region_no_cloud_has_is_not_saved(window, qtbot) -> None:  # type: ignore[no-untyped-def]
    dialog = preferences(qtbot, window)
    type_into(qtbot, find(dialog, QLineEdit, "pref_default_region"), "mars-north-9")
    click(qtbot, ok_button(dialog))
    assert dialog.isVisible() and load_settings().default_region == ""
    assert window.settings.default_region == ""
    for region in ("us-east-1", "ap-shanghai", "cn-hangzhou", ""):  # AWS, Tencent, Alibaba
        type_into(qtbot, find(dialog, QLineEdit, "pref_default_region"), region)
        assert find(dialog, QLabel, "prefError_default_region").text() == "", region


def positions(dialog: QDialog) -> dict[str, QPoint]:
    return {edit.objectName(): edit.mapTo(dialog, QPoint(0, 0))
            for edit in dialog.findChildren(QLineEdit) if edit.objectName().startswith("pref_")}


def test_the_dialog_keeps_its_size_and_fields_stay_put_while_typing(window, qtbot) -> None:  # type: ignore[no-untyped-def]
    dialog = preferences(qtbot, window)
    size, where = dialog.size(), positions(dialog)
    action = find(dialog, QComboBox, "pref_budget_action")
    budget = find(dialog, QLineEdit, "pref_machine_budget_usd")
    monthly = find(dialog, QLineEdit, "pref_monthly_budget_usd")
    help_text = find(dialog, QLabel, "pref_guard_text")
    seen = {help_text.text()}
    for step in ("5", "50", "0", "", "abc", "30"):
        type_into(qtbot, budget, step)
        assert dialog.size() == size and positions(dialog) == where, step
        seen.add(help_text.text())
    type_into(qtbot, monthly, "500")
    for key in ("terminate", "warn", "stop"):
        choose(qtbot, action, key)
        assert dialog.size() == size and positions(dialog) == where, key
        seen.add(help_text.text())
    assert len(seen) >= 4  # the help did change, and moved nothing


def fully_shown(label: QLabel, scroll: QScrollArea) -> bool:
    """The whole label is inside the scroll area's viewport, at its full wrapped height."""
    viewport = scroll.viewport()
    top = label.mapTo(viewport, QPoint(0, 0)).y()
    return (label.height() >= label.heightForWidth(label.width()) and top >= 0
            and top + label.height() <= viewport.height())


def test_the_budget_help_is_whole_at_default_size_and_no_bands_when_enlarged(qtbot) -> None:  # type: ignore[no-untyped-def]
    settings = Settings(language="en", welcomed=True, machine_budget_usd=50.0,
                        monthly_budget_usd=500.0, budget_action="stop")
    ledger = Ledger()
    w = open_window(qtbot, ledger, settings)
    dialog = preferences(qtbot, w)
    help_text = find(dialog, QLabel, "pref_guard_text")
    scroll = find(dialog, QScrollArea, "prefsScroll")
    assert "EC2" in help_text.text() and "monthly budget" in help_text.text()
    assert fully_shown(help_text, scroll), (help_text.height(), scroll.viewport().height())
    boxes = [b for b in dialog.findChildren(QWidget) if b.metaObject().className() == "QGroupBox"]
    heights = {b.title(): b.height() for b in boxes}
    dialog.resize(dialog.width() + 500, dialog.height() + 600)
    qtbot.waitUntil(lambda: dialog.width() > 900)
    assert fully_shown(help_text, scroll)
    # the room goes below the boxes: none grows a blank band, none moves apart
    assert all(b.height() <= heights[b.title()] for b in boxes), heights
    ordered = sorted(boxes, key=lambda b: b.y())
    for upper, lower in zip(ordered, ordered[1:], strict=False):
        assert lower.y() - (upper.y() + upper.height()) <= 12, (upper.title(), lower.title())
    assert help_text.height() <= help_text.heightForWidth(help_text.width()) + 4
    close_window(w, ledger)


def test_the_budget_help_says_what_the_chosen_action_does(window, qtbot) -> None:  # type: ignore[no-untyped-def]
    dialog = preferences(qtbot, window)
    action = find(dialog, QComboBox, "pref_budget_action")
    help_text = find(dialog, QLabel, "pref_guard_text")
    choose(qtbot, action, "stop")
    assert action.currentText() == "Stop the billing machines"
    type_into(qtbot, find(dialog, QLineEdit, "pref_machine_budget_usd"), "0")
    type_into(qtbot, find(dialog, QLineEdit, "pref_monthly_budget_usd"), "0")
    assert "only warn" not in help_text.text()  # "Stop" is never answered by "only warn"
    # no fixed amount: every machine still has a budget, a day of it (issue 29)
    assert "Every machine launches with a budget of 24 hours of its price" in help_text.text()
    assert "AWS: At 24 h × its price the machine's agent shuts it down and EC2 stops it" \
        in help_text.text()
    assert "No budget" not in help_text.text()
    hours = find(dialog, QLineEdit, "pref_machine_budget_hours")
    type_into(qtbot, hours, "")  # while the hours are typed again, nothing is set
    assert "No budget is set yet" in help_text.text()
    type_into(qtbot, hours, "48")
    assert "a budget of 48 hours of its price" in help_text.text()
    type_into(qtbot, find(dialog, QLineEdit, "pref_monthly_budget_usd"), "500")
    assert "gpudesk stops every billing machine" in help_text.text()
    assert "No budget per machine" not in help_text.text()
    choose(qtbot, action, "terminate")
    assert "gpudesk terminates every billing machine" in help_text.text()
    choose(qtbot, action, "warn")
    assert help_text.text() == "Machine budgets only warn: nothing is stopped."


# ---------------------------------------------------------------- Welcome, last page


def test_welcome_add_my_own_machine_opens_its_dialog(qtbot) -> None:  # type: ignore[no-untyped-def]
    ledger = Ledger()
    w = open_window(qtbot, ledger, Settings(language="en"))
    welcome = w.maybe_show_welcome()
    assert welcome is not None
    qtbot.waitExposed(welcome)
    click(qtbot, find(welcome, QAbstractButton, "welcomeSsh"))
    qtbot.waitUntil(lambda: w.findChild(QDialog, "ownMachineDialog") is not None
                    and w.findChild(QDialog, "ownMachineDialog").isVisible())
    assert w.pages.currentWidget() is w.accounts
    assert find(w, QLineEdit, "ownHost").isVisible()
    close_window(w, ledger)


def test_the_window_reopens_on_the_page_it_showed(qtbot) -> None:  # type: ignore[no-untyped-def]
    ledger = Ledger()
    first = open_window(qtbot, ledger)
    go_to(qtbot, first, "Instances")
    first.close()
    first.deleteLater()
    second = open_window(qtbot, ledger)
    assert second.pages.currentWidget() is second.instances
    assert find(second, QListWidget, "nav").currentItem().text() == "Instances"
    go_to(qtbot, second, "Plan")
    second.close()
    second.deleteLater()
    third = open_window(qtbot, ledger)
    assert third.pages.currentWidget() is third.plan
    close_window(third, ledger)


# ---------------------------------------------------------------- own machine dialog


def own_dialog(qtbot, window: MainWindow) -> QDialog:  # type: ignore[no-untyped-def]
    go_to(qtbot, window, "Accounts")
    click(qtbot, find(window, QAbstractButton, "ownAdd"))
    dialog = next(d for d in window.findChildren(QDialog, "ownMachineDialog") if d.isVisible())
    qtbot.waitExposed(dialog)
    return dialog


def fill(qtbot, dialog: QDialog, server: SshdServer, key: Path, user: str = "") -> None:  # type: ignore[no-untyped-def]
    type_into(qtbot, find(dialog, QLineEdit, "ownName"), "lab")
    type_into(qtbot, find(dialog, QLineEdit, "ownHost"), server.host)
    type_into(qtbot, find(dialog, QLineEdit, "ownUser"), user or server.user)
    type_number(qtbot, find(dialog, QSpinBox, "ownPort"), server.port)
    type_into(qtbot, find(dialog, QLineEdit, "ownKeyFile"), str(key))


def test_an_empty_address_asks_for_the_address(window, qtbot) -> None:  # type: ignore[no-untyped-def]
    dialog = own_dialog(qtbot, window)
    type_into(qtbot, find(dialog, QLineEdit, "ownHost"), "")
    click(qtbot, find(dialog, QAbstractButton, "ownTestAdd"))
    message = find(dialog, QLabel, "ownMessage").text()
    assert "enter the machine's address" in message and "''" not in message
    assert window.ledger.machines() == []


def test_a_failed_login_pins_nothing(window, qtbot, sshd: SshdServer, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]  # noqa: F811
    stranger = tmp_path / "not_authorized_ed25519"
    _write_ed25519(stranger)  # a key the machine does not accept
    dialog = own_dialog(qtbot, window)
    fill(qtbot, dialog, sshd, stranger)
    click(qtbot, find(dialog, QAbstractButton, "ownTestAdd"))
    box = visible_box(qtbot, dialog, "hostKeyQuestion")
    assert sshd.host_key_fingerprint in box.text()
    click(qtbot, box.button(QMessageBox.StandardButton.Yes))  # the key is fine; the login not
    message = find(dialog, QLabel, "ownMessage")
    qtbot.waitUntil(lambda: message.text().startswith("Not added"), timeout=WAIT_MS)
    assert PinStore().fingerprints("gpudesk-lab") == []  # trusted only after a login
    assert window.ledger.machines() == []
    # the right key: now it logs in, and only now is the key pinned
    type_into(qtbot, find(dialog, QLineEdit, "ownKeyFile"), str(sshd.client_key))
    click(qtbot, find(dialog, QAbstractButton, "ownTestAdd"))
    box = visible_box(qtbot, dialog, "hostKeyQuestion")
    click(qtbot, box.button(QMessageBox.StandardButton.Yes))
    qtbot.waitUntil(lambda: "Added as lab" in message.text(), timeout=WAIT_MS)
    assert PinStore().fingerprints("gpudesk-lab") == [sshd.host_key_fingerprint]


def add_lab(qtbot, window: MainWindow, server: SshdServer) -> None:  # type: ignore[no-untyped-def]
    dialog = own_dialog(qtbot, window)
    fill(qtbot, dialog, server, server.client_key)
    click(qtbot, find(dialog, QAbstractButton, "ownTestAdd"))
    box = visible_box(qtbot, dialog, "hostKeyQuestion")
    click(qtbot, box.button(QMessageBox.StandardButton.Yes))
    message = find(dialog, QLabel, "ownMessage")
    qtbot.waitUntil(lambda: "Added as lab" in message.text(), timeout=WAIT_MS)
    click(qtbot, find(dialog, QAbstractButton, "ownClose"))
    qtbot.waitUntil(lambda: not dialog.isVisible())


def test_an_own_machine_s_bucket_is_checked_and_said_next_to_its_field(  # type: ignore[no-untyped-def]
        window, qtbot, sshd: SshdServer, aws: MotoAws, memory_keyring: object) -> None:  # noqa: F811
    """Issue 30: a bucket that is not there is refused next to the field, before any login
    (no pin, nothing added); the one that is there goes into the profile with its region."""
    save_credentials(aws.credentials)
    aws.client("s3").create_bucket(Bucket="lab-runs")
    dialog = own_dialog(qtbot, window)
    fill(qtbot, dialog, sshd, sshd.client_key)
    type_into(qtbot, find(dialog, QLineEdit, "ownStore"), "s3://missing-lab-bucket/x")
    click(qtbot, find(dialog, QAbstractButton, "ownTestAdd"))
    said = find(dialog, QLabel, "ownStoreError")
    qtbot.waitUntil(said.isVisible, timeout=WAIT_MS)
    assert "The bucket missing-lab-bucket does not exist" in said.text()
    assert window.ledger.machines() == [] and PinStore().fingerprints("gpudesk-lab") == []
    type_into(qtbot, find(dialog, QLineEdit, "ownStore"), "s3://lab-runs/team")
    click(qtbot, find(dialog, QAbstractButton, "ownTestAdd"))
    box = visible_box(qtbot, dialog, "hostKeyQuestion")
    click(qtbot, box.button(QMessageBox.StandardButton.Yes))
    message = find(dialog, QLabel, "ownMessage")
    qtbot.waitUntil(lambda: "Added as lab" in message.text(), timeout=WAIT_MS)
    assert "Its runs keep their data in s3://lab-runs/team/ (us-east-1)." in message.text()
    assert not said.isVisible()
    (m,) = window.ledger.machines()
    assert (m.store, m.store_region) == ("s3://lab-runs/team/", "us-east-1")


def test_a_changed_host_key_can_be_forgotten_after_a_confirmation(window, qtbot,  # type: ignore[no-untyped-def]
                                                                  sshd: SshdServer) -> None:  # noqa: F811
    add_lab(qtbot, window, sshd)
    old = sshd.host_key_fingerprint
    window.ledger.remove(window.ledger.machines()[0].id)  # the machine was rebuilt: re-add
    window.accounts.own.refresh()
    new = sshd.restart_with_new_host_key()
    dialog = own_dialog(qtbot, window)
    forget = find(dialog, QAbstractButton, "ownForgetKey")
    assert not forget.isVisible()
    fill(qtbot, dialog, sshd, sshd.client_key)
    click(qtbot, find(dialog, QAbstractButton, "ownTestAdd"))
    message = find(dialog, QLabel, "ownMessage")
    qtbot.waitUntil(lambda: "has changed" in message.text(), timeout=WAIT_MS)
    assert "forget its pinned key" in message.text()
    qtbot.waitUntil(forget.isVisible)  # the words now come with their button
    click(qtbot, forget)
    question = visible_box(qtbot, dialog, "forgetHostKeyQuestion")
    click(qtbot, question.button(QMessageBox.StandardButton.Cancel))  # first: no
    assert PinStore().fingerprints("gpudesk-lab") == [old]
    click(qtbot, forget)
    question = visible_box(qtbot, dialog, "forgetHostKeyQuestion")
    click(qtbot, find(question, QAbstractButton, "forgetHostKeyConfirm"))
    qtbot.waitUntil(lambda: "forgotten" in message.text())
    assert PinStore().fingerprints("gpudesk-lab") == [] and not forget.isVisible()
    click(qtbot, find(dialog, QAbstractButton, "ownTestAdd"))
    box = visible_box(qtbot, dialog, "hostKeyQuestion")
    assert new in box.text()
    click(qtbot, box.button(QMessageBox.StandardButton.Yes))
    qtbot.waitUntil(lambda: "Added as lab" in message.text(), timeout=WAIT_MS)
    assert PinStore().fingerprints("gpudesk-lab") == [new]


def test_an_own_machine_s_pinned_key_is_forgotten_from_the_accounts_page(window, qtbot,  # type: ignore[no-untyped-def]
                                                                         sshd: SshdServer) -> None:  # noqa: F811
    add_lab(qtbot, window, sshd)
    own_list = find(window, QListWidget, "ownList")
    forget = find(window, QAbstractButton, "ownForgetPin")
    assert not forget.isEnabled()  # nothing selected
    qtbot.mouseClick(own_list.viewport(), Qt.MouseButton.LeftButton,
                     pos=own_list.visualItemRect(own_list.item(0)).center())
    qtbot.waitUntil(forget.isEnabled)
    click(qtbot, forget)
    question = visible_box(qtbot, window, "forgetHostKeyQuestion")
    assert "lab" in question.text()
    click(qtbot, find(question, QAbstractButton, "forgetHostKeyConfirm"))
    error = find(window, QLabel, "ownError")
    qtbot.waitUntil(lambda: "forgotten" in error.text())
    assert PinStore().fingerprints("gpudesk-lab") == [] and not forget.isEnabled()


def test_a_taken_name_and_a_missing_python_are_refused_and_remove_asks_first(  # type: ignore[no-untyped-def]
        window, qtbot, sshd: SshdServer) -> None:  # noqa: F811
    """Issue 31 item 19: Run and Watch pick machines by name, so a second "lab" is refused
    before any login; a Python that is not there adds nothing; Remove asks, Cancel keeps."""
    add_lab(qtbot, window, sshd)
    dialog = own_dialog(qtbot, window)
    assert find(dialog, QSpinBox, "ownGpus").text() == "count at login"  # 0 says what it does
    fill(qtbot, dialog, sshd, sshd.client_key)  # the name "lab" again
    click(qtbot, find(dialog, QAbstractButton, "ownTestAdd"))
    message = find(dialog, QLabel, "ownMessage")
    assert "a machine named lab is already in your list" in message.text()
    assert not dialog.findChildren(QMessageBox, "hostKeyQuestion")  # no login was tried
    assert len(window.ledger.machines()) == 1
    type_into(qtbot, find(dialog, QLineEdit, "ownName"), "lab2")
    type_into(qtbot, find(dialog, QLineEdit, "ownPython"), "/nonexistent/bin/python3")
    click(qtbot, find(dialog, QAbstractButton, "ownTestAdd"))
    box = visible_box(qtbot, dialog, "hostKeyQuestion")  # lab2 is pinned under its own name
    click(qtbot, box.button(QMessageBox.StandardButton.Yes))
    qtbot.waitUntil(lambda: "/nonexistent/bin/python3 was not found" in message.text(),
                    timeout=WAIT_MS)
    assert message.text().startswith("Not added") and "Python field" in message.text()
    assert [m.name for m in window.ledger.machines()] == ["lab"]
    click(qtbot, find(dialog, QAbstractButton, "ownClose"))
    own_list = find(window, QListWidget, "ownList")
    qtbot.mouseClick(own_list.viewport(), Qt.MouseButton.LeftButton,
                     pos=own_list.visualItemRect(own_list.item(0)).center())
    click(qtbot, find(window, QAbstractButton, "ownRemove"))
    box = visible_box(qtbot, window, "confirmOwnRemove")
    assert "Remove lab" in box.text() and "Nothing on the machine is touched" in box.text()
    click(qtbot, box.button(QMessageBox.StandardButton.Cancel))
    assert [m.name for m in window.ledger.machines()] == ["lab"]
    qtbot.mouseClick(own_list.viewport(), Qt.MouseButton.LeftButton,
                     pos=own_list.visualItemRect(own_list.item(0)).center())
    click(qtbot, find(window, QAbstractButton, "ownRemove"))
    box = visible_box(qtbot, window, "confirmOwnRemove")
    click(qtbot, find(box, QAbstractButton, "confirmOwnRemoveButton"))
    qtbot.waitUntil(lambda: window.ledger.machines() == [])
    assert find(window, QLabel, "ownError").text() == "Removed lab from your machines."
    assert own_list.count() == 0


# ---------------------------------------------------------------- the Tencent key check


def test_tencent_keys_say_what_is_known_not_account_question_mark(  # type: ignore[no-untyped-def]
        qtbot, loop, tencent, memory_keyring, monkeypatch) -> None:  # noqa: F811
    monkeypatch.setenv(TENCENT_ENDPOINT_ENV, f"http://{tencent.endpoint}")
    ledger = Ledger()
    w = open_window(qtbot, ledger)
    go_to(qtbot, w, "Accounts")
    box = find(w, QWidget, "account_tencent")
    type_into(qtbot, find(box, QLineEdit, "keyId"), SECRET_ID)
    type_into(qtbot, find(box, QLineEdit, "secret"), SECRET_KEY)
    click(qtbot, find(box, QAbstractButton, "verifySave"))
    status = find(box, QLabel, "status")
    qtbot.waitUntil(lambda: status.property("state") == "ok", timeout=WAIT_MS)
    assert "account ?" not in status.text() and "?" not in status.text()
    assert "are valid" in status.text()
    assert "did not return the account id" in status.text()
    close_window(w, ledger)
