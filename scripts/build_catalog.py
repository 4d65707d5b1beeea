#!/usr/bin/env python3
"""Build the bundled price catalog from recorded source responses, not by hand.

    .venv/bin/python scripts/build_catalog.py            # rewrite the bundled files
    .venv/bin/python scripts/build_catalog.py --check    # exit 1 if they differ

Sources (``catalog_sources/``), one recorded answer per region:

* ``aws/AmazonEC2-<region>.csv`` and ``aws/AWSDataTransfer-<region>.csv``: the
  public AWS Price List offer files (CSV form), trimmed to the rows gpudesk
  reads; on-demand Linux prices, gp3 storage and data out per region.
* ``tencent/DescribeZoneInstanceConfigInfos-<region>.json``: CVM's answer
  (``InstanceTypeQuotaSet``, pay-as-you-go items, ``Price.UnitPrice`` in CNY);
  the cheapest zone that sells a type sets the region's price.

The shapes (GPU, count, vCPU, memory) and the offer list come from the current
``offers.csv``; only prices, their source and date are rebuilt. A row without a
recorded source keeps its on-demand price and says so. No bundled row carries
a spot price: spot is only ever a live quote (gpudesk shows "no spot price"
otherwise). Rows of providers this script does not build are copied as they are.

Storage and data-out prices per region go to ``region_rates.csv``.
"""

from __future__ import annotations

import argparse
import csv
import io
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from gpudesk.services.cloud import aws_price_list  # noqa: E402

CATALOG = ROOT / "resources" / "catalog"
SOURCES = ROOT / "catalog_sources"
BUILT = ("aws", "tencent")
NO_SPOT = "spot: none bundled (live quotes only)"
RATE_COLUMNS = ("provider", "region", "storage_usd_per_gb_month", "transfer_out_usd_per_gb",
                "source", "price_date")
CNY_PER_USD = 7.18  # the rate the earlier Tencent rows were converted at (2025-06)


def _strip_spot(source: str) -> str:
    kept = [p.strip() for p in source.split(";") if not p.strip().startswith("spot:")]
    return "; ".join([*kept, NO_SPOT])


def _aws(sources: Path, region: str, types: set[str]) -> aws_price_list.RegionPrices | None:
    ec2 = sources / "aws" / f"AmazonEC2-{region}.csv"
    if not ec2.is_file():
        return None
    prices = aws_price_list.parse_offer_csv(ec2.read_text("utf-8").splitlines(), region, types)
    transfer = sources / "aws" / f"AWSDataTransfer-{region}.csv"
    if prices.transfer_out_gb is None and transfer.is_file():
        prices = aws_price_list.parse_offer_csv(transfer.read_text("utf-8").splitlines(),
                                                region, types, prices)
    return prices


def _tencent(sources: Path, region: str) -> dict[str, float]:
    """Instance type → cheapest pay-as-you-go CNY/hour among the zones that sell it."""
    path = sources / "tencent" / f"DescribeZoneInstanceConfigInfos-{region}.json"
    if not path.is_file():
        return {}
    data = json.loads(path.read_text("utf-8"))
    items = (data.get("Response") or data).get("InstanceTypeQuotaSet") or []
    out: dict[str, float] = {}
    for item in items:
        price = (item.get("Price") or {}).get("UnitPrice")
        if (item.get("InstanceChargeType") != "POSTPAID_BY_HOUR" or item.get("Status") != "SELL"
                or not isinstance(price, int | float) or price <= 0):
            continue
        itype = str(item.get("InstanceType"))
        out[itype] = min(out.get(itype, float(price)), float(price))
    return out


def build(catalog: Path = CATALOG, sources: Path = SOURCES) -> tuple[str, str]:
    """(offers.csv, region_rates.csv) text as the sources make them."""
    with (catalog / "offers.csv").open(encoding="utf-8", newline="") as handle:
        reader = csv.DictReader(handle)
        header = list(reader.fieldnames or [])
        rows = list(reader)
    aws_types = {r["instance_type"] for r in rows if r["provider"] == "aws"}
    aws = {region: _aws(sources, region, aws_types)
           for region in sorted({r["region"] for r in rows if r["provider"] == "aws"})}
    tencent = {region: _tencent(sources, region)
               for region in sorted({r["region"] for r in rows if r["provider"] == "tencent"})}
    out_rows = []
    for row in rows:
        row = dict(row)
        if row["provider"] in BUILT:
            row["spot_usd_per_hour"] = ""
            row["price_source"] = _strip_spot(row["price_source"])
        listed = aws.get(row["region"]) if row["provider"] == "aws" else None
        if listed is not None and row["instance_type"] in listed.ondemand:
            row["ondemand_usd_per_hour"] = f"{listed.ondemand[row['instance_type']]:g}"
            row["price_source"] = (f"AWS Price List, AmazonEC2 offer file for {row['region']} "
                                   f"(on-demand, Linux, shared tenancy), published "
                                   f"{listed.published}; {NO_SPOT}")
            row["price_date"] = listed.published
        quoted = tencent.get(row["region"], {}) if row["provider"] == "tencent" else {}
        if row["instance_type"] in quoted:
            cny = quoted[row["instance_type"]]
            row["ondemand_usd_per_hour"] = f"{cny / CNY_PER_USD:.4g}"
            row["price_source"] = (f"Tencent Cloud DescribeZoneInstanceConfigInfos for "
                                   f"{row['region']}: CNY {cny:g}/h (cheapest zone selling it), "
                                   f"converted at {CNY_PER_USD} CNY/USD; {NO_SPOT}")
        out_rows.append(row)
    offers = io.StringIO()
    writer = csv.DictWriter(offers, fieldnames=header, lineterminator="\n")
    writer.writeheader()
    writer.writerows(out_rows)
    rates = io.StringIO()
    rate_writer = csv.writer(rates, lineterminator="\n")
    rate_writer.writerow(RATE_COLUMNS)
    for region, prices in aws.items():
        if prices is None or prices.storage_gb_month is None:
            continue
        rate_writer.writerow(["aws", region, f"{prices.storage_gb_month:g}",
                              "" if prices.transfer_out_gb is None
                              else f"{prices.transfer_out_gb:g}",
                              f"AWS Price List published {prices.published}: gp3 GB-month; "
                              "data transfer out to the internet, first paid tier",
                              prices.published])
    return offers.getvalue(), rates.getvalue()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="exit 1 if the files differ")
    parser.add_argument("--sources", type=Path, default=SOURCES)
    parser.add_argument("--catalog", type=Path, default=CATALOG)
    a = parser.parse_args(argv)
    offers, rates = build(a.catalog, a.sources)
    targets = {a.catalog / "offers.csv": offers, a.catalog / "region_rates.csv": rates}
    if a.check:
        stale = [str(p) for p, text in targets.items()
                 if not p.is_file() or p.read_text("utf-8") != text]
        for path in stale:
            print(f"{path} is not what the sources make; run scripts/build_catalog.py")
        return 1 if stale else 0
    for path, text in targets.items():
        path.write_text(text, encoding="utf-8")
        print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
