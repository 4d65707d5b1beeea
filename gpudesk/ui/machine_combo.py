"""The "which machine" field of the Run and Watch pages: a ledger machine, or a typed ssh:// URL."""

from __future__ import annotations

from PySide6.QtWidgets import QComboBox, QWidget

from gpudesk.services.ledger import Ledger


class MachineCombo(QComboBox):
    def __init__(self, ledger: Ledger, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.ledger = ledger
        self.setEditable(True)
        self.setMinimumContentsLength(28)
        self.reload()

    def reload(self) -> None:
        """Every reachable machine the ledger has; what the user typed stays."""
        typed = self.currentText()
        self.clear()
        for m in self.ledger.machines(include_ended=False):
            if m.public_ip:
                self.addItem(f"{m.name or m.id} — {m.instance_type or m.provider} "
                             f"({m.public_ip})", m.id)
        if typed:
            self.setCurrentText(typed)

    def ref(self) -> str:
        """The chosen machine's ledger id, or the text typed (an ssh:// URL)."""
        text = self.currentText().strip()
        index = self.findText(text)
        data = self.itemData(index) if index >= 0 else None
        return str(data) if data else text

    def set_placeholder(self, text: str) -> None:
        line = self.lineEdit()
        if line is not None:
            line.setPlaceholderText(text)
