"""The machine chooser of the Run and Watch pages: a ledger machine, or ``ssh://`` typed in."""

from __future__ import annotations

from PySide6.QtWidgets import QComboBox
from PySide6.QtWidgets import QWidget

from gpudesk.services.cloud.accounts import title
from gpudesk.services.money.ledger import Ledger
from gpudesk.services.money.ledger import Machine
from gpudesk.ui.widgets.retranslate import Retranslating


class MachineCombo(Retranslating, QComboBox):
    """Editable; lists the ledger's machines that have an address. A long label shows from
    its start (the name), not scrolled to its end as an editable combo would."""

    def __init__(self, ledger: Ledger, parent: QWidget | None = None, *,
                 min_chars: int = 28) -> None:
        super().__init__(parent)
        self.ledger = ledger
        self.setEditable(True)
        self.setInsertPolicy(QComboBox.InsertPolicy.NoInsert)
        self.setMinimumContentsLength(min_chars)
        self.activated.connect(lambda _i: self._show_start())

    def reload(self) -> None:
        """Refill from the ledger, keeping what was chosen (by its ledger id, not by its label,
        which a language switch translates) or typed; a machine that is gone is not kept (its
        label is not an address). Nothing is announced unless the choice changed: refilling
        never fires ``currentIndexChanged`` for a machine that is not the user's (issue 31)."""
        chosen = self.chosen_id()
        typed = "" if chosen else self.currentText()
        before = (chosen, self.currentText())
        self.blockSignals(True)
        try:
            self.clear()
            for m in self.ledger.machines(include_ended=False):
                if m.public_ip:
                    self.addItem(self.label(m), m.id)
            index = self.findData(chosen) if chosen else -1
            if index >= 0:
                self.setCurrentIndex(index)
            elif typed:
                self.setCurrentIndex(-1)
                self.setEditText(typed)
        finally:
            self.blockSignals(False)
        self._show_start()
        if (self.chosen_id(), self.currentText()) != before:
            self.currentIndexChanged.emit(self.currentIndex())
            self.currentTextChanged.emit(self.currentText())

    def chosen_id(self) -> str:
        """The ledger id of the listed machine the field shows; "" for a typed address."""
        index = self.currentIndex()
        text = self.currentText().strip()
        if index < 0 or self.itemText(index) != text:
            index = self.findText(text)
        data = self.itemData(index) if index >= 0 else None
        return str(data) if data else ""

    def label(self, m: Machine) -> str:
        return self.tr("{name} — {kind} ({address})").format(
            name=m.name or m.id, kind=self.kind(m), address=m.public_ip)

    def kind(self, m: Machine) -> str:
        """What the machine is, in words: its instance type, "own machine", or its cloud."""
        if m.instance_type:
            return m.instance_type
        return self.tr("own machine") if m.provider == "own" else title(m.provider)

    def retranslate(self) -> None:
        """Re-label the listed machines in place (what is chosen stays chosen, its field
        showing its new label)."""
        chosen = self.chosen_id()
        self.blockSignals(True)
        try:
            for i in range(self.count()):
                m = self.ledger.get(str(self.itemData(i)))
                if m is not None:
                    self.setItemText(i, self.label(m))
            index = self.findData(chosen) if chosen else -1
            if index >= 0:
                self.setCurrentIndex(index)
                self.setEditText(self.itemText(index))
        finally:
            self.blockSignals(False)
        self._show_start()

    def ref(self) -> str:
        """The ledger id of a listed machine, else the text as typed (an ssh:// address)."""
        return self.chosen_id() or self.currentText().strip()

    def _show_start(self) -> None:
        line = self.lineEdit()
        if line is not None:
            line.setCursorPosition(0)
