"""The Instances table: one row per ledger machine, with uptime and spend that tick."""

from __future__ import annotations

import time
from typing import Any

from PySide6.QtCore import QCoreApplication
from PySide6.QtCore import Qt
from PySide6.QtGui import QBrush
from PySide6.QtGui import QColor

from gpudesk.i18n_marks import QT_TRANSLATE_NOOP
from gpudesk.services.cloud import accounts
from gpudesk.services.cloud import guard
from gpudesk.services.cloud.reconcile import MSG_NO_PRICE
from gpudesk.services.cloud.reconcile import MSG_NO_PRICE_WHY
from gpudesk.services.money import spend
from gpudesk.services.money.ledger import Machine
from gpudesk.ui.widgets.guard_words import guard_said
from gpudesk.ui.widgets.models import Index
from gpudesk.ui.widgets.models import NamedColumnsModel
from gpudesk.ui.widgets.money import DISPLAY
from gpudesk.ui.widgets.money import Money

translate = QCoreApplication.translate  # the name lupdate looks for

COLUMNS = ("name", "provider", "type", "gpus", "market", "state", "uptime", "price", "spend",
           "budget", "address")
COL = {name: i for i, name in enumerate(COLUMNS)}
TICKING = (COL["uptime"], COL["spend"])


# The column headers and the ledger states' words, marked for lupdate, translated when shown
HEADERS = {
    "name": QT_TRANSLATE_NOOP("InstancesModel", "Machine"),
    "provider": QT_TRANSLATE_NOOP("InstancesModel", "Provider"),
    "type": QT_TRANSLATE_NOOP("InstancesModel", "Type"),
    "gpus": QT_TRANSLATE_NOOP("InstancesModel", "GPUs"),
    "market": QT_TRANSLATE_NOOP("InstancesModel", "Market"),
    "state": QT_TRANSLATE_NOOP("InstancesModel", "State"),
    "uptime": QT_TRANSLATE_NOOP("InstancesModel", "Uptime"),
    "price": QT_TRANSLATE_NOOP("InstancesModel", "Price/h"),
    "spend": QT_TRANSLATE_NOOP("InstancesModel", "Spent"),
    "budget": QT_TRANSLATE_NOOP("InstancesModel", "Budget"),
    "address": QT_TRANSLATE_NOOP("InstancesModel", "Address"),
}
STATES = {
    "intent": QT_TRANSLATE_NOOP("InstancesModel", "requesting"),
    "pending": QT_TRANSLATE_NOOP("InstancesModel", "starting"),
    "running": QT_TRANSLATE_NOOP("InstancesModel", "running"),
    "stopping": QT_TRANSLATE_NOOP("InstancesModel", "stopping"),
    "stopped": QT_TRANSLATE_NOOP("InstancesModel", "stopped"),
    "stopped (still billing)": QT_TRANSLATE_NOOP("InstancesModel", "stopped (still billing)"),
    "terminated": QT_TRANSLATE_NOOP("InstancesModel", "terminated"),
    "failed": QT_TRANSLATE_NOOP("InstancesModel", "not created"),
    "gone": QT_TRANSLATE_NOOP("InstancesModel", "gone"),
    "ready": QT_TRANSLATE_NOOP("InstancesModel", "ready"),
}


def header_text(column: str) -> str:
    return translate("InstancesModel", HEADERS[column])


def state_text(state: str) -> str:
    """The state in the window's language; a state the table does not know, as it is."""
    return translate("InstancesModel", STATES[state]) if state in STATES else state


