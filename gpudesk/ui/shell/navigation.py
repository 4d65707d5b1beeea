"""The main window's pages: the navigation list, pages made on their first visit, and
the page shown when the window last closed.

Mixed into ``MainWindow`` (before ``QMainWindow``); ``add_page``, ``page`` and
``show_page`` are its public face, and each page is also a property (``w.plan``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING
from typing import cast

from PySide6.QtCore import QSize
from PySide6.QtGui import QAction
from PySide6.QtWidgets import QListWidget
from PySide6.QtWidgets import QListWidgetItem
from PySide6.QtWidgets import QMenu
from PySide6.QtWidgets import QStackedWidget
from PySide6.QtWidgets import QWidget

from gpudesk.ui.shell.window_parts import WindowParts

if TYPE_CHECKING:  # the pages are imported when first opened (fast start)
    from PySide6.QtWidgets import QDialog

    from gpudesk.services.cloud.catalog import Catalog
    from gpudesk.services.cloud.launcher import Launcher
    from gpudesk.ui.data.data_page import DataPage
    from gpudesk.ui.machines.accounts_page import AccountsPage
    from gpudesk.ui.machines.instances_page import InstancesPage
    from gpudesk.ui.plan.plan_page import PlanPage
    from gpudesk.ui.run.run_page import RunPage
    from gpudesk.ui.watch.watch_page import WatchPage


# Qt.ItemDataRole.UserRole. Before the first paint the frame names no member of Qt's
# namespace: the first use builds all its ~130 Python enums (15-25 ms of start-up).
PAGE_KEY_ROLE = 256


class PageNavigation(WindowParts):
    """Pages on the left, one made on its first visit; mix in before ``QMainWindow``."""

    nav: QListWidget
    pages: QStackedWidget
    pages_menu: QMenu
    page_actions: list[QAction]
    _catalog_given: Catalog | None
    _titles: list[Callable[[], str]]
    _built: dict[str, QWidget]
    _factories: dict[str, Callable[[], QWidget]]

    if TYPE_CHECKING:  # the window's own, and its other parts'
        @property
        def launcher(self) -> Launcher: ...

        def finish_start(self) -> None: ...
        def _set_shortcut(self, action: QAction, keys: str) -> None: ...
        def show_launch_dialog(self, ranked: object) -> QDialog | None: ...
        def _show_catalog_age(self) -> None: ...
        def _show_billing(self, count: int, per_hour: float) -> None: ...
        def _tell(self, heading: str, text: str) -> None: ...

    def add_page(self, key: str, widget: QWidget, title: Callable[[], str]) -> None:
        item = QListWidgetItem(self.nav)  # QListWidgetItem(text, …) is told from the icon
        item.setText(title())  # overload by building QIcon's enums (2 ms before the paint)
        item.setData(PAGE_KEY_ROLE, key)
        item.setSizeHint(QSize(0, 36))
        widget.setProperty("pageKey", key)
        self.pages.addWidget(widget)
        self._titles.append(title)
        row = len(self._titles) - 1
        action = QAction(self)  # as the item above: no QIcon overload check
        action.setText(title())
        action.setObjectName(f"page_{key}")
        if row < 9:
            self._set_shortcut(action, f"Ctrl+{row + 1}")
        action.triggered.connect(lambda _checked=False, r=row: self.nav.setCurrentRow(r))
        self.addAction(action)  # the shortcut works even before the menus exist
        self.page_actions.append(action)
        if hasattr(self, "pages_menu"):
            self.pages_menu.addAction(action)

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

    def show_page(self, key: str) -> None:
        for row in range(self.pages.count()):
            page = self.pages.widget(row)
            if page is not None and page.property("pageKey") == key:
                self.nav.setCurrentRow(row)

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

    @property
    def plan(self) -> PlanPage:
        return cast("PlanPage", self.page("plan"))

    @property
    def instances(self) -> InstancesPage:
        return cast("InstancesPage", self.page("instances"))

    @property
    def run(self) -> RunPage:
        return cast("RunPage", self.page("run"))

    @property
    def watch(self) -> WatchPage:
        return cast("WatchPage", self.page("watch"))

    @property
    def accounts(self) -> AccountsPage:
        return cast("AccountsPage", self.page("accounts"))

    @property
    def data(self) -> DataPage:
        return cast("DataPage", self.page("data"))

    # Each page is made inside the stack that shows it: made elsewhere and moved there,
    # its whole tree was polished again (18 ms of the Plan page's 55 at start-up).

    def _make_plan(self) -> QWidget:
        from gpudesk.ui.plan.plan_page import PlanPage

        page = PlanPage(self.settings, self._catalog_given, self.pages)
        page.launch_requested.connect(self.show_launch_dialog)
        page.catalog_changed.connect(lambda _c: self._show_catalog_age())
        return page

    def _make_instances(self) -> QWidget:
        from gpudesk.ui.machines.instances_page import InstancesPage

        page = InstancesPage(self.ledger, self.providers, self.money, self.pages)
        page.monthly_budget = lambda: self.settings.monthly_budget_usd  # on the billing line
        page.billing_changed.connect(self._show_billing)
        page.billing_changed.connect(lambda *_: self._reload_machines())
        page.news.connect(self._tell)
        return page

    def _make_accounts(self) -> QWidget:
        from gpudesk.ui.machines.accounts_page import AccountsPage

        page = AccountsPage(self.ledger, parent=self.pages)
        page.changed.connect(self.instances.refresh)
        page.changed.connect(self._reload_machines)  # an own machine, at once
        return page

    def _make_run(self) -> QWidget:
        from gpudesk.ui.run.run_page import RunPage

        page = RunPage(self.ledger, self.pages)
        page.launcher = self.launcher
        return page

    def _make_watch(self) -> QWidget:
        from gpudesk.ui.watch.watch_page import WatchPage

        return WatchPage(self.ledger, lambda: self.settings, self.pages)

    def _make_data(self) -> QWidget:
        from gpudesk.ui.data.data_page import DataPage

        return DataPage(self.ledger, self.pages)

    def _reload_machines(self) -> None:
        for key in ("run", "watch"):
            page = self._built.get(key)
            if page is not None:
                page.reload_machines()  # type: ignore[attr-defined]
