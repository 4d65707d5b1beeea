"""The main window: a navigation list of pages, the menus, and the catalog's age.

Pages register with ``add_page(key, widget, title)`` where ``title`` is a
function returning the translated name, so later pages (Train, Watch) plug in
without touching the menus or the language switch.

The window owns the one ledger connection and hands it to the pages; at start
it reconciles with the clouds (when keys exist), so a machine left running by
a crash is on screen and in the status bar at once.
"""

from __future__ import annotations

import dataclasses
import functools
import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, cast

from PySide6.QtCore import QCoreApplication, QSize, QTimer
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

from gpudesk.services.core.settings import Settings, save_settings
from gpudesk.ui.shell.i18n import install_translator
from gpudesk.ui.widgets.retranslate import Retranslating

if TYPE_CHECKING:  # imported after the first paint (fast start), or when a page is first opened
    from gpudesk.services.cloud.accounts import ProviderFactory
    from gpudesk.services.cloud.catalog import Catalog
    from gpudesk.services.cloud.launcher import Launcher
    from gpudesk.services.money.ledger import Ledger, Machine
    from gpudesk.ui.machines.accounts_page import AccountsPage
    from gpudesk.ui.machines.instances_page import InstancesPage
    from gpudesk.ui.plan.plan_page import PlanPage
    from gpudesk.ui.run.run_page import RunPage
    from gpudesk.ui.watch.budget_alerts import BudgetAlerts, BudgetBanner
    from gpudesk.ui.watch.watch_page import WatchPage
    from gpudesk.ui.widgets.money import Money
    from gpudesk.ui.widgets.task_runner import TaskRunner
    from gpudesk.ui.widgets.tray import BillingTray

log = logging.getLogger(__name__)

SPOT_PRICES_EVERY_MS = 15 * 60 * 1000  # EC2 spot prices change a few times a day at most
# Qt.ItemDataRole.UserRole. Before the first paint the frame names no member of Qt's
# namespace: the first use builds all its ~130 Python enums (15-25 ms of start-up).
PAGE_KEY_ROLE = 256
LANGUAGE_NAMES = {"en": "English", "zh_CN": "简体中文"}  # each in its own language


def _delete_on_close(dialog: QWidget) -> None:
    from PySide6.QtCore import Qt  # here, not at the top: see PAGE_KEY_ROLE

    dialog.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)


def _event_loop_running() -> bool:
    """Whether the qasync loop runs (not in a test's bare QApplication)."""
    import asyncio

    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return True


