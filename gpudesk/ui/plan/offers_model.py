"""The ranked offers as a Qt table: a plain model and a filtering, sorting proxy.

The planner already ranks; the model only shows its ``RankedOffer`` list. The
proxy filters by provider, region and maximum price without re-ranking, and
sorts the way the planner does (offers that fit always first, then the chosen
key, then the planner's tie-breakers), so clicking a header never puts an
offer that cannot run above one that can.
"""

from __future__ import annotations

import functools
import math
from typing import Any

from PySide6.QtCore import QCoreApplication
from PySide6.QtCore import QSortFilterProxyModel
from PySide6.QtGui import QBrush
from PySide6.QtGui import QColor

from gpudesk.i18n_marks import QT_TRANSLATE_NOOP
from gpudesk.services.cloud.catalog import Offer
from gpudesk.services.cloud.catalog import provider_title
from gpudesk.services.plan.planner import RankedOffer
from gpudesk.services.plan.planner import format_bytes
from gpudesk.ui.widgets.models import Index
from gpudesk.ui.widgets.models import NamedColumnsModel
from gpudesk.ui.widgets.money import DISPLAY
from gpudesk.ui.widgets.qt_early import ALIGN_RIGHT_VCENTER
from gpudesk.ui.widgets.qt_early import DISPLAY_ROLE
from gpudesk.ui.widgets.qt_early import FOREGROUND_ROLE
from gpudesk.ui.widgets.qt_early import TEXT_ALIGNMENT_ROLE
from gpudesk.ui.widgets.qt_early import TOOLTIP_ROLE
from gpudesk.ui.widgets.qt_early import USER_ROLE

# Cost to finish sits right after $/h so it stays in view in a 1280-px window.
COLUMNS: tuple[str, ...] = ("provider", "instance", "region", "gpus", "market", "price",
                            "cost", "hours", "headroom", "why")
COL = {name: i for i, name in enumerate(COLUMNS)}
# Column -> planner sort key for the columns whose order means something.
SORT_KEYS = {"price": "price", "hours": "hours", "cost": "cost", "headroom": "headroom"}

RankedRole = USER_ROLE + 1  # Qt's roles by number: see qt_early
_ROLES = frozenset({DISPLAY_ROLE, TOOLTIP_ROLE, FOREGROUND_ROLE, TEXT_ALIGNMENT_ROLE, RankedRole})
_NUMERIC = frozenset({"price", "hours", "cost", "headroom"})


translate = QCoreApplication.translate  # the name lupdate looks for


def format_money(value: float) -> str:
    """USD from the catalog, shown in the currency chosen in Preferences."""
    return DISPLAY(value)


def format_hours(hours: float) -> str:
    if math.isinf(hours) or math.isnan(hours):
        return "—"
    number = f"{hours:,.1f}" if hours < 1000 else f"{hours:,.0f}"
    return translate("OffersModel", "{hours} h").format(hours=number)


def market_text(spot: bool) -> str:
    return translate("OffersModel", "spot") if spot else translate("OffersModel", "on-demand")


def reason_text(r: RankedOffer) -> str:
    return QCoreApplication.translate("Planner", r.reason).format(**r.reason_values)


def gpus_text(r: RankedOffer, memory: bool = True) -> str:
    o = r.offer
    text = f"{o.gpu_count} × {o.gpu.name}"
    return f"{text} ({format_bytes(o.gpu.usable_bytes)})" if memory else text


def sort_key(r: RankedOffer, key: str) -> tuple[Any, ...]:
    """The planner's order: fits first, then ``key``, then its tie-breakers."""
    primary = {"cost": r.expected_cost, "price": r.price_per_hour, "hours": r.hours,
               "headroom": -r.headroom_bytes}.get(key, r.expected_cost)
    return (not r.fits, primary, r.cost, r.price_per_hour, r.offer.instance_type)


