"""The main window against a stand-in cloud, and the steps the window tests of every cloud
take in it: pick an offer on the Plan page, fill in the launch dialog, terminate from the
Instances page.

A test module builds its ``window`` fixture with ``open_cloud_window``, naming its cloud's
endpoint variable and stand-in, so the fixture still asks for that stand-in and keyring.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import pytest
from PySide6.QtCore import QCoreApplication
from PySide6.QtCore import QEvent
from PySide6.QtWidgets import QMessageBox
from pytestqt.qtbot import QtBot

from gpudesk.services.cloud.catalog import load_catalog
from gpudesk.services.cloud.launcher import probe_ssh
from gpudesk.services.core.settings import Settings
from gpudesk.services.money.ledger import Ledger
from gpudesk.ui.machines.launch_dialog import LaunchDialog
from gpudesk.ui.plan.plan_page import PlanPage
from gpudesk.ui.shell.main_window import MainWindow


@contextmanager
def open_cloud_window(qtbot: QtBot, monkeypatch: pytest.MonkeyPatch, banner_port: int,
                      endpoint_env: str, endpoint: str) -> Iterator[MainWindow]:
    """A shown English window with its own ledger, its cloud at the stand-in's ``endpoint``,
    SSH probes answered by the local banner, launches polling fast."""
    monkeypatch.setenv(endpoint_env, f"http://{endpoint}")
    ledger = Ledger()
    w = MainWindow(Settings(language="en", welcomed=True), load_catalog(), ledger=ledger)
    w.launcher.ssh_probe = lambda _addr: probe_ssh("127.0.0.1", banner_port, 2)
    w.launcher.poll_s = 0.01
    qtbot.addWidget(w)
    w.show()
    yield w
    w.close()
    # Delete the window before its ledger closes: a later test's language switch
    # would otherwise reach its pages and query a closed database.
    w.deleteLater()
    QCoreApplication.sendPostedEvents(None, QEvent.Type.DeferredDelete)
    ledger.close()


def plan_gpt2(plan: PlanPage) -> None:
    """Plan GPT-2 fine-tuning at batch 4 in fp16 AMP: it fits a T4, which has no bf16."""
    f = plan.form
    f.source.setCurrentIndex(f.source.findData("preset"))
    f.preset.setCurrentIndex(f.preset.findData("gpt2"))
    f.edits["batch"].setText("4")
    f.precision.setCurrentIndex(f.precision.findData("amp-fp16"))
    plan.recompute()


def offer_row(plan: PlanPage, instance_type: str, region: str) -> int:
    """The first row of the Plan page showing ``instance_type`` in ``region``."""
    for row in range(plan.proxy.rowCount()):
        offer = plan.proxy.ranked_at(row).offer
        if offer.instance_type == instance_type and offer.region == region:
            return row
    raise AssertionError(f"{instance_type} in {region} is not on the Plan page")


def select_offer(window: MainWindow, instance_type: str, region: str) -> None:
    """Plan GPT-2 (``plan_gpt2``) and select ``instance_type`` in ``region``."""
    plan_gpt2(window.plan)
    window.plan.select_row(offer_row(window.plan, instance_type, region))


def fill_launch_dialog(dialog: LaunchDialog, allow_from: str, *, fallbacks: bool) -> None:
    """Stop detecting this computer's address, allow SSH from ``allow_from`` instead and,
    without ``fallbacks``, keep the launch to the chosen region."""
    dialog.detect_runner.cancel()
    dialog.allow_from.setText(allow_from)
    if not fallbacks:
        for i in range(dialog.fallbacks.count()):
            dialog.fallbacks.item(i).setCheckState(dialog.fallbacks.item(i).checkState().Unchecked)


def confirm_terminate(window: MainWindow, qtbot: QtBot, machine_id: str) -> None:
    """Terminate ``machine_id`` from the Instances page: the question defaults to Cancel,
    the answer is yes, and the ledger comes to say terminated."""
    page = window.instances
    page.select_machine(machine_id)
    assert page.terminate_button.isEnabled()
    box = page.ask_terminate()
    assert box is not None and box.defaultButton() == box.button(QMessageBox.StandardButton.Cancel)
    yes = next(b for b in box.buttons() if b.objectName() == "confirmTerminateYes")
    yes.click()

    def terminated() -> bool:
        machine = window.ledger.get(machine_id)
        return machine is not None and machine.state == "terminated"

    qtbot.waitUntil(terminated, timeout=10000)
