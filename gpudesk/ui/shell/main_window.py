"""The main window: a navigation list of pages, the menus, and the catalog's age.

Pages register with ``add_page(key, widget, title)`` where ``title`` is a
function returning the translated name, so later pages (Train, Watch) plug in
without touching the menus or the language switch.

The window owns the one ledger connection and hands it to the pages; at start
it reconciles with the clouds (when keys exist), so a machine left running by
a crash is on screen and in the status bar at once.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
from collections.abc import Callable

from PySide6.QtCore import QCoreApplication, QEvent, QSize, Qt, QTimer
from PySide6.QtGui import QAction, QActionGroup, QCloseEvent, QKeySequence
from PySide6.QtWidgets import (
    QApplication,
    QDialog,
    QHBoxLayout,
    QLabel,
    QListWidget,
    QListWidgetItem,
    QMainWindow,
    QStackedWidget,
    QVBoxLayout,
    QWidget,
)

from gpudesk import sizing
from gpudesk.services.cloud import spot_prices
from gpudesk.services.cloud.accounts import ProviderFactory, provider_from_keyring
from gpudesk.services.cloud.accounts import title as provider_title
from gpudesk.services.cloud.catalog import Catalog
from gpudesk.services.cloud.launcher import Launcher
from gpudesk.services.cloud.machines import act
from gpudesk.services.core.settings import Settings, save_settings
from gpudesk.services.money.ledger import Ledger
from gpudesk.ui.machines.accounts_page import AccountsPage
from gpudesk.ui.machines.instances_page import InstancesPage
from gpudesk.ui.plan.plan_page import PlanPage
from gpudesk.ui.run.run_page import RunPage
from gpudesk.ui.shell.i18n import install_translator
from gpudesk.ui.watch.budget_alerts import BudgetAlerts, BudgetBanner
from gpudesk.ui.watch.watch_page import WatchPage
from gpudesk.ui.widgets.money import DISPLAY
from gpudesk.ui.widgets.task_runner import TaskRunner
from gpudesk.ui.widgets.tray import BillingTray

log = logging.getLogger(__name__)

SPOT_PRICES_EVERY_MS = 15 * 60 * 1000  # EC2 spot prices change a few times a day at most
LANGUAGE_NAMES = {"en": "English", "zh_CN": "简体中文"}  # each in its own language


class MainWindow(QMainWindow):
    """One window; pages on the left, File/View/Help menus, prices' age below."""

    def __init__(self, settings: Settings, catalog: Catalog | None = None,
                 parent: QWidget | None = None, *, ledger: Ledger | None = None,
                 providers: ProviderFactory = provider_from_keyring) -> None:
        super().__init__(parent)
        self.setObjectName("mainWindow")
        self.settings = settings
        self._titles: list[Callable[[], str]] = []
        self.page_actions: list[QAction] = []
        self.welcome: QDialog | None = None
        self.nav = QListWidget(self)
        self.nav.setObjectName("nav")
        self.nav.setIconSize(QSize(20, 20))
        self.nav.setMaximumWidth(110)
        self.nav.setMinimumWidth(96)
        self.pages = QStackedWidget(self)
        self.nav.currentRowChanged.connect(self.pages.setCurrentIndex)
        central = QWidget(self)
        layout = QHBoxLayout(central)
        layout.setContentsMargins(4, 4, 4, 4)
        layout.addWidget(self.nav)
        right = QVBoxLayout()
        right.setContentsMargins(0, 0, 0, 0)
        self.budget_banner = BudgetBanner(central)
        right.addWidget(self.budget_banner)
        right.addWidget(self.pages, 1)
        layout.addLayout(right, 1)
        self.setCentralWidget(central)

        self.ledger = ledger if ledger is not None else Ledger()
        self.providers = providers
        self.money = DISPLAY
        self.money.set(settings.currency, settings.cny_per_usd)
        self.launcher = Launcher(self.ledger, providers)
        self.plan = PlanPage(settings, catalog, self)
        self.add_page("plan", self.plan, lambda: self.tr("Plan"))
        self.accounts = AccountsPage(self.ledger, parent=self)
        self.add_page("accounts", self.accounts, lambda: self.tr("Accounts"))
        self.instances = InstancesPage(self.ledger, providers, self.money, self)
        self.add_page("instances", self.instances, lambda: self.tr("Instances"))
        self.run = RunPage(self.ledger, self)
        self.run.launcher = self.launcher
        self.add_page("run", self.run, lambda: self.tr("Run"))
        self.watch = WatchPage(self.ledger, lambda: self.settings, self)
        self.add_page("watch", self.watch, lambda: self.tr("Watch"))
        self.nav.setCurrentRow(0)
        self.launch_dialog: QDialog | None = None
        self.prices_runner = TaskRunner(self)
        self.spot_runner = TaskRunner(self, show_dialog=False, busy_cursor=False)  # in the back
        self.spot_timer = QTimer(self)
        self.spot_timer.setInterval(SPOT_PRICES_EVERY_MS)
        self.spot_timer.timeout.connect(self.refresh_spot_prices)
        self.spot_timer.start()
        self.plan.launch_requested.connect(self.show_launch_dialog)
        self.accounts.changed.connect(self.instances.refresh)
        self.billing_label = QLabel(self)
        self.billing_label.setObjectName("billingStatus")
        self.statusBar().addPermanentWidget(self.billing_label)
        self.instances.billing_changed.connect(self._show_billing)
        self.instances.billing_changed.connect(lambda *_: self.run.reload_machines())
        self.instances.billing_changed.connect(lambda *_: self.watch.reload_machines())
        self.tray = BillingTray(self.windowIcon(), self._raise, self.close, self)
        if BillingTray.available():
            self.tray.icon.show()
        self._told_no_tray = False
        self.budget_runner = TaskRunner(self)
        self.budget_alerts = BudgetAlerts.for_ledger(self.ledger, lambda: self.settings,
                                                     self.tray, parent=self)
        self.budget_alerts.alert.connect(self.budget_banner.show_crossing)
        self.budget_alerts.alert.connect(lambda _c, h, t: self.statusBar().showMessage(
            f"{h} — {t}", 30000))
        self.budget_alerts.no_tray.connect(lambda t: self.statusBar().showMessage(t, 15000))
        self.budget_alerts.action_needed.connect(self._budget_action)
        self.budget_alerts.start()
        self._warned_at_start = False
        self.catalog_label = QLabel(self)
        self.catalog_label.setObjectName("catalogAge")
        self.statusBar().addPermanentWidget(self.catalog_label)
        self.plan.catalog_changed.connect(lambda _c: self._show_catalog_age())
        self._build_menus()
        self.retranslate()
        self.resize(1280, 800)
        if catalog is None:
            QTimer.singleShot(0, self, self._load_catalog)
        self.instances.reload()
        if self.ledger.accounts():
            QTimer.singleShot(0, self, self._reconcile_at_start)

    def _budget_action(self, action: str, ids: list[str]) -> None:
        """At 100 % of a budget: stop or terminate what still bills (the agent does the same
        on the machine when the app is not connected)."""
        if action == "warn" or not ids:
            return

        async def run_all() -> None:  # one coroutine: a second TaskRunner.run cancels the first
            for ledger_id in ids:
                await act(self.ledger, ledger_id, action, self.providers)
            self.instances.reload()

        self.budget_runner.run(run_all(), title=self.tr("The budget action failed"))

    def _reconcile_at_start(self) -> None:
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            return  # no qasync loop (a bare QApplication in a test)
        self.instances.refresh()
        self.refresh_spot_prices()

    def refresh_spot_prices(self) -> None:
        """Record spot price changes of running spot machines (spend bills at the price in
        force), in the background; the clouds are asked only when such a machine exists."""
        if self.spot_runner.busy:
            return

        def done(report: spot_prices.SpotPriceReport) -> None:
            if report.recorded:
                self.watch.refresh_spend()

        self.spot_runner.run_blocking(spot_prices.record_spot_prices, self.ledger,
                                      self.providers, self.settings.cny_per_usd,
                                      on_success=done)

    def show_page(self, key: str) -> None:
        for row in range(self.pages.count()):
            page = self.pages.widget(row)
            if page is not None and page.property("pageKey") == key:
                self.nav.setCurrentRow(row)

    def show_launch_dialog(self, ranked: object) -> QDialog | None:
        """The Launch dialog for an offer from the Plan page (a RankedOffer)."""
        from gpudesk.ui.machines.launch_dialog import LaunchDialog

        offer = getattr(ranked, "offer", None)
        catalog = self.plan.catalog
        if offer is None or catalog is None:
            return None
        if self.ledger.account(offer.provider) is None:
            self.show_page("accounts")
            self.statusBar().showMessage(self.tr("Add your {provider} keys first.").format(
                provider=provider_title(offer.provider)), 10000)
            return None
        dialog = LaunchDialog(offer, catalog, self.launcher.launch,
                              spot=bool(getattr(ranked, "spot", False)), money=self.money,
                              parent=self)
        dialog.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
        dialog.launched.connect(self._launched)
        dialog.ended.connect(self.instances.reload)
        dialog.destroyed.connect(lambda _o=None: setattr(self, "launch_dialog", None))
        self.launch_dialog = dialog
        dialog.open()
        self.instances.reload()
        return dialog

    def refresh_prices(self) -> None:
        """Live prices for the providers with keys; the bundled catalog stays the fallback."""
        from gpudesk.services.cloud.live_prices import RefreshReport, refresh_prices

        catalog = self.plan.catalog
        names = [a.provider for a in self.ledger.accounts() if a.provider in ("aws", "tencent")]
        if catalog is None or not names:
            self.statusBar().showMessage(self.tr("Add cloud keys on the Accounts page to get "
                                                 "live prices."), 10000)
            return

        def done(report: RefreshReport) -> None:
            self.plan.set_catalog(report.catalog)
            text = self.tr("Live prices: {n} offers updated.").format(n=report.updated)
            if report.sold_out:
                text += " " + self.tr("Sold out: {items}.").format(
                    items=", ".join(report.sold_out))
            if report.errors:
                text += " " + self.tr("{n} regions did not answer.").format(
                    n=len(report.errors))
            self.statusBar().showMessage(text, 15000)
            self.refresh_spot_prices()

        self.statusBar().showMessage(self.tr("Asking the clouds for prices…"))
        work = refresh_prices(catalog, names, self.settings.cny_per_usd,  # type: ignore[arg-type]
                              self.providers)
        self.prices_runner.run(work, on_success=done,
                               title=self.tr("Prices were not refreshed"))

    def _launched(self, ledger_id: str) -> None:
        self.instances.reload()
        self.instances.select_machine(ledger_id)

    def _raise(self) -> None:
        self.showNormal()
        self.raise_()
        self.activateWindow()
        self.show_page("instances")

    def _show_billing(self, count: int, per_hour: float) -> None:
        billing = [m for m in self.instances.model.machines if m.billing]
        self.tray.update(billing)
        report = self.instances.last_report
        if report is not None and not self._warned_at_start:
            self._warned_at_start = True
            if billing:  # the first check of this session found machines still billing
                self.tray.notify(self.tr("Machines are billing"), self.tr(
                    "{n} machine(s) from before are still billing. See Instances.").format(
                    n=len(billing)))
                if not BillingTray.available() and not self._told_no_tray:
                    self._told_no_tray = True
                    self.statusBar().showMessage(self.tr(
                        "This desktop has no system tray: billing alerts show here and on the "
                        "Instances page."), 15000)
        if count:
            self.billing_label.setText(self.tr("● {n} billing ({rate}/h)").format(
                n=count, rate=self.money(per_hour)))
            self.billing_label.setStyleSheet("color: #c0392b; font-weight: bold;")
        else:
            self.billing_label.setText("")
            self.billing_label.setStyleSheet("")

    def add_page(self, key: str, widget: QWidget, title: Callable[[], str]) -> None:
        item = QListWidgetItem(title(), self.nav)
        item.setData(Qt.ItemDataRole.UserRole, key)
        item.setSizeHint(QSize(0, 36))
        widget.setProperty("pageKey", key)
        self.pages.addWidget(widget)
        self._titles.append(title)
        row = len(self._titles) - 1
        action = QAction(title(), self)
        action.setObjectName(f"page_{key}")
        if row < 9:
            action.setShortcut(QKeySequence(f"Ctrl+{row + 1}"))
        action.triggered.connect(lambda _checked=False, r=row: self.nav.setCurrentRow(r))
        self.addAction(action)  # the shortcut works even before the menus exist
        self.page_actions.append(action)
        if hasattr(self, "pages_menu"):
            self.pages_menu.addAction(action)

    def _load_catalog(self) -> None:
        try:
            asyncio.get_running_loop()
        except RuntimeError:  # no qasync loop (e.g. a bare QApplication): read it now
            from gpudesk.services.cloud.catalog import load_catalog

            self.plan.set_catalog(load_catalog())
            return
        self.plan.load_catalog_async()

    # ----------------------------------------------------------------- menus

    def _action(self, slot: Callable[[], object], shortcut: QKeySequence | None = None
                ) -> QAction:
        action = QAction(self)
        action.triggered.connect(lambda _checked=False: slot())
        if shortcut is not None:
            action.setShortcut(shortcut)
        return action

    def _build_menus(self) -> None:
        bar = self.menuBar()
        self.file_menu = bar.addMenu("")
        self.open_action = self._action(self.plan.open_plan_dialog,
                                        QKeySequence(QKeySequence.StandardKey.Open))
        self.save_action = self._action(self.plan.save_plan_dialog,
                                        QKeySequence(QKeySequence.StandardKey.Save))
        self.export_action = self._action(self.plan.export_csv_dialog, QKeySequence("Ctrl+E"))
        self.preferences_action = self._action(self.show_preferences, QKeySequence("Ctrl+,"))
        self.preferences_action.setMenuRole(QAction.MenuRole.PreferencesRole)
        self.quit_action = self._action(self.close, QKeySequence("Ctrl+Q"))
        self.quit_action.setMenuRole(QAction.MenuRole.QuitRole)
        for action in (self.open_action, self.save_action, self.export_action):
            self.file_menu.addAction(action)
        self.file_menu.addSeparator()
        self.file_menu.addAction(self.preferences_action)
        self.file_menu.addSeparator()
        self.file_menu.addAction(self.quit_action)

        self.view_menu = bar.addMenu("")
        self.language_menu = self.view_menu.addMenu("")
        self.language_group = QActionGroup(self)
        self.language_actions: dict[str, QAction] = {}
        for code in ("system", "en", "zh_CN"):
            action = self._action(lambda c=code: self.set_language(c))  # type: ignore[misc]
            action.setCheckable(True)
            action.setChecked(code == self.settings.language)
            self.language_group.addAction(action)
            self.language_menu.addAction(action)
            self.language_actions[code] = action
        self.theme_menu = self.view_menu.addMenu("")
        self.theme_group = QActionGroup(self)
        self.theme_actions: dict[str, QAction] = {}
        for code in ("system", "light", "dark"):
            action = self._action(lambda c=code: self.set_theme(c))  # type: ignore[misc]
            action.setCheckable(True)
            action.setChecked(code == self.settings.theme)
            self.theme_group.addAction(action)
            self.theme_menu.addAction(action)
            self.theme_actions[code] = action
        self.pages_menu = self.view_menu.addMenu("")
        for page_action in self.page_actions:
            self.pages_menu.addAction(page_action)

        self.tools_menu = bar.addMenu("")
        self.trace_action = self._action(self.show_trace_dialog, QKeySequence("Ctrl+T"))
        self.tools_menu.addAction(self.trace_action)
        self.prices_action = self._action(self.refresh_prices)
        self.tools_menu.addAction(self.prices_action)

        self.help_menu = bar.addMenu("")
        self.about_action = self._action(self.show_about, QKeySequence("F1"))
        self.about_action.setMenuRole(QAction.MenuRole.AboutRole)
        self.logs_action = self._action(self.open_log_folder)
        self.help_menu.addAction(self.logs_action)
        self.help_menu.addSeparator()
        self.help_menu.addAction(self.about_action)

    def set_language(self, language: str) -> str:
        """Switch the UI language now; widgets retranslate on LanguageChange."""
        app = QCoreApplication.instance()
        assert app is not None
        effective = install_translator(app, language)
        self.settings.language = language
        if language in self.language_actions:
            self.language_actions[language].setChecked(True)
        return effective

    def set_theme(self, theme: str) -> str:
        """Switch between the OS colours, light and dark now; return the scheme in effect."""
        from gpudesk.ui.shell.theme import apply_theme

        app = QApplication.instance()
        assert isinstance(app, QApplication)
        effective = apply_theme(app, theme)
        self.settings.theme = theme
        if theme in self.theme_actions:
            self.theme_actions[theme].setChecked(True)
        return effective

    def show_preferences(self) -> QDialog:
        from gpudesk.ui.shell.settings_dialog import SettingsDialog

        dialog = SettingsDialog(self.settings, self)
        dialog.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
        dialog.saved.connect(self.apply_settings)
        dialog.open()
        return dialog

    def apply_settings(self, new: Settings) -> None:
        """Take the saved preferences: copy them into the shared settings, apply live ones."""
        language_changed = new.language != self.settings.language
        theme_changed = new.theme != self.settings.theme
        for f in dataclasses.fields(Settings):
            if f.name != "last_plan":
                setattr(self.settings, f.name, getattr(new, f.name))
        self.money.set(new.currency, new.cny_per_usd)
        self.instances.reload()
        self.plan.recompute()
        if language_changed:
            self.set_language(new.language)
        if theme_changed:
            self.set_theme(new.theme)

    def maybe_show_welcome(self) -> QDialog | None:
        """On first start, show the welcome; dismissing it (any way) is remembered."""
        if self.settings.welcomed:
            return None
        from gpudesk.ui.shell.welcome import WelcomeDialog

        dialog = WelcomeDialog(self.settings.language, self.set_language, self)
        dialog.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
        dialog.finished.connect(lambda _r: self._welcome_dismissed(dialog.choice))
        self.welcome = dialog
        dialog.open()
        return dialog

    def _welcome_dismissed(self, choice: str = "") -> None:
        self.welcome = None
        if choice:
            self.show_page("accounts")
        self.settings.welcomed = True
        try:
            save_settings(self.settings)
        except OSError as exc:
            log.warning("cannot save settings: %s", exc)

    def open_log_folder(self) -> bool:
        from gpudesk.ui.shell.crash_dialog import open_log_folder

        return open_log_folder()

    def show_trace_dialog(self) -> QDialog:
        """Trace with the Plan page's batch, precision and optimizer (if they parse)."""
        from gpudesk.ui.plan.trace_dialog import TraceDialog  # only when asked: keeps start-up lean

        job, errors = self.plan.form.build_job()
        setup = job.setup if job is not None and not errors else sizing.Setup()
        dialog = TraceDialog(setup, self)
        dialog.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
        dialog.open()
        return dialog

    def show_about(self) -> QDialog:
        from gpudesk.ui.shell.about_dialog import AboutDialog

        dialog = AboutDialog(self)
        dialog.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
        dialog.open()
        return dialog

    # ----------------------------------------------------------------- language

    def retranslate(self) -> None:
        self.setWindowTitle(self.tr("gpudesk — plan, rent and train on cloud GPUs"))
        for row, title in enumerate(self._titles):
            item = self.nav.item(row)
            if item is not None:
                item.setText(title())
        self.file_menu.setTitle(self.tr("&File"))
        self.open_action.setText(self.tr("&Open plan…"))
        self.save_action.setText(self.tr("&Save plan…"))
        self.export_action.setText(self.tr("&Export offers CSV…"))
        self.quit_action.setText(self.tr("&Quit"))
        self.preferences_action.setText(self.tr("&Preferences…"))
        self.theme_menu.setTitle(self.tr("&Theme"))
        self.theme_actions["system"].setText(self.tr("System"))
        self.theme_actions["light"].setText(self.tr("Light"))
        self.theme_actions["dark"].setText(self.tr("Dark"))
        self.pages_menu.setTitle(self.tr("&Go to page"))
        for action, title in zip(self.page_actions, self._titles, strict=True):
            action.setText(title())
        self.logs_action.setText(self.tr("Open &log folder"))
        self.view_menu.setTitle(self.tr("&View"))
        self.language_menu.setTitle(self.tr("&Language"))
        self.language_actions["system"].setText(self.tr("System"))
        for code, name in LANGUAGE_NAMES.items():
            self.language_actions[code].setText(name)
        self.tools_menu.setTitle(self.tr("&Tools"))
        self.trace_action.setText(self.tr("&Trace my model…"))
        self.prices_action.setText(self.tr("&Refresh prices from my clouds"))
        self.help_menu.setTitle(self.tr("&Help"))
        self.about_action.setText(self.tr("&About gpudesk"))
        self._show_catalog_age()

    def changeEvent(self, event: QEvent) -> None:  # noqa: N802 - Qt API
        if event.type() == QEvent.Type.LanguageChange:
            self.retranslate()
        super().changeEvent(event)

    def _show_catalog_age(self) -> None:
        catalog = self.plan.catalog
        if catalog is None or not catalog.offers:
            self.catalog_label.setText(self.tr("Loading prices…"))
            return
        days = catalog.age_days()
        text = self.tr("Prices from {date} ({days} days old)").format(
            date=catalog.oldest_price_date.isoformat(), days=days)
        self.catalog_label.setText(text)
        self.catalog_label.setToolTip(self.tr("List prices from the bundled catalog; the "
                                              "oldest price is shown. Check before renting."))
        self.catalog_label.setStyleSheet("color: #b26a00;" if days > 90 else "")

    # ----------------------------------------------------------------- closing

    def closeEvent(self, event: QCloseEvent) -> None:  # noqa: N802 - Qt API
        """Keep the last plan and the language; a failed write must not block quitting."""
        try:
            save_settings(self.settings)
        except OSError as exc:
            log.warning("cannot save settings: %s", exc)
        self.run.shutdown()  # stop following and close tunnels; the runs go on
        self.watch.shutdown()  # the agents go on enforcing the rules on the machines
        super().closeEvent(event)