# The column headers, marked for lupdate, translated when shown; the price's names the
# currency chosen in Preferences
HEADERS = {
    "provider": QT_TRANSLATE_NOOP("OffersModel", "Provider"),
    "instance": QT_TRANSLATE_NOOP("OffersModel", "Instance"),
    "region": QT_TRANSLATE_NOOP("OffersModel", "Region"),
    "gpus": QT_TRANSLATE_NOOP("OffersModel", "GPUs"),
    "market": QT_TRANSLATE_NOOP("OffersModel", "Market"),
    "price": QT_TRANSLATE_NOOP("OffersModel", "{symbol}/h"),
    "hours": QT_TRANSLATE_NOOP("OffersModel", "Est. hours"),
    "cost": QT_TRANSLATE_NOOP("OffersModel", "Cost to finish"),
    "headroom": QT_TRANSLATE_NOOP("OffersModel", "Headroom"),
    "why": QT_TRANSLATE_NOOP("OffersModel", "Why"),
}


def header_text(column: str) -> str:
    text = translate("OffersModel", HEADERS[column])
    return text.format(symbol=DISPLAY.symbol) if column == "price" else text


@functools.cache
def _grey() -> QBrush:
    """Made at the first grey row, not at import: a QBrush names 7 enums (2 ms at start)."""
    return QBrush(QColor("#9e9e9e"))



def price_kind_text(kind: str) -> str:
    """A short word for where a price comes from; its date is in the tooltip and the
    status bar, so the column keeps room for the cost to finish."""
    words = {"bundled": translate("OffersModel", "bundled"),
             "cached": translate("OffersModel", "cached"),
             "estimate": translate("OffersModel", "estimate"),
             "unpriced": translate("OffersModel", "no bundled price")}
    return words.get(kind, kind)


def price_status_text(o: Offer) -> str:
    """``Offer.price_status`` in words of the window's language: the kind and its date."""
    if o.price_kind == "live":
        return translate("OffersModel", "live")
    return f"{price_kind_text(o.price_kind)} {o.price_date.isoformat()}"


def no_price_text(r: RankedOffer) -> str:
    """Why an offer shows no price, and what gets one (the tooltip of its price cell)."""
    return translate("OffersModel", "No bundled price: {cloud} publishes no list price gpudesk "
                     "can cite. Tools → Refresh prices from my clouds asks your {cloud} account "
                     "for it; until then it has no cost to finish and ranks after the priced "
                     "offers by cost.").format(cloud=provider_title(r.offer.provider))


class OffersModel(NamedColumnsModel):
    """Read-only view of one ranking; ``set_ranked`` swaps it in one reset."""

    columns = COLUMNS

    def __init__(self, parent: Any = None) -> None:
        super().__init__(parent)
        self._ranked: list[RankedOffer] = []
        self._texts: list[tuple[str, ...]] = []  # display text per row, built once

    def _build_texts(self) -> None:
        # Painting asks data() for ~10 roles per visible cell; formatting once
        # per ranking instead of per call keeps a repaint near 1 ms.
        self._texts = [tuple(self._display(r, c) for c in COLUMNS) for r in self._ranked]

    @property
    def ranked(self) -> list[RankedOffer]:
        return self._ranked

    def set_ranked(self, ranked: list[RankedOffer]) -> None:
        self.beginResetModel()
        self._ranked = list(ranked)
        self._build_texts()
        self.endResetModel()

    def retranslate(self) -> None:
        """Texts depend on the language; tell views to re-read them."""
        self._build_texts()
        self.refresh_header()
        self.refresh_all()

    def row_total(self) -> int:
        return len(self._ranked)

    def header_text(self, column: str) -> str:
        return header_text(column)

    def data(self, index: Index, role: int = DISPLAY_ROLE) -> Any:
        if role not in _ROLES:
            return None
        row, column = index.row(), index.column()
        if role == DISPLAY_ROLE:
            return self._texts[row][column]
        r = self._ranked[row]
        if role == RankedRole:
            return r
        name = COLUMNS[column]
        if role == TOOLTIP_ROLE:
            if name == "price" and not r.priced:
                return f"{no_price_text(r)}\n\n{r.offer.price_source}"
            if name == "price":  # the kind's date and where the number comes from
                return f"{price_status_text(r.offer)}: {r.offer.price_source}"
            if name in ("gpus", "why"):
                return gpus_text(r) if name == "gpus" else reason_text(r)
            return self._texts[row][column]  # a cell its column cuts short is read whole here
        if role == FOREGROUND_ROLE:
            return None if r.fits else _grey()
        if name in _NUMERIC:  # TextAlignmentRole
            return ALIGN_RIGHT_VCENTER
        return None

    @staticmethod
    def _display(r: RankedOffer, column: str) -> str:
        o = r.offer
        if column == "provider":
            return provider_title(o.provider)
        if column == "instance":
            return o.instance_type
        if column == "region":
            return o.region
        if column == "gpus":
            return gpus_text(r, memory=False)  # the memory is in the summary and tooltip
        if column == "market":
            if r.spot and o.spot_price is None:  # ranked by on-demand, and said so
                return translate("OffersModel", "no spot price")
            return market_text(r.spot)
        if column == "price" and not r.priced:  # never "$0" nor a guess
            return translate("OffersModel", "no bundled price")
        if column == "price" and o.price_kind != "live":  # a price that is not live says so
            return translate("OffersModel", "{price} ({source})").format(
                price=format_money(r.price_per_hour), source=price_kind_text(o.price_kind))
        if column == "price":
            return format_money(r.price_per_hour)
        if column == "hours":
            return format_hours(r.hours)
        if column == "cost":  # a spot row's expected cost where its rate is known
            return format_money(r.expected_cost)
        if column == "headroom":
            if r.estimate is None:
                return "—"
            if r.headroom_bytes < 0:  # never a negative free amount: say what is missing
                return translate("OffersModel", "{bytes} short").format(
                    bytes=format_bytes(-r.headroom_bytes))
            return format_bytes(r.headroom_bytes)
        return reason_text(r)


