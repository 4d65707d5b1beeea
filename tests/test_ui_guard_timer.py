"""The Launch dialog's cloud-timer time is the launch's own plan: the disk bills with the
compute, and a Tencent spot "stop" (which becomes terminate) says the cloud's timer."""

from __future__ import annotations

import time
from datetime import UTC
from datetime import datetime
from typing import Any

from PySide6.QtWidgets import QCheckBox
from PySide6.QtWidgets import QComboBox
from PySide6.QtWidgets import QLabel
from PySide6.QtWidgets import QSpinBox

from gpudesk.services.cloud import guard
from gpudesk.services.cloud.catalog import load_catalog
from gpudesk.ui.machines.launch_dialog import LaunchDialog


async def _never(*_a: Any) -> Any:
    raise AssertionError("nothing launches here")


def _dialog(qtbot: Any, **kw: Any) -> LaunchDialog:
    catalog = load_catalog()
    offer = next(o for o in catalog.filter(provider="tencent")
                 if o.instance_type == "GN7.2XLARGE32")
    d = LaunchDialog(offer, catalog, _never, detect=False, **kw)
    qtbot.addWidget(d)
    return d


def _shown_time(text: str) -> float:
    stamp = text.split("terminates this machine at ")[1][:16]
    return datetime.strptime(stamp, "%Y-%m-%d %H:%M").replace(tzinfo=UTC).timestamp()


def test_the_dialogs_timer_counts_the_disk(qtbot: Any) -> None:
    d = _dialog(qtbot, budget=40.0, on_budget="terminate")
    label = d.findChild(QLabel, "guardText")
    disk = d.findChild(QSpinBox, "diskGb")
    assert label is not None and disk is not None
    disk.setValue(2000)  # 2 TB: 0.35 CNY/GB-month bills with the compute
    price = d.price()
    assert price > 0
    now = time.time()
    with_disk = now + 40.0 / (price + guard.disk_per_hour(
        "tencent", d.offer.region, 2000.0, "USD", d.money.rate)) * 3600
    without = now + 40.0 / price * 3600
    shown = _shown_time(label.text())
    assert abs(shown - with_disk) < 120 and abs(shown - without) > 120


def test_a_tencent_spot_stop_shows_the_clouds_timer(qtbot: Any) -> None:
    d = _dialog(qtbot, budget=40.0, on_budget="stop")
    label = d.findChild(QLabel, "guardText")
    spot = d.findChild(QCheckBox)
    action = d.findChild(QComboBox, "onBudget")
    assert label is not None and spot is not None and action is not None
    assert "Tencent Cloud itself terminates" not in label.text()  # on-demand stop: no timer
    d.spot.setChecked(True)
    text = label.text()
    assert "cannot be stopped without charging" in text
    assert "Tencent Cloud itself terminates this machine at" in text