class MainWindow(Retranslating, QMainWindow):
    """One window; pages on the left, File/View/Help menus, prices' age below."""

    def __init__(self, settings: Settings, catalog: Catalog | None = None,
                 parent: QWidget | None = None, *, ledger: Ledger | None = None,
                 providers: ProviderFactory | None = None, deferred: bool = False) -> None:
        """``deferred``: only the frame (navigation, menus, status bar) is made here, so the
        window can be on screen at once; ``finish_start`` makes the pages after its first
        paint (the app does this). Otherwise everything is made now."""
        super().__init__(parent)
        self.setObjectName("mainWindow")
        self.settings = settings
        self.started = False
        self._catalog_given = catalog
        self._ledger_given = ledger
        self._providers_given = providers
        self._titles: list[Callable[[], str]] = []
        self.page_actions: list[QAction] = []
        self._shortcuts: list[tuple[QAction, QKeySequence]] = []  # set in finish_start
        self.welcome: QDialog | None = None
        self.quit_box: QDialog | None = None  # "machines are still billing" on quitting
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
        self._right = QVBoxLayout()
        self._right.setContentsMargins(0, 0, 0, 0)
        self._right.addWidget(self.pages, 1)
        layout.addLayout(self._right, 1)
        self.setCentralWidget(central)

        self._built: dict[str, QWidget] = {}
        self._factories: dict[str, Callable[[], QWidget]] = {}
        self.opening = QLabel(self)  # says what fills the Plan page's place until it is made
        self.opening.setObjectName("opening")
        holder = QWidget(self)
        centred = QHBoxLayout(holder)  # stretches, not an alignment flag: see PAGE_KEY_ROLE
        centred.addStretch(1)
        centred.addWidget(self.opening)
        centred.addStretch(1)
        self.add_lazy_page("plan", self._make_plan, lambda: self.tr("Plan"), holder)
        self.add_lazy_page("accounts", self._make_accounts, lambda: self.tr("Accounts"))
        self.add_lazy_page("instances", self._make_instances, lambda: self.tr("Instances"))
        self.add_lazy_page("run", self._make_run, lambda: self.tr("Run"))
        self.add_lazy_page("watch", self._make_watch, lambda: self.tr("Watch"))
        self.nav.setCurrentRow(0)
        self.billing_label = QLabel(self)
        self.billing_label.setObjectName("billingStatus")
        self.statusBar().addPermanentWidget(self.billing_label)
        self.catalog_label = QLabel(self)
        self.catalog_label.setObjectName("catalogAge")
        self.statusBar().addPermanentWidget(self.catalog_label)
        self._build_menus()
        self.retranslate()
        self.resize(1280, 800)
        if not deferred:
            self.finish_start()

    def finish_start(self) -> None:
        """Make the pages and start the background work: the ledger, the Plan and
        Instances pages, budget alerts, the tray, prices. Heavy imports happen here, after
        the window is on screen; pages not yet opened are still made on their first visit."""
        if self.started:
            return
        from gpudesk.services.cloud.accounts import provider_from_keyring
        from gpudesk.services.cloud.launcher import Launcher
        from gpudesk.services.cloud.machines import act
        from gpudesk.services.money.ledger import Ledger
        from gpudesk.ui.watch.budget_alerts import BudgetAlerts, BudgetBanner
        from gpudesk.ui.widgets.money import DISPLAY
        from gpudesk.ui.widgets.task_runner import TaskRunner
        from gpudesk.ui.widgets.tray import BillingTray

        self.started = True
        for action, keys in self._shortcuts:
            action.setShortcut(keys)
        self._shortcuts.clear()
        settings = self.settings
        self.budget_banner: BudgetBanner = BudgetBanner(self.centralWidget())
        self._right.insertWidget(0, self.budget_banner)
        given = self._ledger_given
        self.ledger: Ledger = given if given is not None else Ledger()
        providers = self._providers_given
        self.providers: ProviderFactory = (providers if providers is not None
                                           else provider_from_keyring)
        self.money: Money = DISPLAY
        self.money.set(settings.currency, settings.cny_per_usd)
        # every launch carries the guard and a pinned host key from its first boot
        self.launcher: Launcher = Launcher(self.ledger, self.providers,
                                           first_boot=self._first_boot)
        self.nav.currentRowChanged.connect(self._build_row)
        self.page("plan")
        self.page("instances")
        from gpudesk.services.core.window_state import load_state

        if load_state().watched:  # watch again what was watched, once the window is up
            QTimer.singleShot(0, self, lambda: self.page("watch"))
        self.launch_dialog: QDialog | None = None
        self.prices_runner: TaskRunner = TaskRunner(self)
        self.spot_runner: TaskRunner = TaskRunner(self, show_dialog=False,
                                                  busy_cursor=False)  # in the back
        self.guard_runner: TaskRunner = TaskRunner(self, show_dialog=False,
                                                   busy_cursor=False)  # in the back
        # a push asked for while one ran: None, or whether any asker wanted Preferences' budget
        self._guards_again: bool | None = None
        self.spot_timer = QTimer(self)
        self.spot_timer.setInterval(SPOT_PRICES_EVERY_MS)
        self.spot_timer.timeout.connect(self.refresh_spot_prices)
        self.spot_timer.start()
        self.tray: BillingTray = BillingTray(self.windowIcon(), self._raise, self.close, self)
        if BillingTray.available():
            self.tray.icon.show()
        self._told_no_tray = False
        self.budget_alerts: BudgetAlerts = BudgetAlerts.for_ledger(
            self.ledger, lambda: self.settings, self.tray, parent=self,
            act=lambda action, ledger_id: act(self.ledger, ledger_id, action, self.providers))
        self.budget_alerts.alert.connect(self.budget_banner.show_crossing)
        self.budget_alerts.alert.connect(lambda _c, h, t: self.statusBar().showMessage(
            f"{h} — {t}", 30000))
        self.budget_alerts.no_tray.connect(lambda t: self.statusBar().showMessage(t, 15000))
        # the alerts run owed stop/terminate actions themselves, queued, retried until done
        self.budget_alerts.owed.connect(self.budget_banner.show_owed)
        self.budget_alerts.acted.connect(lambda *_: self.instances.reload())
        self.budget_alerts.start()
        self._warned_at_start = False
        self._show_catalog_age()
        if self._catalog_given is None:
            QTimer.singleShot(0, self, self._load_catalog)
        self.instances.reload()
        if self.ledger.accounts():
            QTimer.singleShot(0, self, self._reconcile_at_start)
        self._restore_page()

    def _make_plan(self) -> QWidget:
        from gpudesk.ui.plan.plan_page import PlanPage

        page = PlanPage(self.settings, self._catalog_given, self)
        page.launch_requested.connect(self.show_launch_dialog)
        page.catalog_changed.connect(lambda _c: self._show_catalog_age())
        return page

    def _make_instances(self) -> QWidget:
        from gpudesk.ui.machines.instances_page import InstancesPage

        page = InstancesPage(self.ledger, self.providers, self.money, self)
        page.monthly_budget = lambda: self.settings.monthly_budget_usd  # on the billing line
        page.billing_changed.connect(self._show_billing)
        page.billing_changed.connect(lambda *_: self._reload_machines())
        return page

    @property
    def plan(self) -> PlanPage:
        return cast("PlanPage", self.page("plan"))

    @property
    def instances(self) -> InstancesPage:
        return cast("InstancesPage", self.page("instances"))

    def _reconcile_at_start(self) -> None:
        if not _event_loop_running():
            return  # no qasync loop (a bare QApplication in a test)
        self.instances.refresh()
        self.refresh_spot_prices()

    def refresh_spot_prices(self) -> None:
        """Record spot price changes of running spot machines (spend bills at the price in
        force), in the background; the clouds are asked only when such a machine exists."""
        if self.spot_runner.busy:
            return

        from gpudesk.services.cloud import spot_prices

        def done(report: spot_prices.SpotPriceReport) -> None:
            if report.recorded:
                if "watch" in self._built:
                    self.watch.refresh_spend()
                self.instances.reload()  # the Spent column prices the new history too
                self.push_guards()  # a new price moves the cloud timer and the agent's rules

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
            from gpudesk.services.cloud.accounts import title

            self.statusBar().showMessage(self.tr("Add your {provider} keys first.").format(
                provider=title(offer.provider)), 10000)
            return None
        warn_only = self.settings.budget_action not in ("stop", "terminate")
        from gpudesk.services.cloud.machines import act

        dialog = LaunchDialog(offer, catalog, self.launcher.launch,
                              spot=bool(getattr(ranked, "spot", False)), money=self.money,
                              budget=0.0 if warn_only else self.settings.machine_budget_usd,
                              on_budget=self.settings.budget_action,
                              wait_ready=self.launcher.wait_ready,
                              terminate=lambda ledger_id: act(self.ledger, ledger_id,
                                                              "terminate", self.providers),
                              open_instances=self._show_machine, parent=self)
        _delete_on_close(dialog)
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
        names = [a.provider for a in self.ledger.accounts()
                 if a.provider in ("aws", "tencent", "aliyun")]
        if catalog is None:
            return  # not loaded yet; with no keys at all, AWS's public price list still answers

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
        from gpudesk.services.core.paths import cache_dir

        work = refresh_prices(catalog, names, self.settings.cny_per_usd,  # type: ignore[arg-type]
                              self.providers, price_list=True, cache=cache_dir())
        self.prices_runner.run(work, on_success=done,
                               title=self.tr("Prices were not refreshed"))

    def _launched(self, ledger_id: str) -> None:
        self.instances.reload()
        self.instances.select_machine(ledger_id)

    def _show_machine(self, ledger_id: str) -> None:
        """The Instances page with ``ledger_id`` selected (from the Launch dialog)."""
        self.show_page("instances")
        self._launched(ledger_id)

    def _raise(self) -> None:
        self.showNormal()
        self.raise_()
        self.activateWindow()
        self.show_page("instances")

    def _show_billing(self, count: int, per_hour: float) -> None:
        billing = [m for m in self.instances.model.machines if m.billing]
        self.tray.update(billing, self.instances.model.spent)
        report = self.instances.last_report
        if report is not None and not self._warned_at_start:
            self._warned_at_start = True
            if billing:  # the first check of this session found machines still billing
                self.tray.notify(self.tr("Machines are billing"), self.tr(
                    "{n} machine(s) from before are still billing. See Instances.").format(
                    n=len(billing)))
                if not self.tray.available() and not self._told_no_tray:
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

    # ----------------------------------------------------------------- pages built when opened

    def add_lazy_page(self, key: str, factory: Callable[[], QWidget],
                      title: Callable[[], str], placeholder: QWidget | None = None) -> None:
        """A page whose widget (and heavy imports) is made on its first visit, or when the
        window first needs it; until then a placeholder (empty by default) holds its place."""
        self._factories[key] = factory
        self.add_page(key, placeholder if placeholder is not None else QWidget(self), title)

    def page(self, key: str) -> QWidget:
        """The page widget for ``key``, built now if it was not yet."""
        if key in self._built:
            return self._built[key]
        if not self.started:  # a page needs the ledger and the rest: make them first
            self.finish_start()
            if key in self._built:
                return self._built[key]
        slots = [self.pages.widget(r) for r in range(self.pages.count())]
        row, placeholder = next((r, w) for r, w in enumerate(slots)
                                if w is not None and w.property("pageKey") == key)
        widget = self._factories[key]()
        self._built[key] = widget
        current = self.pages.currentIndex()
        widget.setProperty("pageKey", key)
        self.pages.insertWidget(row, widget)
        self.pages.removeWidget(placeholder)
        placeholder.deleteLater()
        self.pages.setCurrentIndex(current)
        return widget

    def _build_row(self, row: int) -> None:
        widget = self.pages.widget(row)
        key = widget.property("pageKey") if widget is not None else None
        if isinstance(key, str) and key in self._factories:
            self.page(key)

    @property
    def run(self) -> RunPage:
        return cast("RunPage", self.page("run"))

    @property
    def watch(self) -> WatchPage:
        return cast("WatchPage", self.page("watch"))

    @property
    def accounts(self) -> AccountsPage:
        return cast("AccountsPage", self.page("accounts"))

    def _first_boot(self, machine: Machine) -> tuple[str, str]:
        """The launcher's first-boot hook, imported when a launch needs it (paramiko)."""
        from gpudesk.services.remote.first_boot import for_launch

        return for_launch(lambda: self.settings, self.ledger)(machine)

    def _make_accounts(self) -> QWidget:
        from gpudesk.ui.machines.accounts_page import AccountsPage

        page = AccountsPage(self.ledger, parent=self)
        page.changed.connect(self.instances.refresh)
        page.changed.connect(self._reload_machines)  # an own machine, at once
        return page

    def _make_run(self) -> QWidget:
        from gpudesk.ui.run.run_page import RunPage

        page = RunPage(self.ledger, self)
        page.launcher = self.launcher
        return page

    def _make_watch(self) -> QWidget:
        from gpudesk.ui.watch.watch_page import WatchPage

        return WatchPage(self.ledger, lambda: self.settings, self)

    def _reload_machines(self) -> None:
        for key in ("run", "watch"):
            page = self._built.get(key)
            if page is not None:
                page.reload_machines()  # type: ignore[attr-defined]

    def add_page(self, key: str, widget: QWidget, title: Callable[[], str]) -> None:
        item = QListWidgetItem(title(), self.nav)
        item.setData(PAGE_KEY_ROLE, key)
        item.setSizeHint(QSize(0, 36))
        widget.setProperty("pageKey", key)
        self.pages.addWidget(widget)
        self._titles.append(title)
        row = len(self._titles) - 1
        action = QAction(title(), self)
        action.setObjectName(f"page_{key}")
        if row < 9:
            self._set_shortcut(action, QKeySequence(f"Ctrl+{row + 1}"))
        action.triggered.connect(lambda _checked=False, r=row: self.nav.setCurrentRow(r))
        self.addAction(action)  # the shortcut works even before the menus exist
        self.page_actions.append(action)
        if hasattr(self, "pages_menu"):
            self.pages_menu.addAction(action)

    def _load_catalog(self) -> None:
        if not _event_loop_running():  # no qasync loop (e.g. a bare QApplication): read it now
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
            self._set_shortcut(action, shortcut)
        return action

    def _set_shortcut(self, action: QAction, keys: QKeySequence) -> None:
        """Now once started; before, kept for ``finish_start``: the first ``setShortcut``
        builds Qt's namespace enums (~20 ms) and no key reaches the frame before then."""
        if self.started:
            action.setShortcut(keys)
        else:
            self._shortcuts.append((action, keys))

    def _build_menus(self) -> None:
        bar = self.menuBar()
        self.file_menu = bar.addMenu("")
        self.open_action = self._action(lambda: self.plan.open_plan_dialog(),
                                        QKeySequence(QKeySequence.StandardKey.Open))
        self.save_action = self._action(lambda: self.plan.save_plan_dialog(),
                                        QKeySequence(QKeySequence.StandardKey.Save))
        self.export_action = self._action(lambda: self.plan.export_csv_dialog(),
                                          QKeySequence("Ctrl+E"))
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
        _delete_on_close(dialog)
        dialog.saved.connect(self.apply_settings)
        dialog.open()
        return dialog

    def push_guards(self, budget_from_settings: bool = False) -> None:
        """Every running machine's guard follows a new budget, action or price: its cloud
        guard and its agent's rules (in the background; one push at a time, never lost)."""
        from gpudesk.services.remote.guard_push import PushReport, push_all

        if not any(m.provider != "own" and m.state == "running"
                   for m in self.ledger.machines(include_ended=False)):
            return
        if not _event_loop_running():
            return  # no qasync loop (a bare QApplication in a test)
        if self.guard_runner.busy:
            self._guards_again = bool(self._guards_again) or budget_from_settings
            return

        def done(report: PushReport) -> None:
            if report.failed:
                self.statusBar().showMessage(self.tr(
                    "The new budget rules did not reach {n} machine(s); they keep their "
                    "previous rules: {why}").format(n=len(report.failed),
                                                    why="; ".join(report.failed.values())),
                    30000)
            again, self._guards_again = self._guards_again, None
            if again is not None:
                self.push_guards(again)

        work = functools.partial(push_all, self.ledger, self.settings, providers=self.providers,
                                 budget_from_settings=budget_from_settings)
        self.guard_runner.run_blocking(work, on_success=done)

    def apply_settings(self, new: Settings) -> None:
        """Take the saved preferences: copy them into the shared settings, apply live ones."""
        language_changed = new.language != self.settings.language
        theme_changed = new.theme != self.settings.theme
        guard_changed = (new.machine_budget_usd, new.budget_action, new.idle_minutes,
                         new.idle_gpu_percent, new.idle_action) != (
            self.settings.machine_budget_usd, self.settings.budget_action,
            self.settings.idle_minutes, self.settings.idle_gpu_percent,
            self.settings.idle_action)
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
        if guard_changed:
            self.push_guards(budget_from_settings=True)

    def maybe_show_welcome(self) -> QDialog | None:
        """On first start, show the welcome; dismissing it (any way) is remembered."""
        if self.settings.welcomed:
            return None
        from gpudesk.ui.shell.welcome import WelcomeDialog

        dialog = WelcomeDialog(self.settings.language, self.set_language, self)
        _delete_on_close(dialog)
        dialog.finished.connect(lambda _r: self._welcome_dismissed(dialog.choice))
        self.welcome = dialog
        dialog.open()
        return dialog

    def _restore_page(self) -> None:
        """Open on the page shown when the window last closed; remember each page shown."""
        from gpudesk.services.core.window_state import load_state

        key = load_state().page
        if key in self._factories and key != "plan":
            self.show_page(key)
        self.nav.currentRowChanged.connect(self._remember_page)

    def _remember_page(self, row: int) -> None:
        from gpudesk.services.core.window_state import update_state

        item = self.nav.item(row)
        key = item.data(PAGE_KEY_ROLE) if item is not None else None
        if isinstance(key, str) and key:
            update_state(page=key)

    def _welcome_dismissed(self, choice: str = "") -> None:
        self.welcome = None
        if choice:
            self.show_page("accounts")
        if choice == "ssh":  # "Add my own SSH machine": its dialog, not just the page
            self.accounts.own.open_add_dialog()
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
        from gpudesk.calc.sizing import Setup
        from gpudesk.ui.plan.trace_dialog import TraceDialog  # only when asked: keeps start-up lean

        job, errors = self.plan.form.build_job()
        setup = job.setup if job is not None and not errors else Setup()
        dialog = TraceDialog(setup, self)
        _delete_on_close(dialog)
        dialog.open()
        return dialog

    def show_about(self) -> QDialog:
        from gpudesk.ui.shell.about_dialog import AboutDialog

        dialog = AboutDialog(self)
        _delete_on_close(dialog)
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
        if "plan" not in self._built:  # the frame, before the pages are made
            self.opening.setText(self.tr("Opening…"))
        self._show_catalog_age()


    def _show_catalog_age(self) -> None:
        catalog = self.plan.catalog if "plan" in self._built else None  # None: the frame
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

    def billing_machines(self) -> list[Machine]:
        """The cloud machines that may be billing now (the ledger's word)."""
        if not self.started:
            return []
        return [m for m in self.ledger.machines(include_ended=False)
                if m.billing and m.provider != "own"]

    def ask_quit(self, billing: list[Machine]) -> QDialog:
        """Quitting with machines billing: say what bills, its rate and its guard, and offer
        to stop them, terminate them, or keep them running."""
        from PySide6.QtCore import Qt
        from PySide6.QtWidgets import QAbstractButton, QMessageBox

        from gpudesk.services.cloud import accounts, guard
        from gpudesk.ui.widgets.task_runner import format_template
        from gpudesk.ui.widgets.tray import state_word

        if self.quit_box is not None:
            self.quit_box.raise_()
            return self.quit_box
        lines = []
        for m in billing:
            rule = " ".join(format_template(guard.CONTEXT, t, v) for t, v in guard.sentences(m))
            lines.append(self.tr("• {name}: {provider} {type}, {state}, {rate}/h. {guard}").format(
                name=m.name or m.id, provider=accounts.title(m.provider), type=m.instance_type,
                state=state_word(m.state), rate=self.money(m.price_per_hour, 3) if m.price_per_hour
                else self.tr("price not known"), guard=rule))
        box = QMessageBox(QMessageBox.Icon.Warning, self.tr("Machines are still billing"),
                          self.tr("Quitting gpudesk does not stop them; they bill until they "
                                  "are stopped or terminated:") + "\n\n" + "\n".join(lines),
                          QMessageBox.StandardButton.Cancel, self)
        box.setObjectName("quitQuestion")
        stop = box.addButton(self.tr("Stop and quit"), QMessageBox.ButtonRole.AcceptRole)
        stop.setObjectName("quitStop")
        end = box.addButton(self.tr("Terminate and quit"), QMessageBox.ButtonRole.DestructiveRole)
        end.setObjectName("quitTerminate")
        keep = box.addButton(self.tr("Keep them running and quit"),
                             QMessageBox.ButtonRole.AcceptRole)
        keep.setObjectName("quitKeep")
        box.setDefaultButton(QMessageBox.StandardButton.Cancel)  # stay: nothing changes
        box.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)

        def answered(button: QAbstractButton) -> None:
            self.quit_box = None
            if button is keep:
                self._may_quit = True
                self.close()
            elif button in (stop, end):
                self._act_then_quit("stop" if button is stop else "terminate",
                                    [m.id for m in billing])

        box.buttonClicked.connect(answered)
        box.setWindowModality(Qt.WindowModality.WindowModal)
        self.quit_box = box
        box.open()
        return box

    def _act_then_quit(self, action: str, ids: list[str]) -> None:
        """Stop or terminate each machine, then quit; a refusal keeps the window open."""
        from gpudesk.services.cloud.machines import act
        from gpudesk.ui.widgets.task_runner import TaskRunner

        async def each() -> None:
            for ledger_id in ids:
                m = self.ledger.get(ledger_id)
                if m is None or not m.billing or not m.cloud_id or (
                        action == "stop" and m.state != "running"):
                    continue  # ended meanwhile, not made yet, or nothing running to stop
                await act(self.ledger, ledger_id, action, self.providers)

        def done(_none: None) -> None:
            self._may_quit = True
            self.close()

        self.statusBar().showMessage((self.tr("Stopping {n} machine(s) before quitting…")
                                      if action == "stop" else
                                      self.tr("Terminating {n} machine(s) before quitting…")
                                      ).format(n=len(ids)))
        self.quit_runner = TaskRunner(self)
        self.quit_runner.finished.connect(lambda _ok: self.instances.reload())
        self.quit_runner.run(each(), on_success=done, title=(
            self.tr("Not every machine was stopped; gpudesk stays open") if action == "stop"
            else self.tr("Not every machine was terminated; gpudesk stays open")))

    def closeEvent(self, event: QCloseEvent) -> None:  # noqa: N802 - Qt API
        """Keep the last plan and the language; a failed write must not block quitting.
        With machines billing, ask first (stop, terminate, or keep them running)."""
        billing = self.billing_machines()
        if billing and not getattr(self, "_may_quit", False):
            event.ignore()
            self.ask_quit(billing)
            return
        try:
            save_settings(self.settings)
        except OSError as exc:
            log.warning("cannot save settings: %s", exc)
        if "run" in self._built:
            self.run.shutdown()  # stop following and close tunnels; the runs go on
        if "watch" in self._built:
            self.watch.shutdown()  # the agents go on enforcing the rules on the machines
        super().closeEvent(event)

