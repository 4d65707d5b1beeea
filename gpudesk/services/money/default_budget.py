"""A machine's budget when the user names none: Preferences' default (issue 29).

A launch has a budget unless the user chose none on purpose (the Launch dialog's
"No budget", ``gpudesk launch --no-budget``). Out of the box that budget is a day of
the machine: ``machine_budget_hours`` × its price per hour, in the machine's own
currency (the ledger's: USD for every machine gpudesk launches); a fixed
``machine_budget_usd`` above 0 in Preferences replaces the hours. Both front ends start
from :func:`of_settings`, so the dialog and the command line agree. Where the price is
not known before the launch, the hours travel in ``LaunchPlan.budget_hours`` and the
launcher counts them from the cloud's quote.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from gpudesk.i18n_marks import QT_TRANSLATE_NOOP
from gpudesk.services.core.settings import DEFAULT_BUDGET_HOURS

if TYPE_CHECKING:
    from gpudesk.services.core.settings import Settings

DEFAULT_HOURS = DEFAULT_BUDGET_HOURS  # a day of the machine
# The words the CLI prints before launching (the dialog says them in its own layout).
MSG_DEFAULT_HOURS = QT_TRANSLATE_NOOP(
    "Budget", "Budget {budget}: {hours} hours of the machine at {price}/h (the default in "
    "Preferences).")
MSG_DEFAULT_QUOTED = QT_TRANSLATE_NOOP(
    "Budget", "Budget: {hours} hours of the machine at the price the cloud quotes before "
    "launching (the default in Preferences).")
MSG_DEFAULT_FIXED = QT_TRANSLATE_NOOP(
    "Budget", "Budget {budget} (the default budget per machine in Preferences).")


@dataclass(frozen=True)
class DefaultBudget:
    """Preferences' default budget of a machine: a fixed amount in USD, else hours of its
    price."""

    fixed_usd: float = 0.0
    hours: float = DEFAULT_HOURS

    @property
    def fixed(self) -> bool:
        return self.fixed_usd > 0

    def amount(self, price_per_hour: float) -> float | None:
        """The budget of a machine at ``price_per_hour`` (USD, the ledger's currency);
        None while its price is not known (the launcher then counts ``hours`` from the
        cloud's quote)."""
        if self.fixed:
            return self.fixed_usd
        if price_per_hour > 0 and self.hours > 0:
            return self.hours * price_per_hour
        return None

    def plan_hours(self) -> float:
        """``LaunchPlan.budget_hours`` for a launch that takes this default."""
        return 0.0 if self.fixed else self.hours


def of_settings(s: Settings) -> DefaultBudget:
    hours = getattr(s, "machine_budget_hours", DEFAULT_HOURS)
    return DefaultBudget(max(0.0, s.machine_budget_usd),
                         hours if hours > 0 else DEFAULT_HOURS)
