"""The main window's background work: the catalog, live and spot prices, the check
with the clouds at start, and pushing budget rules to running machines' guards.

Mixed into ``MainWindow`` (before ``QMainWindow``). Each job runs on its own
``TaskRunner`` and only when the qasync loop runs (not in a test's bare
``QApplication``).
"""

from __future__ import annotations

import functools
import sys
from typing import TYPE_CHECKING

from PySide6.QtCore import QCoreApplication

from gpudesk.ui.shell.window_parts import WindowParts

if TYPE_CHECKING:
    from PySide6.QtWidgets import QWidget

    from gpudesk.ui.machines.instances_page import InstancesPage
    from gpudesk.ui.plan.plan_page import PlanPage
    from gpudesk.ui.watch.watch_page import WatchPage
    from gpudesk.ui.widgets.task_runner import TaskRunner


SPOT_PRICES_EVERY_MS = 15 * 60 * 1000  # EC2 spot prices change a few times a day at most


def event_loop_running() -> bool:
    """Whether the qasync loop runs (not in a test's bare QApplication)."""
    asyncio = sys.modules.get("asyncio")  # not imported before the first paint (31 ms)
    if asyncio is None:
        return False  # nothing has imported it: no loop can run
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return True


class BackgroundWork(WindowParts):
    """Prices, the start-up check and guard pushes; mix in before ``QMainWindow``."""

    prices_runner: TaskRunner
    spot_runner: TaskRunner
    guard_runner: TaskRunner
    _guards_again: bool | None  # a push asked for while one ran: whether it wanted the budget
    _built: dict[str, QWidget]

    if TYPE_CHECKING:  # the window's own, and its other parts'
        @property
        def plan(self) -> PlanPage: ...
        @property
        def instances(self) -> InstancesPage: ...
        @property
        def watch(self) -> WatchPage: ...

    def _reconcile_at_start(self) -> None:
        if not event_loop_running():
            return  # no qasync loop (a bare QApplication in a test)
        self.instances.refresh()
        self.refresh_spot_prices()

    def _load_catalog(self) -> None:
        if not event_loop_running():  # no qasync loop (e.g. a bare QApplication): read it now
            from gpudesk.services.cloud.catalog import load_catalog

            self.plan.set_catalog(load_catalog())
            return
        self.plan.load_catalog_async()

    def refresh_prices(self) -> None:
        """Live prices for the providers with keys; the bundled catalog stays the fallback."""
        from gpudesk.services.cloud.live_prices import RefreshReport
        from gpudesk.services.cloud.live_prices import refresh_prices

        catalog = self.plan.catalog
        names = [a.provider for a in self.ledger.accounts()
                 if a.provider in ("aws", "tencent", "aliyun")]
        if catalog is None:
            return  # not loaded yet; with no keys at all, AWS's public price list still answers

        def done(report: RefreshReport) -> None:
            self.plan.set_catalog(report.catalog)
            if "instances" in self._built:
                self.instances.reload()  # its Storage line, priced with the S3 prices read
            text = QCoreApplication.translate(
                "MainWindow", "Live prices: {n} offers updated.").format(n=report.updated)
            if report.sold_out:
                text += " " + QCoreApplication.translate("MainWindow", "Sold out: {items}.").format(
                    items=", ".join(report.sold_out))
            if report.errors:
                text += " " + QCoreApplication.translate(
                    "MainWindow", "{n} regions did not answer.").format(n=len(report.errors))
            self.statusBar().showMessage(text, 15000)
            self.refresh_spot_prices()

        self.statusBar().showMessage(
            QCoreApplication.translate("MainWindow", "Asking the clouds for prices…"))
        from gpudesk.services.core.paths import cache_dir
        from gpudesk.services.storage import s3_price_list
        from gpudesk.services.storage import usage

        def bucket_prices() -> None:
            """S3 storage/request prices for the regions of the user's AWS buckets, from
            the same public price list (offer AmazonS3); a failure is noted, not raised."""
            regions = {u.region for u in usage.load().values() if u.cloud == "aws"}
            s3_price_list.refresh_regions(regions, max_age_s=0)

        async def work() -> RefreshReport:
            import asyncio

            report = await refresh_prices(
                catalog, names, self.settings.cny_per_usd,  # type: ignore[arg-type]
                self.providers, price_list=True, cache=cache_dir())
            await asyncio.to_thread(bucket_prices)
            return report

        self.prices_runner.run(work(), on_success=done,
                               title=QCoreApplication.translate(
                                   "MainWindow", "Prices were not refreshed"))

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

    def push_guards(self, budget_from_settings: bool = False) -> None:
        """Every running machine's guard follows a new budget, action or price: its cloud
        guard and its agent's rules (in the background; one push at a time, never lost)."""
        from gpudesk.services.remote.guard_push import PushReport
        from gpudesk.services.remote.guard_push import push_all

        if not any(m.provider != "own" and m.state == "running"
                   for m in self.ledger.machines(include_ended=False)):
            return
        if not event_loop_running():
            return  # no qasync loop (a bare QApplication in a test)
        if self.guard_runner.busy:
            self._guards_again = bool(self._guards_again) or budget_from_settings
            return

        def done(report: PushReport) -> None:
            if report.failed:
                self.statusBar().showMessage(QCoreApplication.translate(
                    "MainWindow", "The new budget rules did not reach {n} machine(s); they "
                    "keep their previous rules: {why}").format(
                        n=len(report.failed), why="; ".join(report.failed.values())), 30000)
            again, self._guards_again = self._guards_again, None
            if again is not None:
                self.push_guards(again)

        work = functools.partial(push_all, self.ledger, self.settings, providers=self.providers,
                                 budget_from_settings=budget_from_settings)
        self.guard_runner.run_blocking(work, on_success=done)
