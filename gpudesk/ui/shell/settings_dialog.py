"""Preferences: the :class:`~gpudesk.services.core.settings.Settings` a researcher can change.

Nothing changes until OK: then every field is checked with the settings
loader's own rules (and the default region against the regions gpudesk knows),
each invalid field is marked red with its own message under it, in its unit,
and nothing is saved; valid values are written atomically and ``saved`` is
emitted so the main window can switch language and theme live. Cancel changes
nothing. A marked field is checked again as it is typed in, so a message never
outlives its mistake.

The fields sit in a scroll area and the texts that change while typing (the
budget help, the messages) come after the fields they are about: the dialog
keeps its size and nothing moves under the cursor.
"""

from __future__ import annotations

import dataclasses
import logging
import re

from PySide6.QtCore import QSize
from PySide6.QtCore import Qt
from PySide6.QtCore import Signal
from PySide6.QtGui import QShowEvent
from PySide6.QtWidgets import QComboBox
from PySide6.QtWidgets import QCompleter
from PySide6.QtWidgets import QDialog
from PySide6.QtWidgets import QDialogButtonBox
from PySide6.QtWidgets import QFormLayout
from PySide6.QtWidgets import QFrame
from PySide6.QtWidgets import QGroupBox
from PySide6.QtWidgets import QLabel
from PySide6.QtWidgets import QLineEdit
from PySide6.QtWidgets import QScrollArea
from PySide6.QtWidgets import QSizePolicy
from PySide6.QtWidgets import QVBoxLayout
from PySide6.QtWidgets import QWidget

from gpudesk.services.core.settings import CURRENCIES
from gpudesk.services.core.settings import IDLE_ACTIONS
from gpudesk.services.core.settings import LANGUAGES
from gpudesk.services.core.settings import THEMES
from gpudesk.services.core.settings import Settings
from gpudesk.services.core.settings import is_valid
from gpudesk.services.core.settings import save_settings
from gpudesk.ui.widgets.retranslate import Retranslating

log = logging.getLogger(__name__)

STYLE = """
QLineEdit[invalid="true"] { border: 2px solid #d32f2f; }
QLabel#prefsErrors, QLabel[fieldError="true"] { color: #d32f2f; }
"""
EDIT_KEYS = ("default_region", "mfu", "cny_per_usd", "monthly_budget_usd",
             "machine_budget_hours", "machine_budget_usd", "idle_gpu_percent", "idle_minutes",
             "store_keep_days", "store_keep_checkpoints", "keep_alive_wait_min")
WHOLE_KEYS = ("idle_minutes", "store_keep_days", "store_keep_checkpoints",
              "keep_alive_wait_min")
DEFAULT_WIDTH = 680  # the budget help for three clouds whole, within 800 px
WRAP_MIN_WIDTH = 300


def _plain_label(text: str) -> str:
    """A field's label as prose: no "&" mnemonic, no Chinese "(&M)" shortcut, no colon."""
    return re.sub(r"\s*[(（]&\w[)）]", "", text).replace("&", "").rstrip(":：").strip()


def _number(text: str) -> float | None:
    try:
        return float(text.strip().replace(",", "").replace("，", "").rstrip("%").strip())
    except ValueError:
        return None


def known_regions() -> list[str]:
    """Every region of the offer catalog: where gpudesk can rent (the providers' own lists)."""
    from gpudesk.services.cloud.catalog import load_catalog

    return load_catalog().regions()


