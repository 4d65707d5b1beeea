"""The Run and Watch pages' machine chooser: ledger machines with an address, or ssh://."""

from __future__ import annotations

from gpudesk.services.money.ledger import Ledger
from gpudesk.services.money.ledger import Machine
from gpudesk.ui.widgets.machine_combo import MachineCombo


def test_lists_addressed_machines_keeps_typed_text_and_shows_the_name(qtbot) -> None:  # type: ignore[no-untyped-def]
    with Ledger() as ledger:
        ledger.add(Machine(id="m-1", provider="aws", instance_type="g5.xlarge",
                           public_ip="54.210.7.19", name="vit-box-with-a-rather-long-name",
                           state="running"))
        ledger.add(Machine(id="m-2", provider="aws", state="intent"))  # no address yet
        combo = MachineCombo(ledger, min_chars=10)
        qtbot.addWidget(combo)
        combo.show()
        combo.reload()
        assert [combo.itemText(i) for i in range(combo.count())] == [
            "vit-box-with-a-rather-long-name — g5.xlarge (54.210.7.19)"]
        assert combo.ref() == "m-1"
        assert combo.lineEdit().cursorPosition() == 0  # the name shows, not the address
        combo.setCurrentText("ssh://alice@10.8.0.12:22")
        combo.reload()  # a ledger change must not throw away what was typed
        assert combo.ref() == "ssh://alice@10.8.0.12:22" and combo.count() == 1
        ledger.update("m-1", state="terminated", ended_at=1.0)
        combo.setCurrentIndex(0)
        combo.reload()
        assert combo.count() == 0 and combo.ref() == ""  # the ended machine is not kept
