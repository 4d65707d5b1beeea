"""When a spot price the cloud answered is not the price in force, and what is counted instead.

EC2's DescribeSpotPriceHistory answers the price changes inside the window asked and
the last change before it, which is the price in force at the window's start however
old it is (ECS's answers the same way). So age alone does not disqualify a price. Two
answers still cannot be the price a machine bills at, and gpudesk never counts spend,
a budget or a cloud cap from them:

- **dated before the history the cloud keeps** (EC2 keeps 90 days, ECS 30): the cloud
  cannot have answered that change, so it is no record of this market. moto's fixed
  answer, dated 2006, is one.
- **below 5 % of the on-demand price**: the deepest spot discount any of the three
  clouds publishes is 90 % (EC2, ECS; CVM's spot is sold from 10 % of pay-as-you-go),
  so a price under a twentieth of on-demand is a placeholder or a unit slip (moto's
  $0.00001). Counted, it makes the spend ¥0.01 a day and no budget ever crosses.

Such a price is refused and the refusal kept in words. The budget maths then counts
what the machine can bill at most: the user's maximum price where one is set and it is
lower, else the on-demand price (EC2's default maximum, and the most ECS's
SpotAsPriceGo pays). That errs toward stopping a machine early, never late.
"""

from __future__ import annotations

from datetime import UTC
from datetime import datetime

SPOT_FLOOR = 0.05  # a spot price below this fraction of on-demand is not believed
HISTORY_KEPT_DAYS = {"aws": 90, "aliyun": 30}  # how far back each cloud's spot history goes
DOUBT_STEP = "spot-price-doubted"  # the ledger event that keeps a refusal's words


def _day(at: float) -> str:
    return datetime.fromtimestamp(at, UTC).date().isoformat()


def doubt(provider: str, price: float, at: float, on_demand: float | None, now: float,
          currency: str = "USD") -> str:
    """Why ``price`` (per hour, in ``currency``, in force from ``at``) is not the price in
    force at ``now``, in words; "" when it is believable. ``on_demand``: the same machine's
    on-demand price in the same currency (None: unknown, only the date is judged)."""
    quoted = f"{price:g} {currency}/h dated {_day(at)}"
    kept = HISTORY_KEPT_DAYS.get(provider)
    if kept is not None and now - at > kept * 86400.0:
        return (f"{quoted} is older than the {kept} days of spot history the cloud keeps, "
                f"so it is no price of this market")
    if price <= 0:
        return f"{quoted} is no price"
    if on_demand is not None and on_demand > 0 and price < SPOT_FLOOR * on_demand:
        return (f"{quoted} is under {SPOT_FLOOR:.0%} of the on-demand {on_demand:g} "
                f"{currency}/h, below any spot discount the cloud sells")
    return ""


def most_it_bills(on_demand: float, max_price: float | None) -> float:
    """What a spot machine bills at most per hour: the user's maximum price where it is set
    and lower than on-demand, else on-demand (the default maximum)."""
    if max_price is not None and 0 < max_price < on_demand:
        return max_price
    return on_demand
