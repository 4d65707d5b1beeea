"""The guard's sentences (``services.cloud.guard.sentences``) in the window's language and
the user's currency: one wording of who stops a machine's bill on every screen."""

from __future__ import annotations

from gpudesk.services.cloud import guard
from gpudesk.ui.widgets.money import Money
from gpudesk.ui.widgets.task_runner import format_template


def guard_said(sentences: list[tuple[str, dict[str, object]]], money: Money,
               sep: str = " ") -> str:
    """Translated and filled; with CNY chosen in Preferences a USD amount is shown in ¥ as
    the window shows money, never "USD" next to a ¥ column (issue 31); in USD, the CLI's
    own words ("12.62 USD")."""
    def shown(value: object) -> object:
        if isinstance(value, guard.Amount) and value.currency == "USD" \
                and money.currency == "CNY":
            return money(value.value, 2)
        return value

    return sep.join(format_template(guard.CONTEXT, t, {k: shown(v) for k, v in values.items()})
                    for t, values in sentences)
