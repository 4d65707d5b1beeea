"""The window's month spend has a "Storage" line for the user's buckets: GB-months and data
out per run, priced with source and date where a price was read, "unknown" with the reason
where not (read from the real label on the Instances page)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QCheckBox
from PySide6.QtWidgets import QLabel

from gpudesk.services.money import spend
from gpudesk.services.money.ledger import Ledger
from gpudesk.services.storage import usage
from gpudesk.ui.machines.instances_page import InstancesPage

GIB = 1 << 30


@pytest.fixture
def ledger() -> Iterator[Ledger]:
    with Ledger() as led:
        yield led


def _label(page: InstancesPage) -> QLabel:
    label = page.findChild(QLabel, "monthStorage")
    assert label is not None
    return label


def test_the_month_spend_shows_the_storage_line(qtbot: Any, ledger: Ledger) -> None:
    now = time.time()
    start = spend.month_window(spend.month_key(now)).start
    assert start is not None
    usage.record_sample("run-cos", "tencent", "ap-guangzhou", 2 * GIB, at=start,
                        uri="cos://b-1250000000/runs/run-cos/")
    usage.record_download("run-s3", "aws", "us-east-1", 2 * GIB, at=max(start, now - 60))
    page = InstancesPage(ledger)
    qtbot.addWidget(page)
    page.show()
    label = _label(page)
    assert label.isVisible()
    text = label.text()
    assert text.startswith("Storage this month:")
    assert "0.1800 USD known; the rest has no price." in text
    cos = next(line for line in text.splitlines() if line.startswith("Run run-cos"))
    assert "(ap-guangzhou)" in cos and "GB-month, cost unknown: No storage (GB-month) " \
        "price for tencent in ap-guangzhou" in cos
    gbm = float(cos.split(": ", 1)[1].split(" GB-month")[0])
    month = spend.month_window(spend.month_key(now))
    assert month.end is not None
    expected = 2 * (time.time() - start) / (month.end - start)
    assert gbm == pytest.approx(expected, abs=0.002)
    s3 = next(line for line in text.splitlines() if line.startswith("Run run-s3"))
    assert ("Data out to this computer: 2.0 GiB, 0.1800 USD (AWS Price List, data "
            "transfer out to the internet, first paid tier, 2025-06-01).") in s3
    assert "0.00 USD" not in text and "0.0000 CNY" not in text  # unknown is never 0

    # a new sample shows on the next reload (clicking "Show ended" reloads the page)
    usage.record_download("run-s3", "aws", "us-east-1", GIB, at=max(start, now - 30))
    box = page.show_ended
    assert isinstance(box, QCheckBox)
    qtbot.mouseClick(box, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: "3.0 GiB, 0.2700 USD" in _label(page).text(), timeout=5000)


def test_no_bucket_no_cost(qtbot: Any, ledger: Ledger) -> None:
    page = InstancesPage(ledger)
    qtbot.addWidget(page)
    page.show()
    assert _label(page).text() == "Storage this month: no bucket held a run's data."
