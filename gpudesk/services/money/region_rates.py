"""Disk and data-out list prices per region, bundled in ``resources/catalog/region_rates.csv``.

In the money room, not beside the catalog, because spend prices every machine's
disk and transfer at its own region's rate and may not import the cloud room.
``scripts/build_catalog.py`` writes the file from recorded AWS price-list answers.
"""

from __future__ import annotations

import csv
import functools
from dataclasses import dataclass
from datetime import date
from pathlib import Path

RATES_FILE = "region_rates.csv"


@dataclass(frozen=True)
class RegionRates:
    """Disk and data-out list prices of one region (built from the price list, dated)."""

    provider: str
    region: str
    storage_per_gb_month: float  # USD per GB-month of the root volume type gpudesk uses
    transfer_out_per_gb: float | None  # USD per GB out to the internet (first paid tier)
    source: str
    price_date: date


class RegionRatesError(ValueError):
    """A row of the bundled file that cannot be read (file and line in the message)."""


def _number(text: str, where: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise RegionRatesError(f"{where}: {text!r} is not a number") from None
    if not value >= 0:
        raise RegionRatesError(f"{where}: {text!r} must be >= 0")
    return value


def load_region_rates(directory: Path | None = None) -> dict[tuple[str, str], RegionRates]:
    """(provider, region) → rates from ``region_rates.csv``; {} when the file is absent."""
    if directory is None:
        from gpudesk.resources import resource_path

        directory = resource_path("catalog")
    path = Path(directory) / RATES_FILE
    if not path.is_file():
        return {}
    out: dict[tuple[str, str], RegionRates] = {}
    with path.open(newline="", encoding="utf-8") as handle:
        for line, row in enumerate(csv.DictReader(handle), start=2):
            where = f"{path.name}, line {line}"
            try:
                key = (row["provider"].strip(), row["region"].strip())
                transfer = (row["transfer_out_usd_per_gb"] or "").strip()
                out[key] = RegionRates(
                    key[0], key[1], _number(row["storage_usd_per_gb_month"], where),
                    _number(transfer, where) if transfer else None,
                    row["source"].strip(), date.fromisoformat(row["price_date"].strip()))
            except (KeyError, AttributeError, ValueError) as exc:
                raise RegionRatesError(f"{where}: {exc}") from None
    return out


@functools.cache
def bundled() -> dict[tuple[str, str], RegionRates]:
    """The bundled table, read once per process (a missing or bad file: no rates)."""
    try:
        return load_region_rates()
    except (OSError, RegionRatesError):
        return {}
