"""Preferences: the :class:`~gpudesk.services.core.settings.Settings` a researcher can change.

Nothing changes until OK: then every field is checked with the settings
loader's own rules, invalid ones are marked (red border and a message) and
nothing is saved; valid ones are written atomically and ``saved`` is emitted so
the main window can switch language and theme live. Cancel changes nothing.
"""

from __future__ import annotations

import dataclasses
import logging

from PySide6.QtCore import Signal
from PySide6.QtWidgets import (
    QComboBox,
    QDialog,
    QDialogButtonBox,
    QFormLayout,
    QGroupBox,
    QLabel,
    QLineEdit,
    QVBoxLayout,
    QWidget,
)

from gpudesk.services.core.settings import (
    CURRENCIES,
    IDLE_ACTIONS,
    LANGUAGES,
    THEMES,
    Settings,
    is_valid,
    save_settings,
)
from gpudesk.ui.widgets.retranslate import Retranslating

log = logging.getLogger(__name__)

STYLE = """
QLineEdit[invalid="true"] { border: 2px solid #d32f2f; }
QLabel#prefsErrors { color: #d32f2f; }
"""


def _number(text: str) -> float | None:
    try:
        return float(text.strip().replace(",", "").replace("，", "").rstrip("%").strip())
    except ValueError:
        return None


