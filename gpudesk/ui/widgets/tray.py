"""The system-tray icon: what is billing right now, visible even with the window hidden.

Its menu lists every machine that may be billing with its price, then "Show
gpudesk" and "Quit". Where the platform has no tray, the status bar's
billing label says the same and the window says once that there is no tray.
"""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtCore import QCoreApplication
from PySide6.QtCore import QObject
from PySide6.QtGui import QAction
from PySide6.QtGui import QIcon
from PySide6.QtWidgets import QMenu
from PySide6.QtWidgets import QSystemTrayIcon
from PySide6.QtWidgets import QWidget

from gpudesk.services.cloud.accounts import title
from gpudesk.services.money.ledger import Machine
from gpudesk.ui.widgets.money import DISPLAY


def state_word(state: str) -> str:
    """A billing machine's ledger state in the window's language."""
    words = {"pending": QCoreApplication.translate("BillingTray", "starting"),
             "running": QCoreApplication.translate("BillingTray", "running"),
             "stopping": QCoreApplication.translate("BillingTray", "stopping"),
             "stopped": QCoreApplication.translate("BillingTray", "stopped"),
             "stopped (still billing)": QCoreApplication.translate(
                 "BillingTray", "stopped (still billing)")}
    return words.get(state, state)


class BillingTray(QObject):
    def __init__(self, icon: QIcon, show_window: Callable[[], None],
                 quit_app: Callable[[], object], parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.icon = QSystemTrayIcon(icon, self)
        self.icon.setObjectName("billingTray")
        self.menu = QMenu(parent)
        self.show_window = show_window
        self.quit_app = quit_app
        self.machine_actions: list[QAction] = []
        self.messages: list[tuple[str, str]] = []  # the last notifications asked for
        self.icon.setContextMenu(self.menu)
        self.icon.activated.connect(self._activated)
        self.update([])

    @staticmethod
    def available() -> bool:
        return QSystemTrayIcon.isSystemTrayAvailable()

    def _activated(self, reason: QSystemTrayIcon.ActivationReason) -> None:
        if reason == QSystemTrayIcon.ActivationReason.Trigger:
            self.show_window()

    def update(self, billing: list[Machine], spent: Callable[[Machine], float] | None = None
               ) -> None:
        """Rebuild the menu and the tooltip from the machines that may be billing.

        ``spent`` gives each machine's one spend figure (``spend.machine_spend``).
        """
        self.menu.clear()
        self.machine_actions = []
        if billing:
            rate = sum(m.price_per_hour for m in billing if m.compute_billing)
            tip = self.tr("gpudesk: {n} machine(s) may be billing ({rate}/h)").format(
                n=len(billing), rate=DISPLAY(rate))
            for m in billing:
                action = self.menu.addAction(self.tr("{name} — {provider} {type}, {state}, "
                                                     "spent {spent}").format(
                    name=m.name or m.id, provider=title(m.provider), type=m.instance_type,
                    state=state_word(m.billing_label),
                    spent=DISPLAY(spent(m) if spent is not None else 0.0)))
                action.triggered.connect(self.show_window)
                self.machine_actions.append(action)
            self.menu.addSeparator()
        else:
            tip = self.tr("gpudesk: nothing is billing")
        self.icon.setToolTip(tip)
        self.menu.addAction(self.tr("Show gpudesk"), self.show_window)
        self.menu.addAction(self.tr("Quit"), self.quit_app)

    def notify(self, heading: str, text: str) -> bool:
        """Show a balloon from the tray icon; False where the platform cannot show one."""
        self.messages.append((heading, text))
        del self.messages[:-50]
        if self.icon.isVisible() and QSystemTrayIcon.supportsMessages():
            self.icon.showMessage(heading, text, QSystemTrayIcon.MessageIcon.Warning, 10000)
            return True
        return False
