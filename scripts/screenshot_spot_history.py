"""The Plan page with spot risk and a price history, on the ECS stand-in (issue 33).

Run under Xvfb: ``xvfb-run -a -s '-screen 0 1280x800x24' .venv/bin/python
scripts/screenshot_spot_history.py``. Writes ``docs/screenshot-plan-spot-history.png``.

Everything shown comes from the stand-in (``tests/aliyun_standin.py``), not from
Alibaba Cloud: prices from DescribePrice/DescribeSpotPriceHistory, rates from
DescribeSpotAdvice, and a 30-day history made up here (cheaper 00:00-06:00 UTC) so the
hour-of-day bands have something to show. The numbers are illustrations.
"""

from __future__ import annotations

import asyncio
import os
import random
import sys
import tempfile
import time
from datetime import date
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "docs" / "screenshot-plan-spot-history.png"
V100 = "ecs.gn6v-c8g1.2xlarge"


def main() -> int:
    os.environ["GPUDESK_HOME"] = tempfile.mkdtemp(prefix="gpudesk-spot-shot-")
    os.environ["NO_PROXY"] = "127.0.0.1"
    sys.path.insert(0, str(ROOT / "tests"))
    from aliyun_standin import ACCESS_KEY_ID
    from aliyun_standin import ACCESS_KEY_SECRET
    from aliyun_standin import REGIONS
    from aliyun_standin import AliyunStandin
    from PySide6.QtWidgets import QApplication

    from gpudesk.services.cloud.catalog import load_catalog
    from gpudesk.services.cloud.live_prices import refresh_prices
    from gpudesk.services.cloud.providers.aliyun import AliyunProvider
    from gpudesk.services.cloud.providers.base import Credentials
    from gpudesk.services.cloud.spot_history import price_history
    from gpudesk.services.cloud.spot_rates import load_rates
    from gpudesk.services.cloud.spot_rates import refresh_rates
    from gpudesk.services.core.settings import Settings
    from gpudesk.ui.plan.plan_page import PlanPage
    from gpudesk.ui.shell.theme import apply_theme

    server = AliyunStandin().start()
    server.secrets[ACCESS_KEY_ID] = ACCESS_KEY_SECRET
    zones = REGIONS["cn-hangzhou"][1]
    server.spot_advice = {(z, t): (rate, desc, 20) for z in zones
                          for t, rate, desc in ((V100, 4.0, "3-6%"),
                                                ("ecs.gn6i-c4g1.xlarge", 1.0, "0-3%"),
                                                ("ecs.gn7i-c8g1.2xlarge", 11.0, "9-12%"))}
    now = time.time()
    rng = random.Random(33)
    first = (now - 29.5 * 86400) // 86400 * 86400  # UTC midnight
    for z in zones:
        base = 5.2 + 0.3 * zones.index(z)
        server.spot_history[(z, V100)] = [
            (first + k * 21600, round(base * (0.8 if k % 4 == 0 else 1.0)
                                      * (1 + rng.uniform(-.03, .03)), 3))
            for k in range(int((now - first) // 21600) + 1)]  # cheap 00:00-06:00 UTC
    try:
        provider = AliyunProvider(Credentials("aliyun", ACCESS_KEY_ID,  # type: ignore[arg-type]
                                              ACCESS_KEY_SECRET),
                                  endpoint=server.endpoint, protocol="http")
        cache = Path(os.environ["GPUDESK_HOME"]) / "cache"
        catalog = load_catalog()
        report = asyncio.run(refresh_prices(catalog, ["aliyun"], 7.2, lambda _n: provider,
                                            cache=cache))
        refresh_rates({"aliyun": ["cn-hangzhou"]}, {"aliyun": {V100, "ecs.gn6i-c4g1.xlarge",
                                                               "ecs.gn7i-c8g1.2xlarge"}},
                      provider, date.today(), cache=cache)
        history = price_history(provider, "aliyun", "cn-hangzhou", V100, now=now)
        rates = load_rates(cache)
    finally:
        server.stop()

    app = QApplication(sys.argv)
    apply_theme(app, "light")
    page = PlanPage(Settings(), report.catalog)
    page.form.precision.setCurrentIndex(page.form.precision.findData("amp-fp16"))  # V100
    page.spot_rates = rates
    page.resize(1280, 800)
    page.show()
    page.spot.setChecked(True)
    page.provider.setCurrentIndex(page.provider.findData("aliyun"))
    page.region.setCurrentIndex(page.region.findData("cn-hangzhou"))
    for _ in range(20):
        app.processEvents()
    row = next(i for i in range(page.proxy.rowCount())
               if page.proxy.ranked_at(i).offer.instance_type == V100)
    page.select_row(row)
    page.spot_panel.set_history(history)
    for _ in range(40):
        app.processEvents()
    page.grab().save(str(OUT))
    print(OUT)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