class SettingsDialog(Retranslating, QDialog):
    saved = Signal(object)  # the new Settings, after it was written

    def __init__(self, settings: Settings, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("settingsDialog")
        self.setStyleSheet(STYLE)
        self._settings = settings
        self.result_settings: Settings | None = None
        self._regions: list[str] | None = None
        self._checked = False  # OK was pressed once: fields are re-checked as they change

        content = QWidget(self)
        content.setObjectName("prefsContent")
        self.language = QComboBox(content)
        for code in LANGUAGES:
            self.language.addItem("", code)
        self.theme = QComboBox(content)
        for code in THEMES:
            self.theme.addItem("", code)
        self.currency = QComboBox(content)
        for code in CURRENCIES:
            self.currency.addItem(code, code)
        self.edits: dict[str, QLineEdit] = {}
        self.field_errors: dict[str, QLabel] = {}
        for key in EDIT_KEYS:
            edit = QLineEdit(content)
            edit.setObjectName(f"pref_{key}")
            edit.textChanged.connect(lambda _t, k=key: self._edited(k))
            self.edits[key] = edit
            error = QLabel(content)  # this field's own message, right under it
            error.setObjectName(f"prefError_{key}")
            error.setProperty("fieldError", "true")
            error.setWordWrap(True)
            # a wrapped label's minimum size is its height at its narrowest: kept wide
            # enough that a short message does not claim a tall row
            error.setMinimumWidth(WRAP_MIN_WIDTH)
            error.setAlignment(Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignTop)
            self.field_errors[key] = error
        self.idle_action = QComboBox(content)
        self.budget_action = QComboBox(content)
        self.budget_action.setObjectName("pref_budget_action")
        for code in IDLE_ACTIONS:
            self.idle_action.addItem("", code)
            self.budget_action.addItem("", code)

        self.general_box = QGroupBox(content)
        general = QFormLayout(self.general_box)
        self.idle_box = QGroupBox(content)
        idle = QFormLayout(self.idle_box)
        self.store_box = QGroupBox(content)  # issues 22 and 23: the run's bucket
        store = QFormLayout(self.store_box)
        self.money_box = QGroupBox(content)
        money_column = QVBoxLayout(self.money_box)
        money = QFormLayout()
        money_column.addLayout(money)
        self.labels: dict[str, QLabel] = {}
        self._forms: dict[str, QFormLayout] = {}

        def row(form: QFormLayout, key: str, widget: QWidget) -> None:
            label = QLabel(content)
            label.setBuddy(widget)
            self.labels[key] = label
            form.addRow(label, widget)
            if key in self.field_errors:
                form.addRow("", self.field_errors[key])
                form.setRowVisible(self.field_errors[key], False)
                self._forms[key] = form

        for form in (general, idle, store, money):
            form.setFieldGrowthPolicy(QFormLayout.FieldGrowthPolicy.AllNonFixedFieldsGrow)
        row(general, "language", self.language)
        row(general, "theme", self.theme)
        row(general, "default_region", self.edits["default_region"])
        row(general, "mfu", self.edits["mfu"])
        row(idle, "idle_gpu_percent", self.edits["idle_gpu_percent"])
        row(idle, "idle_minutes", self.edits["idle_minutes"])
        row(idle, "idle_action", self.idle_action)
        row(store, "store_keep_days", self.edits["store_keep_days"])
        row(store, "store_keep_checkpoints", self.edits["store_keep_checkpoints"])
        row(store, "keep_alive_wait_min", self.edits["keep_alive_wait_min"])
        row(money, "currency", self.currency)
        row(money, "cny_per_usd", self.edits["cny_per_usd"])
        row(money, "monthly_budget_usd", self.edits["monthly_budget_usd"])
        row(money, "machine_budget_hours", self.edits["machine_budget_hours"])
        row(money, "machine_budget_usd", self.edits["machine_budget_usd"])
        row(money, "budget_action", self.budget_action)
        # Who enforces a budget in each cloud, said before anything launches: last in the
        # last box, so its changing length moves no field.
        self.guard_text = QLabel(self.money_box)
        self.guard_text.setObjectName("pref_guard_text")
        self.guard_text.setWordWrap(True)
        self.guard_text.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.guard_text.setMinimumWidth(WRAP_MIN_WIDTH + 120)
        self.guard_text.setAlignment(Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignTop)
        money_column.addWidget(self.guard_text)
        self.budget_action.currentIndexChanged.connect(lambda _i: self._show_guard())
        for key in ("machine_budget_usd", "machine_budget_hours", "monthly_budget_usd"):
            self.edits[key].textChanged.connect(lambda _t: self._show_guard())

        column = QVBoxLayout(content)
        for box in (self.general_box, self.idle_box, self.money_box, self.store_box):
            box.setSizePolicy(QSizePolicy.Policy.Preferred, QSizePolicy.Policy.Maximum)
            column.addWidget(box)
        column.addStretch(1)  # a taller window: the room goes below, not between the boxes
        self.scroll_area = QScrollArea(self)
        self.scroll_area.setObjectName("prefsScroll")
        self.scroll_area.setWidget(content)
        self.scroll_area.setWidgetResizable(True)
        self.scroll_area.setFrameShape(QFrame.Shape.NoFrame)
        self.scroll_area.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self._content = content

        self.errors = QLabel(self)
        self.errors.setObjectName("prefsErrors")
        self.errors.setWordWrap(True)
        self.errors.setVisible(False)
        self.buttons = QDialogButtonBox(
            QDialogButtonBox.StandardButton.Ok | QDialogButtonBox.StandardButton.Cancel, self)
        self.buttons.accepted.connect(self.try_accept)
        self.buttons.rejected.connect(self.reject)
        layout = self._layout = QVBoxLayout(self)
        layout.addWidget(self.scroll_area, 1)
        layout.addWidget(self.errors)
        layout.addWidget(self.buttons)
        self.currency.currentIndexChanged.connect(self._currency_changed)
        self.load(settings)
        self.retranslate()
        self.setMinimumWidth(480)
        self.resize(self.sizeHint())

    def sizeHint(self) -> QSize:  # noqa: N802 - Qt API
        """Wide enough to read, tall enough that every field and the whole budget help show
        (the longest help the budget settings can give), within the screen."""
        width = DEFAULT_WIDTH
        margins = self._layout.contentsMargins()
        inner = width - margins.left() - margins.right()
        shown = self.guard_text.text()
        self.guard_text.setText(self._longest_guard())
        # the scroll area never shows its widget shorter than its minimum size hint
        content = max(self._content.heightForWidth(inner),
                      self._content.minimumSizeHint().height())
        self.guard_text.setText(shown)
        height = (content + self.buttons.sizeHint().height() + self._layout.spacing()
                  + margins.top() + margins.bottom())
        screen = self.screen()
        if screen is not None:
            height = min(height, int(screen.availableGeometry().height() * 0.9))
        return QSize(width, max(height, 200))

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
        self.edits["machine_budget_hours"].setText(f"{s.machine_budget_hours:g}")
        self.edits["idle_gpu_percent"].setText(f"{s.idle_gpu_percent:g}")
        self.edits["idle_minutes"].setText(str(s.idle_minutes))
        self.edits["store_keep_days"].setText(str(s.store_keep_days))
        self.edits["store_keep_checkpoints"].setText(str(s.store_keep_checkpoints))
        self.edits["keep_alive_wait_min"].setText(str(s.keep_alive_wait_min))
        self._currency_changed()

    def regions(self) -> list[str]:
        if self._regions is None:
            try:
                self._regions = known_regions()
            except (OSError, ValueError) as exc:  # no catalog: any region is taken as typed
                log.warning("cannot read the catalog's regions: %s", exc)
                self._regions = []
        return self._regions

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
                    "machine_budget_hours", "idle_gpu_percent"):
            out[key] = _number(self.edits[key].text())
        mfu = _number(self.edits["mfu"].text())
        out["mfu"] = None if mfu is None else mfu / 100
        for key in WHOLE_KEYS:
            whole = _number(self.edits[key].text())
            out[key] = int(whole) if whole is not None and whole.is_integer() else None
        for key, value in out.items():
            if value is None or not is_valid(key, value):
                bad.append(key)
        region = out["default_region"]
        known = self.regions() if region else []
        if region and known and region not in known:
            bad.append("default_region")  # "mars-north-9": no cloud rents there
        return out, bad

    def message(self, key: str) -> str:
        """What a valid value of ``key`` looks like, in the field's own unit."""
        if key == "default_region":
            return self.tr("'{region}' is not a region gpudesk knows. Choose one from the "
                           "list, e.g. us-east-1 or ap-shanghai, or leave it empty.").format(
                region=self.edits["default_region"].text().strip())
        texts = {
            "mfu": self.tr("Enter a percentage above 0 and at most 100, e.g. 35."),
            "cny_per_usd": self.tr("Enter yuan per dollar, above 0 and at most 1000, "
                                   "e.g. 7.2."),
            "monthly_budget_usd": self.tr("Enter US dollars, 0 (no budget) or more, "
                                          "e.g. 500."),
            "machine_budget_usd": self.tr("Enter US dollars, 0 (the hours above) or more, "
                                          "e.g. 50."),
            "machine_budget_hours": self.tr("Enter hours above 0 and at most 8784, e.g. 24 "
                                            "(a day of the machine)."),
            "idle_gpu_percent": self.tr("Enter a percentage from 0 to 100, e.g. 5."),
            "idle_minutes": self.tr("Enter whole minutes from 1 to 1440, e.g. 30."),
            "store_keep_days": self.tr("Enter whole days from 0 (keep) to 3650, e.g. 30."),
            "store_keep_checkpoints": self.tr("Enter a whole number from 1 to 1000, e.g. 3."),
            "keep_alive_wait_min": self.tr("Enter whole minutes from 5 to 10080, e.g. 60."),
        }
        return texts.get(key, "")

    def _show_bad(self, bad: list[str]) -> None:
        """Mark exactly ``bad``, each with its message; the summary names what is left."""
        for key, edit in self.edits.items():
            wrong = key in bad
            self._mark(edit, wrong)
            error = self.field_errors[key]
            text = self.message(key) if wrong else ""
            if error.text() != text:
                error.setText(text)
            if wrong:
                error.setMinimumHeight(0)
                self._forms[key].setRowVisible(error, True)
            elif error.isVisibleTo(self):
                # A corrected field's message goes, its room stays until the dialog
                # closes: the fields below never jump under the user's next click.
                error.setMinimumHeight(error.height())
        if bad:
            names = self.tr(", ").join(_plain_label(self.labels[k].text()) for k in bad)
            self.errors.setText(self.tr("Please correct: {fields}").format(fields=names))
        self.errors.setVisible(bool(bad))

    def try_accept(self) -> bool:
        """OK: save and close when every value is valid; otherwise mark and stay open."""
        values, bad = self.values()
        self._checked = True
        self._show_bad(bad)
        if bad:
            self.edits[bad[0]].setFocus()
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

    def _edited(self, key: str) -> None:
        """After a refused OK, every change re-checks: fixed fields lose mark and message,
        and the summary goes once nothing is left to correct."""
        if self._checked:
            self._show_bad(self.values()[1])
        elif self.edits[key].property("invalid"):
            self._mark(self.edits[key], False)

    def _mark(self, edit: QLineEdit, invalid: bool) -> None:
        if edit.property("invalid") is invalid:
            return
        edit.setProperty("invalid", invalid)
        style = edit.style()
        style.unpolish(edit)
        style.polish(edit)

    def _currency_changed(self) -> None:
        self.edits["cny_per_usd"].setEnabled(self.currency.currentData() == "CNY")

    # ------------------------------------------------------------------ the budget help

    def _budget(self, key: str) -> float:
        value = _number(self.edits[key].text())
        return value if value is not None and value > 0 else 0.0

    def _guard_lines(self, action: str, machine: float, monthly: float,
                     hours: float = 0.0) -> list[str]:
        """What happens at 100 % of each budget, as the settings stand: the words follow
        the chosen action, so "Stop…" is never answered by "nothing is stopped". A machine's
        budget is ``machine`` USD, else ``hours`` of its price (the default, issue 29)."""
        from gpudesk.services.cloud import guard
        from gpudesk.services.cloud.catalog import provider_title
        from gpudesk.services.money.ledger import Machine
        from gpudesk.ui.widgets.task_runner import format_template

        if action not in guard.ACTIONS:
            return [self.tr("Machine budgets only warn: nothing is stopped.")]
        stop = action == "stop"
        lines = []
        per_machine = machine > 0 or hours > 0
        # the default in hours: its amount is the machine's price times them
        amount = "" if machine > 0 else self.tr("{hours} h × its price").format(
            hours=f"{hours:g}")
        if machine <= 0 and hours > 0:
            lines.append(self.tr(
                "Every machine launches with a budget of {hours} hours of its price unless "
                "you choose another (or none) when you launch it; a fixed amount below "
                "replaces the hours.").format(hours=f"{hours:g}"))
        if per_machine:
            for provider in ("aws", "tencent", "aliyun"):
                m = Machine(id="", provider=provider, disk_gb=100.0)
                g = guard.plan(provider, machine if machine > 0 else hours, action, 1.0, 0.0,
                               0.0, role=True)  # the role named at creation, the default
                said = " ".join(format_template(guard.CONTEXT, t,
                                                {**v, "budget": amount} if amount and
                                                "budget" in v else v)
                                for t, v in guard.sentences(m, g)
                                # the disk's price per machine: the Launch dialog and show
                                if t not in (guard.MSG_TIMER, guard.MSG_DESKTOP,
                                             guard.MSG_DISK_COST))
                if "cloud-timer" in g.enforced_by:
                    said += " " + (self.tr(
                        "The cloud itself releases it at the release time that budget ÷ "
                        "price gives, even if gpudesk and the agent are gone.")
                        if provider == "aliyun" else self.tr(
                        "The cloud itself terminates it when budget ÷ price runs out, even "
                        "if gpudesk and the agent are gone."))
                lines.append(f"{provider_title(provider)}: {said}")
        if monthly > 0:
            lines.append(self.tr(
                "At 100 % of the monthly budget, gpudesk stops every billing machine (while "
                "gpudesk runs).") if stop else self.tr(
                "At 100 % of the monthly budget, gpudesk terminates every billing machine "
                "(while gpudesk runs)."))
        if not per_machine and monthly <= 0:
            lines.append(self.tr(
                "No budget is set yet, so nothing is stopped: enter a monthly budget or a "
                "budget per machine above.") if stop else self.tr(
                "No budget is set yet, so nothing is terminated: enter a monthly budget or a "
                "budget per machine above."))
        elif not per_machine:
            lines.append(self.tr(
                "No budget per machine: no single machine is stopped for its own spend.")
                if stop else self.tr(
                "No budget per machine: no single machine is terminated for its own spend."))
        return lines

    def _longest_guard(self) -> str:
        """The longest help any budget setting gives, to size the dialog once for all."""
        texts = ["\n".join(self._guard_lines(action, machine, monthly, hours))
                 for action in ("stop", "terminate")
                 for machine, hours in ((0.0, 0.0), (50.0, 24.0), (0.0, 8784.0))
                 for monthly in (0.0, 500.0)]
        return max(texts, key=len)

    def _show_guard(self) -> None:
        """The budgets in each cloud's terms: what stops the bill, and who."""
        action = str(self.budget_action.currentData() or "stop")
        lines = self._guard_lines(action, self._budget("machine_budget_usd"),
                                  self._budget("monthly_budget_usd"),
                                  self._budget("machine_budget_hours"))
        self.guard_text.setText("\n".join(lines))

    # ------------------------------------------------------------------ language

    def retranslate(self) -> None:
        self.setWindowTitle(self.tr("Preferences"))
        self.general_box.setTitle(self.tr("General"))
        self.money_box.setTitle(self.tr("Money"))
        self.idle_box.setTitle(self.tr("Idle machines"))
        self.store_box.setTitle(self.tr("Run data in the bucket"))
        texts = {
            "language": self.tr("&Language"),
            "theme": self.tr("&Theme"),
            "default_region": self.tr("Default &region"),
            "mfu": self.tr("Default &MFU (%)"),
            "currency": self.tr("Show prices &in"),
            "cny_per_usd": self.tr("CNY per USD (your &rate)"),
            "monthly_budget_usd": self.tr("Monthly &budget (USD, 0 = none)"),
            "machine_budget_hours": self.tr("Budget per machine: &hours of its price"),
            "machine_budget_usd": self.tr("Or a fixed budget per &machine (USD, 0 = the "
                                          "hours)"),
            "idle_gpu_percent": self.tr("Idle below GPU &utilisation (%)"),
            "idle_minutes": self.tr("Idle f&or (minutes)"),
            "idle_action": self.tr("When idle, &do"),
            "store_keep_days": self.tr("Delete a run's folder after (&days, 0 = keep)"),
            "store_keep_checkpoints": self.tr("Checkpoints &kept per run"),
            "keep_alive_wait_min": self.tr("Wait for spot capacity (mi&nutes)"),
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
        if self._checked:
            self._show_bad(self.values()[1])  # the messages in the new language
        self.edits["default_region"].setPlaceholderText(self.tr("e.g. us-east-1 or "
                                                                "ap-shanghai; empty = none"))
        self.edits["mfu"].setToolTip(self.tr("Model FLOPs utilisation assumed for new plans, "
                                             "above 0 and at most 100"))
        self.edits["cny_per_usd"].setToolTip(self.tr("Catalog prices are in USD; they are "
                                                     "converted with this rate"))
        self.edits["idle_minutes"].setToolTip(self.tr("A whole number from 1 to 1440"))
        self.edits["store_keep_days"].setToolTip(self.tr(
            "Counted from the day a run ends; 0 keeps every run's folder until you delete it"))
        self.edits["store_keep_checkpoints"].setToolTip(self.tr(
            "The newest checkpoints each run keeps in the bucket; older ones are deleted"))
        self.edits["keep_alive_wait_min"].setToolTip(self.tr(
            "A run that recovers by itself: when its group starts no machine for this long "
            "after a reclaim, gpudesk ends the group and tells you what was saved"))

    def showEvent(self, event: QShowEvent) -> None:  # noqa: N802 - Qt API
        # The regions a completer offers, read when the dialog is first shown.
        if self.edits["default_region"].completer() is None and self.regions():
            completer = QCompleter(self.regions(), self)
            completer.setCaseSensitivity(Qt.CaseSensitivity.CaseInsensitive)
            completer.setFilterMode(Qt.MatchFlag.MatchContains)
            self.edits["default_region"].setCompleter(completer)
        super().showEvent(event)
