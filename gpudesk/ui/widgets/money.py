"""Amounts in the user's currency: the catalog and the ledger are in USD; Preferences may
ask for CNY at the user's own rate. One display setting for the whole window."""

from __future__ import annotations

import math


class Money:
    def __init__(self, currency: str = "USD", cny_per_usd: float = 7.2) -> None:
        self.currency = currency
        self.rate = cny_per_usd

    @property
    def symbol(self) -> str:
        return "¥" if self.currency == "CNY" else "$"

    def set(self, currency: str, cny_per_usd: float) -> None:
        self.currency, self.rate = currency, cny_per_usd

    def __call__(self, usd: float, digits: int = 2) -> str:
        if math.isinf(usd) or math.isnan(usd):
            return "—"
        value = usd * self.rate if self.currency == "CNY" else usd
        return f"{self.symbol}{value:,.{digits}f}"


DISPLAY = Money()  # MainWindow sets it from the settings; every page formats through it