def duration_text(seconds: float) -> str:
    s = int(seconds)
    if s < 3600:
        return f"{s // 60}:{s % 60:02d}"
    return translate("InstancesModel", "{h} h {m:02d} min").format(h=s // 3600, m=s % 3600 // 60)


class InstancesModel(NamedColumnsModel):
    columns = COLUMNS

    def __init__(self, parent: Any = None, money: Money | None = None) -> None:
        super().__init__(parent)
        self.machines: list[Machine] = []
        self.histories: dict[str, spend.History] = {}  # read with the rows, priced each tick
        # why a machine has no role to stop itself (instance_role.why_not), read with the rows
        self.role_whys: dict[str, str | None] = {}
        # why a cloud machine has no price (reconcile.no_price_why), read with the rows
        self.price_whys: dict[str, str] = {}
        self.money = money or DISPLAY
        self.now = time.time

    def set_machines(self, machines: list[Machine],
                     histories: dict[str, spend.History] | None = None,
                     role_whys: dict[str, str | None] | None = None,
                     price_whys: dict[str, str] | None = None) -> None:
        self.histories = dict(histories or {})
        self.role_whys = dict(role_whys or {})
        self.price_whys = dict(price_whys or {})
        if [m.id for m in machines] == [m.id for m in self.machines]:
            self.machines = list(machines)  # same rows: repaint in place, keep the selection
            self.refresh_all()
            return
        self.beginResetModel()
        self.machines = list(machines)
        self.endResetModel()

    def tick(self) -> None:
        """Uptime and spend move every second for running machines."""
        for col in TICKING:
            if self.machines:
                self.dataChanged.emit(self.index(0, col), self.index(len(self.machines) - 1, col))

    def row_total(self) -> int:
        return len(self.machines)

    def header_text(self, column: str) -> str:
        return header_text(column)

    def machine(self, row: int) -> Machine | None:
        return self.machines[row] if 0 <= row < len(self.machines) else None

    def data(self, index: Index, role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        m = self.machine(index.row())
        if m is None:
            return None
        column = COLUMNS[index.column()]
        if role == Qt.ItemDataRole.DisplayRole:
            return self.display(m, column)
        if role == Qt.ItemDataRole.ForegroundRole and column == "state" and m.billing:
            return QBrush(QColor("#c0392b" if m.state == "running" or self.charged_stopped(m)
                                 else "#d68910"))
        if role == Qt.ItemDataRole.ForegroundRole and column == "price" and (
                self.unpriced(m) or self.charged_stopped(m)):
            # no budget of it can be counted, or a stopped machine charged in full: in red
            return QBrush(QColor("#c0392b"))
        if role == Qt.ItemDataRole.ToolTipRole and column == "price" and self.unpriced(m):
            return translate("Guard", MSG_NO_PRICE_WHY).format(
                why=self.price_whys.get(m.id) or translate("InstancesModel", "not asked"))
        if role == Qt.ItemDataRole.ToolTipRole and column == "state" and m.error:
            # the cloud's own words inside a sentence of the window's language (issue 31)
            return translate("InstancesModel", "What the cloud last said of it: {error}").format(
                error=m.error)
        if role == Qt.ItemDataRole.ToolTipRole and column in ("spend", "budget") \
                and m.provider != "own":
            return self.guard_tooltip(m)
        if role == Qt.ItemDataRole.TextAlignmentRole and column in ("gpus", "price", "spend",
                                                                     "uptime", "budget"):
            return int(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
        return None

    def display(self, m: Machine, column: str) -> str:
        own = m.provider == "own"
        if column == "name":
            return m.name or m.id
        if column == "provider":
            return accounts.title(m.provider)
        if column == "type":
            return m.instance_type or ("—" if own else "")
        if column == "gpus":
            return f"{m.gpus} × {m.gpu}" if m.gpu and m.gpus else (str(m.gpus) if m.gpus else "")
        if column == "market":
            if own:
                return ""
            return translate("InstancesModel", "spot") if m.market == "spot" else \
                translate("InstancesModel", "on-demand")
        if column == "state":
            if m.group_live and m.ended:  # its group lives on: another machine is coming
                return translate("InstancesModel", "reclaimed; its group starts another")
            if m.group_live:
                return translate("InstancesModel", "{state} (kept alive)").format(
                    state=state_text(m.billing_label))
            return state_text(m.billing_label)  # a stopped machine charged in full says so
        if column == "uptime":
            return duration_text(m.uptime_s(self.now())) if m.running_since else ""
        if column == "price":
            if self.unpriced(m):
                return translate("Guard", MSG_NO_PRICE)
            return self.money(m.price_per_hour, 3) if not own and m.price_per_hour else ""
        if column == "spend":
            return self.money(self.spent(m)) if not own else ""
        if column == "budget":
            return "" if own else self.budget_text(m)
        if column == "address":
            if not m.public_ip or (m.ended and not own):
                return ""  # an ended machine's address is someone else's now
            return m.public_ip + (f":{m.ssh_port}" if m.ssh_port != 22 else "")
        return ""

    @staticmethod
    def unpriced(m: Machine) -> bool:
        """A cloud machine that may still bill with no price: its spend and budget count 0."""
        return m.provider != "own" and m.price_per_hour <= 0 and not m.ended \
            and bool(m.cloud_id)

    def guard_tooltip(self, m: Machine) -> str:
        """Who enforces the machine's budget, and, where it got no role to stop itself, what
        stays unprotected (the words of ``gpudesk show`` and the Launch dialog)."""
        return guard_said(guard.sentences(m, role_why=self.role_whys.get(m.id)), self.money,
                          "\n")

    def budget_text(self, m: Machine) -> str:
        """The machine's own budget and what happens at it, or that it has none."""
        if not m.budget:
            return translate("InstancesModel", "none")
        if m.group_live:  # the group's own end is the cap (guard.MSG_GROUP_GUARD)
            return translate("InstancesModel", "{amount}, then the group ends").format(
                amount=self.money(m.budget))
        action = {"stop": translate("InstancesModel", "stop"),
                  "terminate": translate("InstancesModel", "terminate")}.get(
            m.on_budget, translate("InstancesModel", "warn"))
        return translate("InstancesModel", "{amount}, then {action}").format(
            amount=self.money(m.budget), action=action)

    def spent(self, m: Machine) -> float:
        """The one spend figure (``spend.machine_spend``'s) from the history read with the row."""
        h = self.histories.get(m.id)
        return spend.cost(h, self.now()).total if h is not None else 0.0

    def billing_summary(self) -> tuple[int, float]:
        """(machines that may be billing, their price per hour in USD)."""
        billing = [m for m in self.machines if m.billing]
        # the compute's price for every machine whose compute bills: running, and stopped
        # where the cloud keeps charging it (KEEP_CHARGING / KeepCharging)
        return len(billing), sum(m.price_per_hour for m in billing if m.compute_billing)

    @staticmethod
    def charged_stopped(m: Machine) -> bool:
        """A stopped machine its cloud charges as if it ran (KEEP_CHARGING, KeepCharging)."""
        return m.state == "stopped" and m.compute_billing

    def rates(self) -> tuple[float, float]:
        """(USD/hour of the running machines, USD/hour of the stopped ones charged in full):
        the second is said apart, in red, never hidden in the first (issue 31)."""
        running = sum(m.price_per_hour for m in self.machines
                      if m.billing and m.compute_billing and not self.charged_stopped(m))
        stopped = sum(m.price_per_hour for m in self.machines
                      if m.billing and self.charged_stopped(m))
        return running, stopped

    def disk_only(self) -> list[Machine]:
        """Stopped cloud machines whose compute no longer bills but whose disks still do
        until they are terminated: never "Nothing is billing" (issue 31)."""
        return [m for m in self.machines if m.provider != "own" and m.state == "stopped"
                and not m.billing and bool(m.cloud_id)]

    def billing_states(self) -> dict[str, int]:
        """How many machines that may be billing are in each state as the money sees it
        (running, stopping, ``stopped (still billing)``…)."""
        out: dict[str, int] = {}
        for m in self.machines:
            if m.billing:
                out[m.billing_label] = out.get(m.billing_label, 0) + 1
        return out
