"""The Plan page: what the model needs per GPU, which offers fit, what finishing costs.

Every edit recomputes synchronously (estimate + ranking of ~80 offers + the
researcher's three questions take a few milliseconds; see
``benchmarks/bench_calculator.py``). Bad input marks its field and shows the
translated message under the form, while the last good result stays on screen,
dimmed, so nothing jumps around while typing.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

from PySide6.QtCore import QCoreApplication
from PySide6.QtCore import QItemSelectionModel
from PySide6.QtCore import Signal
from PySide6.QtWidgets import QAbstractItemView
from PySide6.QtWidgets import QCheckBox
from PySide6.QtWidgets import QComboBox
from PySide6.QtWidgets import QFileDialog
from PySide6.QtWidgets import QFormLayout
from PySide6.QtWidgets import QGroupBox
from PySide6.QtWidgets import QHBoxLayout
from PySide6.QtWidgets import QHeaderView
from PySide6.QtWidgets import QLabel
from PySide6.QtWidgets import QLineEdit
from PySide6.QtWidgets import QProgressBar
from PySide6.QtWidgets import QPushButton
from PySide6.QtWidgets import QScrollArea
from PySide6.QtWidgets import QSplitter
from PySide6.QtWidgets import QTableView
from PySide6.QtWidgets import QVBoxLayout
from PySide6.QtWidgets import QWidget

from gpudesk.calc import hf_config
from gpudesk.calc import sizing
from gpudesk.i18n_marks import QT_TRANSLATE_NOOP
from gpudesk.services.cloud.catalog import Catalog
from gpudesk.services.cloud.catalog import provider_title
from gpudesk.services.cloud.price_cache import load_catalog_with_cache
from gpudesk.services.core.settings import Settings
from gpudesk.services.plan import planner
from gpudesk.services.plan.planner import Job
from gpudesk.services.plan.planner import RankedOffer
from gpudesk.services.plan.planner import format_bytes
from gpudesk.ui.plan.disk_needed import DiskNeeded
from gpudesk.ui.plan.memory_bar import MemoryBar
from gpudesk.ui.plan.offers_model import COL
from gpudesk.ui.plan.offers_model import OffersModel
from gpudesk.ui.plan.offers_model import OffersProxy
from gpudesk.ui.plan.offers_model import format_hours
from gpudesk.ui.plan.offers_model import format_money
from gpudesk.ui.plan.offers_model import gpus_text
from gpudesk.ui.plan.offers_model import market_text
from gpudesk.ui.plan.offers_model import reason_text
from gpudesk.ui.plan.plan_form import PlanForm
from gpudesk.ui.plan.plan_form import combo_key
from gpudesk.ui.plan.plan_form import paint_error
from gpudesk.ui.plan.plan_form import parse_amount
from gpudesk.ui.plan.plan_form import set_invalid
from gpudesk.ui.plan.spot_panel import SpotPanel
from gpudesk.ui.widgets.answers import answers_for
from gpudesk.ui.widgets.money import DISPLAY
from gpudesk.ui.widgets.qt_early import set_keys
from gpudesk.ui.widgets.retranslate import Retranslating
from gpudesk.ui.widgets.task_runner import TaskRunner

ERR_NOTHING = QT_TRANSLATE_NOOP(
    "SizingError", "fix the inputs marked in red first")
SORTS = ("cost", "price", "headroom", "hours")
NOTHING_FITS_STYLE = "QLabel { color: #b71c1c; border: 1px solid #d32f2f; padding: 4px; }"


def _key(r: RankedOffer) -> tuple[str, str, str]:
    return (r.offer.provider, r.offer.instance_type, r.offer.region)


FIT_ROWS = 40  # rows measured when sizing the offers table's columns

class PlanPage(Retranslating, QWidget):
    """Inputs on the left; memory bar, answers, summary and the offers table on the right."""

    recomputed = Signal()  # after every successful update of the bar and the table
    catalog_changed = Signal(object)  # the Catalog now in use
    launch_requested = Signal(object)  # the RankedOffer the user wants to rent

    def __init__(self, settings: Settings, catalog: Catalog | None = None,
                 parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("planPage")
        self.settings = settings
        self.catalog = catalog
        self.job: Job | None = None
        self.estimate: sizing.Estimate | None = None
        self.shown_estimate: sizing.Estimate | None = None  # the bar's: the chosen offer's
        self.errors: list[sizing.SizingError] = []
        self._selected_key: tuple[str, str, str] | None = None
        self._restoring = False
        self._selecting = False
        self._fitted = False

        self.form = PlanForm(mfu=settings.mfu, parent=self)
        self.form_errors = QLabel(self)
        self.form_errors.setObjectName("formErrors")
        paint_error(self.form_errors)
        self.form_errors.setWordWrap(True)
        left = QWidget(self)
        lv = QVBoxLayout(left)
        lv.addWidget(self.form)
        lv.addWidget(self.form_errors)
        self.disk_needed = DiskNeeded(left)  # the job's disk, to the Launch dialog (issue 32)
        lv.addWidget(self.disk_needed)
        lv.addStretch(1)
        scroll = QScrollArea(self)
        scroll.setWidget(left)
        scroll.setWidgetResizable(True)
        scroll.setMinimumWidth(330)
        set_keys(scroll, horizontalScrollBarPolicy="ScrollBarAlwaysOff")  # see qt_early

        self.memory_box = QGroupBox(self)
        # nothing fits: said first, with what would (issue 31 item 20); an impossible size too
        self.nothing_fits = QLabel(self.memory_box)
        self.nothing_fits.setObjectName("nothingFits")
        self.nothing_fits.setStyleSheet(NOTHING_FITS_STYLE)  # its own: one widget polished
        self.nothing_fits.setWordWrap(True)
        set_keys(self.nothing_fits, textFormat="PlainText",
                 textInteractionFlags="TextSelectableByMouse")
        self.nothing_fits.setVisible(False)
        self._would_fit: tuple[Any, planner.WhatWouldFit | None] | None = None
        self.bar = MemoryBar(self.memory_box)
        self.answers = QLabel(self.memory_box)
        self.answers.setObjectName("answers")
        self.answers.setWordWrap(True)
        set_keys(self.answers, textFormat="PlainText")
        self.notes = QLabel(self.memory_box)
        self.notes.setWordWrap(True)
        self.notes.setStyleSheet("color: palette(placeholder-text);")
        mv = QVBoxLayout(self.memory_box)
        mv.addWidget(self.nothing_fits)
        mv.addWidget(self.bar)
        mv.addWidget(self.answers)
        mv.addWidget(self.notes)
        mv.addStretch(1)

        self.summary_box = QGroupBox(self)
        self.summary_box.setMinimumWidth(260)
        sf = QFormLayout(self.summary_box)
        self.summary_labels: dict[str, QLabel] = {}
        self.summary_values: dict[str, QLabel] = {}
        for name in ("machine", "gpus", "market", "memory", "hours", "cost"):
            label, value = QLabel(self.summary_box), QLabel(self.summary_box)
            value.setObjectName(f"summary_{name}")
            value.setWordWrap(True)
            set_keys(value, textInteractionFlags="TextSelectableByMouse")
            self.summary_labels[name], self.summary_values[name] = label, value
            sf.addRow(label, value)
        self.launch_button = QPushButton(self.summary_box)
        self.launch_button.setObjectName("launchOffer")
        self.launch_button.setEnabled(False)
        self.launch_button.clicked.connect(self._request_launch)
        sf.addRow(self.launch_button)

        top = QWidget(self)
        th = QHBoxLayout(top)
        th.setContentsMargins(0, 0, 0, 0)
        th.addWidget(self.memory_box, 5)
        th.addWidget(self.summary_box, 3)

        self.offers_box = QGroupBox(self)
        self.provider = QComboBox(self.offers_box)
        self.region = QComboBox(self.offers_box)
        self.spot = QCheckBox(self.offers_box)
        self.max_price = QLineEdit(self.offers_box)
        self.max_price.setMaximumWidth(80)
        self.max_price.setObjectName("offersMaxPrice")
        self.provider.setObjectName("offersProvider")
        self.max_price_error = QLabel(self.offers_box)  # a red field says why, next to it
        self.max_price_error.setObjectName("maxPriceError")
        self.max_price_error.setProperty("fieldError", "true")
        paint_error(self.max_price_error)
        self.max_price_error.setVisible(False)
        self.sort = QComboBox(self.offers_box)
        for key in SORTS:
            self.sort.addItem(key, key)
        self.filter_labels = [QLabel(self.offers_box) for _ in range(3)]
        self.progress = QProgressBar(self.offers_box)
        self.progress.setMaximumWidth(120)
        fh = QHBoxLayout()
        for widget in (self.provider, self.region, self.spot, self.filter_labels[0],
                       self.max_price, self.max_price_error, self.filter_labels[1], self.sort,
                       self.progress):
            fh.addWidget(widget)
        fh.addStretch(1)
        self.model = OffersModel(self)
        self.proxy = OffersProxy(self)
        self.proxy.setSourceModel(self.model)
        self.table = QTableView(self.offers_box)
        self.table.setObjectName("offersTable")
        # Given its model, shown and sorted with the first catalog (_show_offers): the
        # model's header is read at once, which names Qt's enums (see qt_early), and
        # there is nothing to list before.
        self.table.setVisible(False)
        self.table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.table.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.table.verticalHeader().setVisible(False)
        self.table.setWordWrap(False)
        header = self.table.horizontalHeader()
        # Interactive, not ResizeToContents: that re-measures every cell on each
        # edit (tens of ms); widths are fitted once per catalog and language.
        header.setSectionResizeMode(QHeaderView.ResizeMode.Interactive)
        header.setStretchLastSection(True)
        ov = QVBoxLayout(self.offers_box)
        ov.addLayout(fh)
        ov.addWidget(self.table)
        self._table_room = QWidget(self.offers_box)  # the table's room until it is shown:
        ov.addWidget(self._table_room, 1)  # the filters stay at the top

        # spot offers: the selected one's interruption risk and price history (issue 33)
        self.spot_rates: dict[Any, Any] = {}  # spot_rates.load_rates(), read off the GUI thread
        self.spot_panel = SpotPanel(self)
        self.spot_panel.setVisible(False)
        self.spot_panel.history_requested.connect(self._load_history)
        self.spot_panel.run_chosen.connect(self._use_run_times)
        self.spot_assumptions: Any = None  # a chosen run's checkpoint and restart times
        right = QSplitter()  # given a parent by the layout: QSplitter(self) is told from
        # QSplitter(orientation) by naming Qt's enums (see qt_early)
        set_keys(right, orientation="Vertical")
        right.addWidget(top)
        right.addWidget(self.spot_panel)
        right.addWidget(self.offers_box)
        right.setStretchFactor(2, 1)
        layout = QHBoxLayout(self)
        layout.addWidget(scroll)
        layout.addWidget(right, 1)

        self.runner = TaskRunner(self, progress=self.progress)
        self.form.changed.connect(self.recompute)
        self.recomputed.connect(lambda: self.disk_needed.set_job(self.job))
        self.form.config_requested.connect(self.load_config_dialog)
        self.form.hub_requested.connect(self.fetch_hub_config)
        self.spot.toggled.connect(self.recompute)
        self.spot.toggled.connect(self._list_runs)
        self.provider.currentIndexChanged.connect(self._provider_changed)
        self.region.currentIndexChanged.connect(self._apply_filters)
        self.max_price.textChanged.connect(self._apply_filters)
        self.sort.currentIndexChanged.connect(self._sort_changed)
        self.retranslate()
        if settings.last_plan:
            self.restore_inputs(settings.last_plan)
        if catalog is not None:
            self.set_catalog(catalog)
        else:
            self.recompute()

    # ----------------------------------------------------------------- language

    def retranslate(self) -> None:
        self.memory_box.setTitle(self.tr("Memory per GPU"))
        self.summary_box.setTitle(self.tr("Selected offer"))
        self.offers_box.setTitle(self.tr("Offers, cheapest to finish first"))
        names = {"machine": self.tr("Machine"), "gpus": self.tr("GPUs"),
                 "market": self.tr("Price"), "memory": self.tr("Memory"),
                 "hours": self.tr("Est. time"), "cost": self.tr("Cost to finish")}
        for name, text in names.items():
            self.summary_labels[name].setText(text)
        self.launch_button.setText(self.tr("Launch this machine…"))
        self.spot.setText(self.tr("Spot"))
        self.show_currency()
        self.filter_labels[1].setText(self.tr("Sort by"))
        self.max_price.setPlaceholderText(self.tr("any"))
        self.max_price_error.setText(self.tr("enter a price such as 2.5, or leave it empty"))
        for i, text in enumerate((self.tr("cost to finish"), self.tr("price per hour"),
                                  self.tr("headroom"), self.tr("hours"))):
            self.sort.setItemText(i, text)
        self._fill_filters()
        self.model.retranslate()
        self._show_results()
        if self.model.ranked:
            self.fit_columns()


    # ----------------------------------------------------------------- catalog

    def load_catalog_async(self) -> None:
        """Read the bundled catalog in a thread; the page works (empty) meanwhile.

        Prices an earlier refresh kept show as "cached <date>" (services.cloud.price_cache).
        """
        from gpudesk.services.cloud.spot_rates import load_rates  # noqa: PLC0415

        def load() -> tuple[Catalog, dict[Any, Any]]:  # with the spot rates kept beside it
            return load_catalog_with_cache(), load_rates()

        def loaded(found: tuple[Catalog, dict[Any, Any]]) -> None:
            self.spot_rates = found[1]
            self.set_catalog(found[0])
        self.runner.run_blocking(load, on_success=loaded,
                                 title=self.tr("Cannot load the offer catalog"))

    def _list_runs(self, spot: bool) -> None:
        """The runs the spot panel can take times from (the run records here)."""
        if not spot:
            return
        from gpudesk.services.runs.detached import RunRecord  # noqa: PLC0415

        folder = RunRecord.folder()
        found = sorted(folder.glob("*.json"), key=lambda p: p.stat().st_mtime,
                       reverse=True) if folder.is_dir() else []
        self.spot_panel.set_runs([p.stem for p in found])

    def _use_run_times(self, run_id: str) -> None:
        """A run's own checkpoint and restart times (its bucket: off the GUI thread), or
        gpudesk's defaults for ""; the offers are ranked again with them."""
        if not run_id:
            self.spot_assumptions = None
            self.recompute()
            return
        from gpudesk.services.plan import run_history  # noqa: PLC0415
        from gpudesk.services.runs.detached import RunRecord  # noqa: PLC0415

        def measured(figures: run_history.RunFigures) -> None:
            self.spot_assumptions = figures.assumptions(run_history.given({}))
            self.recompute()

        self.runner.run_blocking(lambda: run_history.of_run(RunRecord.load(run_id)),
                                 on_success=measured,
                                 title=self.tr("Cannot read the run's history"))

    def _load_history(self, r: RankedOffer) -> None:
        """The offer's spot price history, with its cloud's account, in a worker thread."""
        import time  # noqa: PLC0415

        from gpudesk.services.cloud.spot_history import history_from_account  # noqa: PLC0415

        o = r.offer
        self.runner.run_blocking(
            lambda: history_from_account(o.provider, o.region, o.instance_type,
                                         now=time.time()),
            on_success=self.spot_panel.set_history,
            title=self.tr("Cannot read the spot price history"))

    def set_catalog(self, catalog: Catalog) -> None:
        self.catalog = catalog
        self._show_offers()
        self._fill_filters()
        self.catalog_changed.emit(catalog)
        self.recompute()

    def _fill_filters(self) -> None:
        providers = self.catalog.providers() if self.catalog else []
        current = combo_key(self.provider) or ""
        self.provider.blockSignals(True)
        self.provider.clear()
        self.provider.addItem(self.tr("All providers"), "")
        for p in providers:
            self.provider.addItem(provider_title(p), p)
        self.provider.setCurrentIndex(max(0, self.provider.findData(current)))
        self.provider.blockSignals(False)
        self._fill_regions()

    def _fill_regions(self) -> None:
        provider = combo_key(self.provider) or None
        regions = self.catalog.regions(provider) if self.catalog else []
        current = combo_key(self.region) or ""
        self.region.blockSignals(True)
        self.region.clear()
        self.region.addItem(self.tr("All regions"), "")
        for r in regions:
            self.region.addItem(r, r)
        self.region.setCurrentIndex(max(0, self.region.findData(current)))
        self.region.blockSignals(False)

    def _provider_changed(self) -> None:
        self._fill_regions()
        self._apply_filters()

    def show_currency(self) -> None:
        """The price filter in the currency chosen in Preferences, like the price column;
        its amount is read in that currency again (issue 31)."""
        self.filter_labels[0].setText(self.tr("Max {symbol}/h").format(symbol=DISPLAY.symbol))
        if self.max_price.text().strip():
            self._apply_filters()

    def _apply_filters(self) -> None:
        text = self.max_price.text().strip()
        try:
            limit = parse_amount(text.lstrip("$¥")) if text else None
            if limit is not None and DISPLAY.currency == "CNY" and DISPLAY.rate > 0:
                limit = limit / DISPLAY.rate  # typed in ¥, compared with the USD prices
            bad = False
        except ValueError:
            limit, bad = None, True
        set_invalid(self.max_price, bad)
        self.max_price_error.setVisible(bad)
        # Rows the filter hides leave the selection on their own: that is not the user
        # choosing another offer, so the chosen one comes back when the filter allows it.
        self._selecting = True
        try:
            self.proxy.set_filters(combo_key(self.provider) or "",
                                   combo_key(self.region) or "", limit)
        finally:
            self._selecting = False
        self._restore_selection()
        self._save_inputs()

    @property
    def _offers_shown(self) -> bool:
        """The table has its model: a catalog came (``_show_offers``)."""
        return self.table.model() is not None

    def _show_offers(self) -> None:
        """The table, from the first catalog on."""
        if self._offers_shown:
            return
        self.table.setModel(self.proxy)
        self.table.setSortingEnabled(True)
        self.table.selectionModel().selectionChanged.connect(self._selection_changed)
        self._apply_sort()
        self._table_room.setVisible(False)
        self.table.setVisible(True)

    def _apply_sort(self) -> None:
        from PySide6.QtCore import Qt  # noqa: PLC0415 - see qt_early

        self.table.sortByColumn(COL[combo_key(self.sort)], Qt.SortOrder.AscendingOrder)

    def _sort_changed(self) -> None:
        if self._offers_shown:  # else sorted when the first catalog shows the table
            self._apply_sort()
            rows = self.table.selectionModel().selectedRows()
            if rows:  # the chosen offer moved with the sort: keep it in view (issue 31)
                self.table.scrollTo(rows[0], QAbstractItemView.ScrollHint.EnsureVisible)
        self._save_inputs()

    # ----------------------------------------------------------------- compute

    def recompute(self) -> None:
        """Rebuild the job from the form; on success refresh everything, else dim."""
        if self._restoring:
            return
        job, errors = self.form.build_job()
        ranked: list[RankedOffer] = []
        if job is not None:
            try:
                est = sizing.estimate(job.model, job.setup)
                if self.catalog is not None:
                    ranked = planner.rank_catalog(job, self.catalog, spot=self.spot.isChecked(),
                                                  rates=self.spot_rates,
                                                  assumptions=self.spot_assumptions)
            except sizing.SizingError as exc:
                errors = [exc]
        self.errors = errors
        self.form.show_errors(errors)  # each under its own field, all at once
        self._save_inputs()
        if errors:
            self.form_errors.setText(self._error_lines())
            self._set_dimmed(True)
            return
        assert job is not None
        self.form_errors.clear()
        self._set_dimmed(False)
        self.job, self.estimate = job, est
        self.spot_panel.setVisible(self.spot.isChecked())
        self.model.set_ranked(ranked)  # the proxy re-sorts on reset
        self._restore_selection()  # also shows the results
        if not self._fitted and ranked:
            self.fit_columns()
        self.recomputed.emit()

    def fit_columns(self) -> None:
        """Size columns to their text (costly: only per catalog and language)."""
        self._fitted = True
        # Measured over the first rows only (the cheapest, shown first): measuring every
        # offer's text took ~70 ms of the window's start-up.
        self.table.horizontalHeader().setResizeContentsPrecision(FIT_ROWS)
        self.table.resizeColumnsToContents()
        self.table.horizontalHeader().resizeSection(COL["why"], 260)

    def _set_dimmed(self, dimmed: bool) -> None:
        """Grey out the last good result; disabled widgets, not an opacity effect,
        which re-renders the whole subtree offscreen on every repaint (~15 ms)."""
        self.bar.set_stale(dimmed)
        for widget in (self.answers, self.notes, self.summary_box, self.table):
            widget.setEnabled(not dimmed)

    def _error_lines(self) -> str:
        lines = []
        for e in self.errors:
            label = self.form.labels.get(e.field if e.field in self.form.labels else
                                         {"tokens": "work", "samples": "work"}.get(e.field, ""))
            message = QCoreApplication.translate("SizingError", e.template).format(**e.values)
            name = label.text() if label is not None else e.field
            lines.append(f"{name}: {message}")
        return "\n".join(lines)

    def _restore_selection(self) -> None:
        if not self._offers_shown:  # no catalog yet: no table
            self._show_results()
            return
        row = self._closest_row()
        if self._selected_key is not None:
            for i in range(self.proxy.rowCount()):
                if _key(self.proxy.ranked_at(i)) == self._selected_key:
                    row = i
                    break
        sm = self.table.selectionModel()
        self._selecting = True
        try:
            if self.proxy.rowCount():
                flags = (QItemSelectionModel.SelectionFlag.ClearAndSelect
                         | QItemSelectionModel.SelectionFlag.Rows)
                index = self.proxy.index(row, 0)
                sm.select(index, flags)
                sm.setCurrentIndex(index, QItemSelectionModel.SelectionFlag.NoUpdate)
                # the chosen offer in view, after a filter or a sort moved it (issue 31)
                self.table.scrollTo(index, QAbstractItemView.ScrollHint.EnsureVisible)
            else:
                sm.clearSelection()
        finally:
            self._selecting = False
        self._show_results()

    def _closest_row(self) -> int:
        """The first row, or where nothing fits the row that comes closest (the most
        headroom among the GPUs that run the precision), not the cheapest T4 that cannot
        run it at all (issue 31 item 20)."""
        rows = [self.proxy.ranked_at(i) for i in range(self.proxy.rowCount())]
        if not rows or any(r.fits for r in rows):
            return 0
        judged = [i for i, r in enumerate(rows) if r.estimate is not None]
        return max(judged, key=lambda i: rows[i].headroom_bytes, default=0)

    def _selection_changed(self) -> None:
        if self._selecting:
            return
        chosen = self.selected_offer()
        if chosen is not None:
            self._selected_key = _key(chosen)
        self._show_results()

    def selected_offer(self) -> RankedOffer | None:
        rows = self.table.selectionModel().selectedRows() if self._offers_shown else []
        return self.proxy.ranked_at(rows[0].row()) if rows else None

    def select_row(self, row: int) -> None:
        self.table.selectRow(row)

    def visible_offers(self) -> list[RankedOffer]:
        return self.proxy.visible()

    # ----------------------------------------------------------------- showing

    def _show_results(self) -> None:
        if self.job is None or self.estimate is None:
            self.answers.setText(self.tr("Enter a model to see what it needs."))
            return
        chosen = self.selected_offer()
        gpu = chosen.offer.gpu if chosen else None
        job, est = self.job, self.estimate
        if chosen is not None and chosen.estimate is not None:
            # Show what the offer was judged on (its own GPU count, so its DDP
            # buffers too): the panel and the offer then give one per-GPU figure.
            job = Job(job.model, replace(job.setup, gpus=chosen.offer.gpu_count), job.work)
            est = chosen.estimate
        suggestion = planner.lighter_method(job, gpu) if gpu is not None else None
        if suggestion is None and chosen is not None and not chosen.fits:
            suggestion = planner.lighter_offer(job, (r.offer for r in self.visible_offers()),
                                               spot=self.spot.isChecked())
        self._show_nothing_fits()
        self.shown_estimate = est
        self.bar.set_estimate(est, gpu.usable_bytes if gpu else 0, gpu.name if gpu else "")
        self.bar.set_stale(bool(self.errors))
        self.answers.setText("\n".join(answers_for(job, est, gpu, suggestion)))
        self.notes.setText("\n".join(QCoreApplication.translate("SizingNote", n)
                                     for n in est.notes))
        self._show_summary(chosen)

    def would_fit(self) -> planner.WhatWouldFit | None:
        """What would fit when no offer shown does (None when one does), computed by the
        calculator for the job and the offers shown; kept until either changes."""
        if self.job is None:
            return None
        offers = tuple(r.offer for r in self.visible_offers())
        key = (self.job, offers, self.spot.isChecked())
        if self._would_fit is None or self._would_fit[0] != key:
            found = planner.what_would_fit(self.job, offers, self.spot.isChecked()) \
                if offers else None
            self._would_fit = (key, found)
        return self._would_fit[1]

    def _show_nothing_fits(self) -> None:
        assert self.job is not None
        lines = []
        odd = planner.implausible_size(self.job.model, QCoreApplication.translate)
        if odd:
            lines.append(odd)
        found = self.would_fit()
        if found is not None:
            lines += planner.what_would_fit_lines(found, self.job.setup.mode,
                                                  QCoreApplication.translate)
        self.nothing_fits.setText("\n".join(lines))
        self.nothing_fits.setVisible(bool(lines))

    def _request_launch(self) -> None:
        chosen = self.selected_offer()
        if chosen is not None:
            self.launch_requested.emit(chosen)

    def _show_summary(self, r: RankedOffer | None) -> None:
        v = self.summary_values
        self.spot_panel.show_offer(r)
        self.launch_button.setEnabled(r is not None and r.fits)
        self.launch_button.setToolTip("" if r is None or r.fits else
                                      self.tr("This offer does not fit the job."))
        if r is None:
            for label in v.values():
                label.setText("—")
            return
        o = r.offer
        v["machine"].setText(f"{o.instance_type} · {provider_title(o.provider)} · {o.region}")
        v["gpus"].setText(gpus_text(r))
        if r.spot and o.spot_price is None:  # ranked by on-demand: never called a spot price
            v["market"].setText(self.tr("{price}/h (on-demand price: no spot price known)")
                                .format(price=format_money(r.price_per_hour)))
        else:
            v["market"].setText(self.tr("{price}/h ({market})").format(
                price=format_money(r.price_per_hour), market=market_text(r.spot)))
        v["memory"].setText(reason_text(r))
        v["hours"].setText(format_hours(r.hours))
        v["cost"].setText(format_money(r.cost))
        outlook = r.risk.outlook if r.risk is not None else None
        if outlook is not None and outlook.finite:
            v["cost"].setText(self.tr("{cost} expected ({low}–{high}); {plain} if never "
                                      "interrupted").format(
                cost=format_money(outlook.expected_cost), low=format_money(outlook.low_cost),
                high=format_money(outlook.high_cost), plain=format_money(r.cost)))

    # ----------------------------------------------------------------- persistence

    def inputs(self) -> dict[str, Any]:
        data = self.form.inputs()
        data["filters"] = {"provider": combo_key(self.provider) or "",
                           "region": combo_key(self.region) or "",
                           "spot": self.spot.isChecked(), "max_price": self.max_price.text()}
        data["sort"] = combo_key(self.sort)
        return data

    def restore_inputs(self, data: dict[str, Any]) -> None:
        self._restoring = True
        try:
            filters = data.get("filters") if isinstance(data.get("filters"), dict) else {}
            assert isinstance(filters, dict)
            if isinstance(filters.get("spot"), bool):
                self.spot.setChecked(filters["spot"])
            if isinstance(filters.get("max_price"), str):
                self.max_price.setText(filters["max_price"])
            index = self.sort.findData(data.get("sort"))
            if index >= 0:
                self.sort.setCurrentIndex(index)
            self.form.set_inputs(data)
        finally:
            self._restoring = False
        self._fill_filters()
        for combo, key in ((self.provider, "provider"), (self.region, "region")):
            index = combo.findData(filters.get(key, ""))
            if index >= 0:
                combo.setCurrentIndex(index)
        self.recompute()

    def _save_inputs(self) -> None:
        if not self._restoring:
            self.settings.last_plan = self.inputs()

    def plan_data(self) -> dict[str, Any]:
        if self.job is None:
            raise self.errors[0] if self.errors else sizing.SizingError("plan", ERR_NOTHING)
        data = planner.plan_json(self.job, self.selected_offer(), self.visible_offers())
        data["inputs"] = self.inputs()
        return data

    def save_plan(self, path: str | Path) -> None:
        Path(path).write_text(planner.dumps_plan(self.plan_data()) + "\n", encoding="utf-8")

    def open_plan(self, path: str | Path) -> None:
        self.apply_plan(self.read_plan(path))

    @staticmethod
    def read_plan(path: str | Path) -> dict[str, Any]:
        """Read and check a plan file (safe to run in a worker thread)."""
        return planner.read_plan_file(Path(path))

    def apply_plan(self, data: dict[str, Any]) -> None:
        inputs = data.get("inputs")
        if isinstance(inputs, dict):
            self.restore_inputs(inputs)
        else:
            self.form.set_job(planner.plan_from_json(data))
        chosen = data.get("chosen")
        if isinstance(chosen, dict):
            key = (chosen.get("provider"), chosen.get("instance_type"), chosen.get("region"))
            self._selected_key = key  # type: ignore[assignment]
            self._restore_selection()

    def csv_text(self) -> str:
        return planner.offers_csv(self.visible_offers())

    def export_csv(self, path: str | Path) -> None:
        Path(path).write_text(self.csv_text(), encoding="utf-8")

    # ----------------------------------------------------------------- dialogs

    def _file_dialog(self, title: str, pattern: str, save: bool, done: Any) -> QFileDialog:
        dialog = QFileDialog(self, title, "", pattern)
        dialog.setAcceptMode(QFileDialog.AcceptMode.AcceptSave if save
                             else QFileDialog.AcceptMode.AcceptOpen)
        if save:
            dialog.setDefaultSuffix(pattern.rsplit("*.", 1)[-1].rstrip(")"))
        from PySide6.QtCore import Qt  # noqa: PLC0415 - see qt_early

        dialog.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
        dialog.fileSelected.connect(done)
        dialog.open()  # window-modal, no nested event loop
        return dialog

    def _write_later(self, path: str, make_text: Callable[[], str], title: str) -> None:
        import asyncio  # noqa: PLC0415 - not before the first screen

        async def work() -> None:
            text = make_text()  # on the GUI thread: it reads widgets; may raise
            await asyncio.to_thread(Path(path).write_text, text, encoding="utf-8")
        self.runner.run(work(), title=title)

    def save_plan_dialog(self) -> None:
        def write(path: str) -> None:
            self._write_later(path, lambda: planner.dumps_plan(self.plan_data()) + "\n",
                              self.tr("Cannot save the plan"))
        self._file_dialog(self.tr("Save plan"), self.tr("Plans (*.json)"), True, write)

    def open_plan_dialog(self) -> None:
        def read(path: str) -> None:
            self.runner.run_blocking(self.read_plan, path, on_success=self.apply_plan,
                                     title=self.tr("Cannot open the plan"))
        self._file_dialog(self.tr("Open plan"), self.tr("Plans (*.json)"), False, read)

    @staticmethod
    def read_config(path: str | Path) -> sizing.ModelSpec:
        """Read a Hugging Face config.json (safe to run in a worker thread)."""
        return hf_config.model_from_config(hf_config.load_config(path), source=str(path))

    def fetch_hub_config(self, model_id: str) -> None:
        """A Hub model's config.json, fetched once and cached, read in a worker thread."""
        from gpudesk.calc import hf_hub

        self.runner.run_blocking(hf_hub.model_from_hub, model_id,
                                 on_success=self.form.set_config_model,
                                 title=self.tr("Cannot fetch the config.json"))

    def load_config_dialog(self) -> None:
        def read(path: str) -> None:
            self.runner.run_blocking(self.read_config, path,
                                     on_success=self.form.set_config_model,
                                     title=self.tr("Cannot read the config.json"))
        self._file_dialog(self.tr("Load a Hugging Face config.json"),
                          self.tr("Model configs (*.json)"), False, read)

    def export_csv_dialog(self) -> None:
        def write(path: str) -> None:
            self._write_later(path, self.csv_text, self.tr("Cannot export the offers"))
        self._file_dialog(self.tr("Export offers"), self.tr("CSV files (*.csv)"), True, write)


__all__ = ["PlanPage", "format_bytes"]
