"""Live prices kept between runs: the next start shows them as ``cached <date>``.

Small and free of SDK and keyring imports, so the Plan page can read it while it
loads the bundled catalog.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import replace
from datetime import date
from pathlib import Path

from gpudesk.services.cloud.catalog import Catalog
from gpudesk.services.cloud.catalog import Offer
from gpudesk.services.cloud.catalog import load_catalog
from gpudesk.services.core.files import atomic_write_text
from gpudesk.services.core.files import read_json_object

CACHE_FILE = "live-prices.json"


def save_cache(directory: Path, catalog: Catalog, not_sold: Iterable[str] = ()) -> None:
    """Keep every live price (with its date) for the next run; older entries stay.
    ``not_sold``: "provider type region" a region's whole listing left out (sold neither
    way there): its old prices go, and the next run leaves the row out too."""
    path = directory / CACHE_FILE
    kept = read_json_object(path)
    for key in not_sold:
        kept[key] = {"not_sold": True, "date": date.today().isoformat()}
    for o in catalog.offers:
        if o.price_kind == "live":
            kept[f"{o.provider} {o.instance_type} {o.region}"] = {
                "ondemand": o.ondemand_price, "spot": o.spot_price,
                "date": o.price_date.isoformat(), "source": o.price_source}
    atomic_write_text(path, json.dumps(kept, indent=1, sort_keys=True))


def apply_cache(catalog: Catalog, directory: Path) -> Catalog:
    """``catalog`` with the prices an earlier refresh kept, each ``cached <its date>``."""
    kept = read_json_object(directory / CACHE_FILE)
    if not kept:
        return catalog
    offers: list[Offer] = []
    for o in catalog.offers:
        entry = kept.get(f"{o.provider} {o.instance_type} {o.region}")
        if entry is not None and entry.get("not_sold") is True:
            continue  # the region's own listing left it out: sold neither way there
        try:
            when = date.fromisoformat(str(entry["date"])) if entry else None
            ondemand = float(entry["ondemand"]) if entry else 0.0
            spot = entry.get("spot") if entry else None
        except (KeyError, TypeError, ValueError):
            when = None
        if entry is None or when is None or ondemand <= 0:
            offers.append(o)
            continue
        offers.append(replace(o, ondemand_price=ondemand,
                              spot_price=float(spot) if isinstance(spot, int | float) else None,
                              price_date=when, price_kind="cached",
                              price_source=str(entry.get("source", o.price_source))))
    return Catalog(catalog.gpus, tuple(offers))


def not_sold_rows(directory: Path, catalog: Catalog) -> Catalog:
    """``catalog`` with the bundled rows the cache left out as not sold put back, so that a
    refresh asks about them again (a region may sell the type again)."""
    kept = read_json_object(directory / CACHE_FILE)
    present = {(o.provider, o.instance_type, o.region) for o in catalog.offers}
    back = [o for o in load_catalog().offers
            if (o.provider, o.instance_type, o.region) not in present
            and (kept.get(f"{o.provider} {o.instance_type} {o.region}") or {}).get("not_sold")
            is True]
    return Catalog(catalog.gpus, catalog.offers + tuple(back)) if back else catalog


def load_catalog_with_cache(directory: Path | None = None) -> Catalog:
    """The bundled catalog with the prices an earlier refresh kept (cache folder)."""
    if directory is None:
        from gpudesk.services.core.paths import cache_dir

        directory = cache_dir()
    return apply_cache(load_catalog(), directory)