class SettingsDialog(Retranslating, QDialog):
    saved = Signal(object)  # the new Settings, after it was written

    def __init__(self, settings: Settings, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("settingsDialog")
        self.setStyleSheet(STYLE)
        self._settings = settings
        self.result_settings: Settings | None = None

        self.language = QComboBox(self)
        for code in LANGUAGES:
            self.language.addItem("", code)
        self.theme = QComboBox(self)
        for code in THEMES:
            self.theme.addItem("", code)
        self.currency = QComboBox(self)
        for code in CURRENCIES:
            self.currency.addItem(code, code)
        self.edits: dict[str, QLineEdit] = {}
        for key in ("cny_per_usd", "default_region", "mfu", "monthly_budget_usd",
                    "machine_budget_usd", "idle_gpu_percent", "idle_minutes"):
            edit = QLineEdit(self)
            edit.setObjectName(f"pref_{key}")
            edit.textChanged.connect(lambda _t, e=edit: self._unmark(e))
            self.edits[key] = edit
        self.idle_action = QComboBox(self)
        self.budget_action = QComboBox(self)
        self.budget_action.setObjectName("pref_budget_action")
        for code in IDLE_ACTIONS:
            self.idle_action.addItem("", code)
            self.budget_action.addItem("", code)

        self.general_box = QGroupBox(self)
        general = QFormLayout(self.general_box)
        self.money_box = QGroupBox(self)
        money = QFormLayout(self.money_box)
        self.idle_box = QGroupBox(self)
        idle = QFormLayout(self.idle_box)
        self.labels: dict[str, QLabel] = {}

        def row(form: QFormLayout, key: str, widget: QWidget) -> None:
            label = QLabel(self)
            label.setBuddy(widget)
            self.labels[key] = label
            form.addRow(label, widget)

        row(general, "language", self.language)
        row(general, "theme", self.theme)
        row(general, "default_region", self.edits["default_region"])
        row(general, "mfu", self.edits["mfu"])
        row(money, "currency", self.currency)
        row(money, "cny_per_usd", self.edits["cny_per_usd"])
        row(money, "monthly_budget_usd", self.edits["monthly_budget_usd"])
        row(money, "machine_budget_usd", self.edits["machine_budget_usd"])
        row(money, "budget_action", self.budget_action)
        # who enforces a machine budget in each cloud: said here, before anything launches
        self.guard_text = QLabel(self)
        self.guard_text.setObjectName("pref_guard_text")
        self.guard_text.setWordWrap(True)
        money.addRow(self.guard_text)
        self.budget_action.currentIndexChanged.connect(lambda _i: self._show_guard())
        self.edits["machine_budget_usd"].textChanged.connect(lambda _t: self._show_guard())
        row(idle, "idle_gpu_percent", self.edits["idle_gpu_percent"])
        row(idle, "idle_minutes", self.edits["idle_minutes"])
        row(idle, "idle_action", self.idle_action)

        self.errors = QLabel(self)
        self.errors.setObjectName("prefsErrors")
        self.errors.setWordWrap(True)
        self.errors.setVisible(False)
        self.buttons = QDialogButtonBox(
            QDialogButtonBox.StandardButton.Ok | QDialogButtonBox.StandardButton.Cancel, self)
        self.buttons.accepted.connect(self.try_accept)
        self.buttons.rejected.connect(self.reject)
        layout = QVBoxLayout(self)
        for box in (self.general_box, self.money_box, self.idle_box):
            layout.addWidget(box)
        layout.addWidget(self.errors)
        layout.addStretch(1)
        layout.addWidget(self.buttons)
        self.currency.currentIndexChanged.connect(self._currency_changed)
        self.load(settings)
        self.retranslate()
        self.setMinimumWidth(480)

    # ------------------------------------------------------------------ values

    def load(self, s: Settings) -> None:
        for combo, value in ((self.language, s.language), (self.theme, s.theme),
                             (self.currency, s.currency), (self.idle_action, s.idle_action),
                             (self.budget_action, s.budget_action)):
            index = combo.findData(value)
            combo.setCurrentIndex(max(index, 0))
        self.edits["cny_per_usd"].setText(f"{s.cny_per_usd:g}")
        self.edits["default_region"].setText(s.default_region)
        self.edits["mfu"].setText(f"{s.mfu * 100:g}")
        self.edits["monthly_budget_usd"].setText(f"{s.monthly_budget_usd:g}")
        self.edits["machine_budget_usd"].setText(f"{s.machine_budget_usd:g}")
        self.edits["idle_gpu_percent"].setText(f"{s.idle_gpu_percent:g}")
        self.edits["idle_minutes"].setText(str(s.idle_minutes))
        self._currency_changed()

    def values(self) -> tuple[dict[str, object], list[str]]:
        """The edited values, and the keys whose text is not a valid value."""
        out: dict[str, object] = {
            "language": self.language.currentData(),
            "theme": self.theme.currentData(),
            "currency": self.currency.currentData(),
            "idle_action": self.idle_action.currentData(),
            "budget_action": self.budget_action.currentData(),
            "default_region": self.edits["default_region"].text().strip(),
        }
        bad: list[str] = []
        for key in ("cny_per_usd", "monthly_budget_usd", "machine_budget_usd",
                    "idle_gpu_percent"):
            out[key] = _number(self.edits[key].text())
        mfu = _number(self.edits["mfu"].text())
        out["mfu"] = None if mfu is None else mfu / 100
        minutes = _number(self.edits["idle_minutes"].text())
        out["idle_minutes"] = (int(minutes) if minutes is not None and minutes.is_integer()
                               else None)
        for key, value in out.items():
            if value is None or not is_valid(key, value):
                bad.append(key)
        return out, bad

    def try_accept(self) -> bool:
        """OK: save and close when every value is valid; otherwise mark and stay open."""
        values, bad = self.values()
        for key, edit in self.edits.items():
            self._mark(edit, key in bad)
        if bad:
            names = ", ".join(self.labels[k].text().replace("&", "") for k in bad)
            self.errors.setText(self.tr("Please correct: {fields}").format(fields=names))
            self.errors.setVisible(True)
            return False
        new = dataclasses.replace(self._settings, **values)  # type: ignore[arg-type]
        try:
            save_settings(new)
        except OSError as exc:
            self.errors.setText(self.tr("Cannot save the settings: {error}").format(
                error=exc.strerror or str(exc)))
            self.errors.setVisible(True)
            return False
        self.result_settings = new
        self.saved.emit(new)
        self.accept()
        return True

    def _mark(self, edit: QLineEdit, invalid: bool) -> None:
        edit.setProperty("invalid", invalid)
        style = edit.style()
        style.unpolish(edit)
        style.polish(edit)

    def _unmark(self, edit: QLineEdit) -> None:
        if edit.property("invalid"):
            self._mark(edit, False)

    def _currency_changed(self) -> None:
        self.edits["cny_per_usd"].setEnabled(self.currency.currentData() == "CNY")

    # ------------------------------------------------------------------ language

    def _show_guard(self) -> None:
        """The per-machine budget in each cloud's terms: what stops the bill, and who."""
        from gpudesk.services.cloud import guard
        from gpudesk.services.cloud.catalog import provider_title
        from gpudesk.services.money.ledger import Machine
        from gpudesk.ui.widgets.task_runner import format_template

        action = str(self.budget_action.currentData() or "stop")
        try:
            budget = float(self.edits["machine_budget_usd"].text() or 0)
        except ValueError:
            budget = 0.0
        if action not in guard.ACTIONS or budget <= 0:
            self.guard_text.setText(self.tr("Machine budgets only warn: nothing is stopped."))
            return
        lines = []
        for provider in ("aws", "tencent"):
            m = Machine(id="", provider=provider, disk_gb=100.0)
            g = guard.plan(provider, budget, action, 1.0, 0.0, 0.0)
            said = " ".join(format_template(guard.CONTEXT, t, v)
                            for t, v in guard.sentences(m, g)
                            if t not in (guard.MSG_TIMER, guard.MSG_DESKTOP))
            if "cloud-timer" in g.enforced_by:
                said += " " + self.tr("Tencent Cloud itself terminates it when budget ÷ price "
                                      "runs out, even if gpudesk and the agent are gone.")
            lines.append(f"{provider_title(provider)}: {said}")
        self.guard_text.setText("\n".join(lines))

    def retranslate(self) -> None:
        self.setWindowTitle(self.tr("Preferences"))
        self.general_box.setTitle(self.tr("General"))
        self.money_box.setTitle(self.tr("Money"))
        self.idle_box.setTitle(self.tr("Idle machines"))
        texts = {
            "language": self.tr("&Language"),
            "theme": self.tr("&Theme"),
            "default_region": self.tr("Default &region"),
            "mfu": self.tr("Default &MFU (%)"),
            "currency": self.tr("Show prices &in"),
            "cny_per_usd": self.tr("CNY per USD (your &rate)"),
            "monthly_budget_usd": self.tr("Monthly &budget (USD, 0 = none)"),
            "machine_budget_usd": self.tr("Budget per &machine (USD, 0 = none)"),
            "idle_gpu_percent": self.tr("Idle below GPU &utilisation (%)"),
            "idle_minutes": self.tr("Idle f&or (minutes)"),
            "idle_action": self.tr("When idle, &do"),
            "budget_action": self.tr("&At 100 % of a budget, do"),
        }
        for key, text in texts.items():
            self.labels[key].setText(text)
        self.language.setItemText(0, self.tr("System"))
        self.language.setItemText(1, "English")
        self.language.setItemText(2, "简体中文")
        for i, text in enumerate((self.tr("System"), self.tr("Light"), self.tr("Dark"))):
            self.theme.setItemText(i, text)
        for i, text in enumerate((self.tr("Warn me"), self.tr("Stop the machine"),
                                  self.tr("Terminate the machine"))):
            self.idle_action.setItemText(i, text)
        for i, text in enumerate((self.tr("Warn me"), self.tr("Stop the billing machines"),
                                  self.tr("Terminate the billing machines"))):
            self.budget_action.setItemText(i, text)
        self._show_guard()
        self.edits["default_region"].setPlaceholderText(self.tr("e.g. us-east-1 or "
                                                                "ap-shanghai; empty = none"))
        self.edits["mfu"].setToolTip(self.tr("Model FLOPs utilisation assumed for new plans, "
                                             "above 0 and at most 100"))
        self.edits["cny_per_usd"].setToolTip(self.tr("Catalog prices are in USD; they are "
                                                     "converted with this rate"))
        self.edits["idle_minutes"].setToolTip(self.tr("A whole number from 1 to 1440"))