class OffersProxy(QSortFilterProxyModel):
    """Filters (provider, region, max $/h) and planner-style sorting."""

    def __init__(self, parent: Any = None) -> None:
        super().__init__(parent)
        self._provider = ""
        self._region = ""
        self._max_price: float | None = None
        self._keys: dict[int, list[tuple[Any, ...]]] = {}  # column -> key per source row

    def setSourceModel(self, model: Any) -> None:  # noqa: N802 - Qt API
        super().setSourceModel(model)
        model.modelAboutToBeReset.connect(self._keys.clear)
        model.dataChanged.connect(lambda *_args: self._keys.clear())  # e.g. a new language

    def set_filters(self, provider: str = "", region: str = "",
                    max_price: float | None = None) -> None:
        if (provider, region, max_price) == (self._provider, self._region, self._max_price):
            return
        if hasattr(self, "beginFilterChange"):  # Qt >= 6.10; invalidateRowsFilter is deprecated
            self.beginFilterChange()
            self._provider, self._region, self._max_price = provider, region, max_price
            self.endFilterChange(QSortFilterProxyModel.Direction.Rows)
        else:
            self._provider, self._region, self._max_price = provider, region, max_price
            self.invalidateRowsFilter()

    def ranked_at(self, row: int) -> RankedOffer:
        return self.data(self.index(row, 0), RankedRole)  # type: ignore[no-any-return]

    def visible(self) -> list[RankedOffer]:
        return [self.ranked_at(i) for i in range(self.rowCount())]

    def filterAcceptsRow(self, source_row: int, source_parent: Index) -> bool:  # noqa: N802
        model = self.sourceModel()
        assert isinstance(model, OffersModel)
        r = model.ranked[source_row]
        if self._provider and r.offer.provider != self._provider:
            return False
        if self._region and r.offer.region != self._region:
            return False
        return self._max_price is None or r.price_per_hour <= self._max_price

    def _column_keys(self, column: int) -> list[tuple[Any, ...]]:
        keys = self._keys.get(column)
        if keys is None:
            model = self.sourceModel()
            assert isinstance(model, OffersModel)
            name = COLUMNS[column]
            key = SORT_KEYS.get(name)
            if key is None:  # text columns: alphabetical, offers that fit first
                keys = [(not r.fits, model._display(r, name)) for r in model.ranked]
            else:
                keys = [sort_key(r, key) for r in model.ranked]
            self._keys[column] = keys
        return keys

    def lessThan(self, left: Index, right: Index) -> bool:  # noqa: N802
        keys = self._column_keys(left.column())
        return keys[left.row()] < keys[right.row()]
