"""Without a live spot quote the Launch dialog still rents spot, and estimates by on-demand."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from PySide6.QtWidgets import QCheckBox

from gpudesk.services.cloud.catalog import load_catalog
from gpudesk.ui.machines.launch_dialog import LaunchDialog


async def _never(*_a: Any) -> Any:
    raise AssertionError("nothing launches here")


def test_spot_without_a_quote_is_offered_and_priced_by_on_demand(qtbot: Any) -> None:
    catalog = load_catalog()
    offer = next(o for o in catalog.filter(provider="aws", region="us-east-1")
                 if o.instance_type == "g5.xlarge")
    assert offer.spot_price is None  # the bundle never guesses one
    d = LaunchDialog(offer, catalog, _never, detect=False, spot=True)
    qtbot.addWidget(d)
    spot = d.findChild(QCheckBox, "spot")
    assert spot is not None and spot.isEnabled() and spot.isChecked()
    assert d.price() == offer.ondemand_price == 1.006
    assert "No spot price is known yet" in d.cost.text()
    assert d.plan().market == "spot"
    quoted = LaunchDialog(replace(offer, spot_price=0.41, price_kind="live"), catalog, _never,
                          detect=False, spot=True)
    qtbot.addWidget(quoted)
    assert quoted.price() == 0.41 and "No spot price" not in quoted.cost.text()
