"""The main window: a navigation list of pages, the menus, and the catalog's age.

Pages register with ``add_page(key, widget, title)`` where ``title`` is a
function returning the translated name, so later pages (Train, Watch) plug in
without touching the menus or the language switch.

The window owns the one ledger connection and hands it to the pages; at start
it reconciles with the clouds (when keys exist), so a machine left running by
a crash is on screen and in the status bar at once.

Its parts live beside it, each mixed in: ``navigation`` (pages, made on first visit),
``menus`` (menus, shortcuts, language, theme), ``background`` (prices, the start-up
check, guard pushes) and ``quit_question`` (the billing line and quitting with machines
billing). This file builds the window, starts it and opens its dialogs.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable
from typing import TYPE_CHECKING

from PySide6.QtCore import QSize
from PySide6.QtCore import QTimer
from PySide6.QtGui import QAction
from PySide6.QtGui import QCloseEvent
from PySide6.QtWidgets import QDialog
from PySide6.QtWidgets import QHBoxLayout
from PySide6.QtWidgets import QLabel
from PySide6.QtWidgets import QListWidget
from PySide6.QtWidgets import QMainWindow
from PySide6.QtWidgets import QStackedWidget
from PySide6.QtWidgets import QVBoxLayout
from PySide6.QtWidgets import QWidget

from gpudesk.services.core.settings import Settings
from gpudesk.services.core.settings import save_settings
from gpudesk.ui.shell.background import SPOT_PRICES_EVERY_MS
from gpudesk.ui.shell.background import BackgroundWork
from gpudesk.ui.shell.menus import LANGUAGE_NAMES
from gpudesk.ui.shell.menus import WindowMenus
from gpudesk.ui.shell.menus import key_sequence
from gpudesk.ui.shell.navigation import PAGE_KEY_ROLE
from gpudesk.ui.shell.navigation import PageNavigation
from gpudesk.ui.shell.quit_question import QuitQuestion
from gpudesk.ui.widgets.retranslate import Retranslating

if TYPE_CHECKING:  # imported after the first paint (fast start), or when a page is first opened
    from PySide6.QtWidgets import QMessageBox

    from gpudesk.services.cloud.accounts import ProviderFactory
    from gpudesk.services.cloud.catalog import Catalog
    from gpudesk.services.cloud.launcher import Launcher
    from gpudesk.services.cloud.providers.base import Provider
    from gpudesk.services.cloud.providers.base import ProviderName
    from gpudesk.services.money.ledger import Ledger
    from gpudesk.services.money.ledger import Machine
    from gpudesk.services.plan.budget_chance import SpotJobInputs
    from gpudesk.ui.watch.budget_alerts import BudgetAlerts
    from gpudesk.ui.watch.budget_alerts import BudgetBanner
    from gpudesk.ui.widgets.money import Money
    from gpudesk.ui.widgets.task_runner import TaskRunner
    from gpudesk.ui.widgets.tray import BillingTray

log = logging.getLogger(__name__)

__all__ = ["LANGUAGE_NAMES", "PAGE_KEY_ROLE", "SPOT_PRICES_EVERY_MS", "MainWindow"]


def _provider_from_keyring(name: ProviderName) -> Provider:
    """The keyring's provider; its module (keyring, the clouds' errors) is imported at the
    first call, not before the first screen."""
    from gpudesk.services.cloud.accounts import provider_from_keyring

    return provider_from_keyring(name)


def _delete_on_close(dialog: QWidget) -> None:
    from PySide6.QtCore import Qt  # here, not at the top: see PAGE_KEY_ROLE

    dialog.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)


class MainWindow(Retranslating, WindowMenus, PageNavigation, BackgroundWork, QuitQuestion,
                 QMainWindow):
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
        self.started = False  # finish_start: the first screen is made
        self.background_started = False  # start_background: what works behind it runs
        self._launcher: Launcher | None = None  # made at the first launch or Run page
        self._catalog_given = catalog
        self._ledger = ledger  # the given one, else opened when first asked for
        self._providers_given = providers
        self._titles: list[Callable[[], str]] = []
        self.page_actions: list[QAction] = []
        self._shortcuts: list[tuple[QAction, str]] = []  # set in start_background
        self.welcome: QDialog | None = None
        self.quit_box: QDialog | None = None  # "machines are still billing" on quitting
        self.quit_failed_box: QDialog | None = None  # the machines that quitting did not end
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
        self.add_lazy_page("data", self._make_data, lambda: self.tr("Data"))
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

    @property
    def ledger(self) -> Ledger:
        """The window's one ledger connection, opened when first asked for (Instances, a
        launch, the other pages): the Plan page does not need it, and opening takes up to
        15 ms of disk work at start-up."""
        if self._ledger is None:
            from gpudesk.services.money.ledger import Ledger

            self._ledger = Ledger()
        return self._ledger

    @property
    def launcher(self) -> Launcher:
        """The one launcher of this window, made when first asked for (a launch, the Run
        page): its modules (the guard, keep-alive groups, price lists) are not needed to
        show the Plan and Instances pages, so they are not imported before the window is
        ready."""
        if self._launcher is None:
            # every launch carries the guard and a pinned host key from its first boot, and
            # a run that recovers by itself its group's role, made and ended with the group
            from gpudesk.services.cloud.launcher import Launcher
            from gpudesk.services.runs.keep_alive_run import Hooks
            from gpudesk.services.storage.store_check import check_launch_store

            self._launcher = Launcher(self.ledger, self.providers,
                                      first_boot=self._first_boot,
                                      keep_alive=Hooks(self.ledger),
                                      store_check=check_launch_store)
        return self._launcher

    def finish_start(self, *, background_later: bool = False) -> None:
        """Make what the first screen needs: the ledger, the money display and the Plan
        page. The rest (the Instances page, the tray, budget alerts, prices, the check
        with the clouds) is started by ``start_background``: at once, or, with
        ``background_later`` (the app), by the caller once the window is ready, so the
        first screen is not kept waiting for what it does not show. Pages not yet opened
        are made on their first visit."""
        if self.started:
            return
        from gpudesk.ui.widgets.money import DISPLAY

        self.started = True
        settings = self.settings
        providers = self._providers_given
        self.providers: ProviderFactory = (providers if providers is not None
                                           else _provider_from_keyring)
        self.money: Money = DISPLAY
        self.money.set(settings.currency, settings.cny_per_usd)
        self.nav.currentRowChanged.connect(self._build_row)
        self.page("plan")
        if not background_later:
            self.start_background()

    def start_background(self) -> None:
        """Start what works behind the first screen: budget alerts and the tray (owed
        stops end the bill even after a shutdown inside), prices, the Instances page and
        the check with the clouds, and the page shown when the window last closed."""
        if self.background_started:
            return
        if not self.started:
            self.finish_start(background_later=True)
        self.background_started = True
        # Key shortcuts after the first screen: the first one makes Python enums of all of
        # Qt's namespace (93 of them, 13 ms), which the Plan page is made without.
        for action, keys in self._shortcuts:
            action.setShortcut(key_sequence(keys))
        self._shortcuts.clear()
        from gpudesk.services.core.window_state import load_state
        from gpudesk.ui.watch.budget_alerts import BudgetAlerts
        from gpudesk.ui.watch.budget_alerts import BudgetBanner
        from gpudesk.ui.widgets.task_runner import TaskRunner
        from gpudesk.ui.widgets.tray import BillingTray

        self.budget_banner: BudgetBanner = BudgetBanner(self.centralWidget())
        self._right.insertWidget(0, self.budget_banner)
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
            providers=self.providers)  # owed stops end the bill even after a shutdown inside
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

    # ----------------------------------------------------------------- launching

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
        from gpudesk.services.cloud.machines import act

        # Preferences' default budget, whatever its action: "warn" watches budgets without
        # acting, but a launch is never without a cap unless "No budget" is ticked there
        dialog = LaunchDialog(offer, catalog, self.launcher.launch,
                              spot=bool(getattr(ranked, "spot", False)), money=self.money,
                              budget=self.settings.machine_budget_usd,
                              budget_hours=self.settings.machine_budget_hours,
                              on_budget=self.settings.budget_action,
                              wait_ready=self.launcher.wait_ready,
                              terminate=lambda ledger_id: act(self.ledger, ledger_id,
                                                              "terminate", self.providers),
                              open_instances=self._show_machine,
                              job=self._spot_job(ranked),
                              disk_need=self.plan.disk_needed.for_launch(), parent=self)
        _delete_on_close(dialog)
        dialog.launched.connect(self._launched)
        dialog.ended.connect(self.instances.reload)
        dialog.ledger_changed.connect(lambda _id: self.instances.reload())
        dialog.destroyed.connect(lambda _o=None: setattr(self, "launch_dialog", None))
        self.launch_dialog = dialog
        dialog.open()
        self.instances.reload()
        return dialog

    def _spot_job(self, ranked: object) -> SpotJobInputs | None:
        """The Plan page's job on this offer for the Launch dialog's spot chance (issue
        33): its compute hours, the cloud's rate and the checkpoint figures; None when the
        offer has no finite hours."""
        import math

        from gpudesk.services.cloud.spot_rates import rate_for
        from gpudesk.services.plan.budget_chance import SpotJobInputs

        offer = getattr(ranked, "offer", None)
        hours = getattr(ranked, "hours", math.inf)
        if offer is None or not math.isfinite(hours) or hours <= 0:
            return None
        risk = getattr(ranked, "risk", None)
        if risk is not None:
            return SpotJobInputs(hours, risk.rate, risk.assumptions)
        return SpotJobInputs(hours, rate_for(offer.provider, offer.region, offer.instance_type,
                                             self.plan.spot_rates))

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

    def _first_boot(self, machine: Machine) -> tuple[str, str]:
        """The launcher's first-boot hook, imported when a launch needs it (paramiko)."""
        from gpudesk.services.remote.first_boot import for_launch

        return for_launch(lambda: self.settings, self.ledger)(machine)

    # ----------------------------------------------------------------- dialogs and preferences

    def show_preferences(self) -> QDialog:
        from gpudesk.ui.shell.settings_dialog import SettingsDialog

        dialog = SettingsDialog(self.settings, self)
        _delete_on_close(dialog)
        dialog.saved.connect(self.apply_settings)
        dialog.open()
        return dialog

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
        self.plan.show_currency()  # "Max ¥/h" next to a ¥ column (issue 31)
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

    def open_log_folder(self) -> QMessageBox:
        from gpudesk.ui.shell.crash_dialog import open_log_folder

        return open_log_folder(self)

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

