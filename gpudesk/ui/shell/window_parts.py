"""What the main window's parts (navigation, menus, background work, the quit question)
share, declared once for the type checker: at run time it is a plain ``object`` base,
so the parts stay mixins in front of ``QMainWindow``."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from PySide6.QtWidgets import QMainWindow

    from gpudesk.services.cloud.accounts import ProviderFactory
    from gpudesk.services.core.settings import Settings
    from gpudesk.services.money.ledger import Ledger
    from gpudesk.ui.widgets.money import Money

    _Base = QMainWindow
else:
    _Base = object


class WindowParts(_Base):
    """The window's state that each of its parts reads."""

    settings: Settings
    started: bool  # the first screen is made (``MainWindow.finish_start``)
    background_started: bool  # what works behind it runs (``MainWindow.start_background``)
    providers: ProviderFactory
    money: Money

    if TYPE_CHECKING:
        @property
        def ledger(self) -> Ledger:
            """The window's one ledger connection, opened when first asked for."""
