"""The runaway-bill suite: every cloud × budget action × fault ends capped, refused or said,
measured by the cloud stand-ins' own bills (tests/guard_matrix_cases.py), and
docs/guard-matrix.md is exactly what the matrix prints. The ``tencent+role`` and
``aliyun+role`` rows (issue 21): with the role, the agent's "stop" is the cloud's
stop-charging stop, so from gpudesk's first Watch the compute bill ends at the budget with
the app closed.

The ``+group`` rows (issue 23): a keep-alive group of one, reclaimed in a loop, with
replacements that never boot, without capacity, or left at size 1 after its run; each is
capped by the group's own scheduled end (or, app open, by reconcile's no-capacity wait).

The whole matrix runs once per session (about three minutes on two cores); each row is
then its own test, so a row that ends OVER fails by name.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import guard_matrix_cases as gm
import pytest

DOC = Path(__file__).resolve().parent.parent / "docs" / "guard-matrix.md"
# the first test's setup runs the whole matrix (~3 minutes on two cores)
pytestmark = pytest.mark.timeout(900)


@pytest.fixture(scope="module")
def rows() -> Iterator[dict[tuple[str, str, str], gm.Row]]:
    import asyncio

    # A module fixture is made before the per-test fixture that hides the qasync loop an
    # earlier window test left marked as running; the matrix's asyncio.run needs it hidden.
    running = asyncio.events._get_running_loop()
    asyncio.events._set_running_loop(None)
    try:
        done = gm.run_matrix()
    finally:
        asyncio.events._set_running_loop(running)
    yield {(r.cloud, r.action, r.fault): r for r in done}


def test_the_document_is_the_matrix(rows: dict[tuple[str, str, str], gm.Row]) -> None:
    made = gm.document([rows[c] for c in gm.cases()])
    assert DOC.read_text(encoding="utf-8") == made, (
        "docs/guard-matrix.md differs from the matrix: run `python scripts/guard_matrix.py`")


@pytest.mark.parametrize("case", gm.cases(), ids=[":".join(c) for c in gm.cases()])
def test_every_row_is_capped_refused_or_said(rows: dict[tuple[str, str, str], gm.Row],
                                            case: tuple[str, str, str]) -> None:
    row = rows[case]
    assert row.outcome in gm.OUTCOMES, (
        f"{':'.join(case)}: bill {row.bill} against a budget of {row.budget}, neither capped, "
        f"refused nor said. What happened: {row.why}")


def test_the_said_words_are_the_launch_dialogs(qtbot: Any) -> None:
    """The words a "said" row relies on are in the real Launch dialog, word for word."""
    from PySide6.QtWidgets import QLabel

    from gpudesk.services.cloud.catalog import load_catalog
    from gpudesk.ui.machines.launch_dialog import LaunchDialog

    async def never(*_a: Any) -> Any:
        raise AssertionError("nothing launches here")

    catalog = load_catalog()
    types = {c: o.instance_type for c, o in gm.OFFERS.items()}
    for (cloud, action), said in gm.SAID.items():
        offer = next(o for o in catalog.filter(provider=cloud)
                     if o.instance_type == types[cloud])
        d = LaunchDialog(offer, catalog, never, detect=False, budget=10.0, on_budget=action)
        qtbot.addWidget(d)
        text = d.findChild(QLabel, "guardText")
        assert text is not None
        words = said.words.format(disk=gm.DISK_GB)
        assert words in text.text(), (cloud, action, text.text())


def test_no_sentence_covers_compute() -> None:
    """"said" may cover only what a stopped machine still bills (issue 29)."""
    assert all(s.covers == gm.DISK for s in gm.SAID.values())


def test_the_role_rows_say_what_gpudesk_show_says() -> None:
    """The words a Tencent/Alibaba Cloud "stop" row relies on in ``gpudesk show`` are
    guard.sentences' own, for a machine with the role (the matrix holds them word for word)."""
    from gpudesk.services.cloud import guard
    from gpudesk.services.money.ledger import Machine

    for cloud in ("tencent", "aliyun"):
        m = Machine(id="m-1", provider=cloud, disk_gb=float(gm.DISK_GB), budget=8.0,
                    on_budget="stop", enforced_by="agent,instance-role", currency="CNY")
        said = gm.SAID[(cloud, "stop")]
        lines = guard.english(m)
        assert any(said.words.format(disk=gm.DISK_GB) in line for line in lines), (
            cloud, said.words, lines)


def _compute(row: gm.Row) -> float:
    import re

    found = re.search(r"running ([0-9.]+), stopped-charging ([0-9.]+)", row.why)
    assert found is not None, row.why
    return float(found[1]) + float(found[2])


@pytest.mark.parametrize("cloud", ["tencent", "aliyun"])
def test_the_first_boot_guard_ends_the_compute_bill_with_the_app_closed_at_once(
        rows: dict[tuple[str, str, str], gm.Row], cloud: str) -> None:
    """App closed right after the launch, no desktop ever reaching the machine: the role
    named at creation lets the first-boot guard ask for the stop-charging stop itself, so
    the stand-in's compute bill (running + stopped-but-charged) ends within the budget."""
    row = rows[(cloud, "stop", "app-closed")]
    mode = "STOP_CHARGING" if cloud == "tencent" else "StopCharging"
    assert f"({mode})" in row.why, row.why
    budget = float(row.budget.split()[0])
    step = gm.OFFERS[cloud].price / 60.0  # one billing step (a minute)
    assert _compute(row) <= budget + step, row.why


@pytest.mark.parametrize("label", gm.ROLE_CLOUDS)
def test_without_a_role_a_stop_budget_is_refused_and_terminate_is_capped(
        rows: dict[tuple[str, str, str], gm.Row], label: str) -> None:
    """The account refuses the role: a "stop" budget would be no cap with the laptop shut
    there, so it is refused before anything bills; "terminate" keeps the cloud's timer."""
    for fault in gm.ROLE_FAULTS:
        stop, terminate = rows[(label, "stop", fault)], rows[(label, "terminate", fault)]
        assert stop.outcome == "refused" and float(stop.bill.split()[0]) == 0.0, stop
        assert "gave gpudesk no role" in stop.why, stop.why
        assert terminate.outcome == "capped", terminate


# ---------------------------------------------------------------- keep-alive groups (issue 23)

GROUP_CASES = [(c, a, f) for c in gm.GROUP_CLOUDS for a in gm.GROUP_ACTIONS
               for f, _ in gm.GROUP_FAULTS]


def _amount(text: str) -> float:
    return float(text.split()[0])


def _started(row: gm.Row) -> int:
    import re

    found = re.search(r"(\d+) machine\(s\) started by the group, (\d+) taken; left at the "
                      r"end: (\d+)", row.why)
    assert found is not None, row.why
    assert found[3] == "0", f"the group still holds a machine: {row.why}"
    return int(found[1])


@pytest.mark.parametrize("case", GROUP_CASES, ids=[":".join(c) for c in GROUP_CASES])
def test_every_group_row_is_capped_by_the_bill(rows: dict[tuple[str, str, str], gm.Row],
                                               case: tuple[str, str, str]) -> None:
    """A group that replaces its machines never outlives its budget: capped (never merely
    said), the bill over every member within the budget + one billing step."""
    row = rows[case]
    assert row.outcome == "capped", (
        f"{':'.join(case)}: bill {row.bill} against {row.budget}: {row.outcome}. {row.why}")
    cloud = case[0].partition("+")[0]
    step = gm.OFFERS[cloud].spot_price / 60.0
    assert _amount(row.bill) <= _amount(row.budget) + step + 0.005, row.why
    _started(row)  # and nothing of the group is left running


@pytest.mark.parametrize("cloud", gm.GROUP_CLOUDS)
def test_the_group_bill_counts_every_member_it_started(
        rows: dict[tuple[str, str, str], gm.Row], cloud: str) -> None:
    """A reclaim every 10 minutes: six members one after another, and the bill is theirs
    together (about the whole budget), not the first member's ten minutes. A replacement
    that never boots is replaced every five minutes: more members, the same cap."""
    loop = rows[(cloud, "terminate", "reclaim-loop")]
    assert _started(loop) >= 5, loop.why
    assert _amount(loop.bill) >= 0.8 * _amount(loop.budget), loop.why
    never = rows[(cloud, "terminate", "replacement-never-boots")]
    assert _started(never) >= 8, never.why
    assert _amount(never.bill) >= 0.8 * _amount(never.budget), never.why


@pytest.mark.parametrize("cloud", gm.GROUP_CLOUDS)
def test_with_the_app_closed_the_groups_own_end_stops_it(
        rows: dict[tuple[str, str, str], gm.Row], cloud: str) -> None:
    """Desktop closed and no agent: what ended each group is the cloud running its
    scheduled size-0 action, before the budget ran out."""
    for fault in ("reclaim-loop", "replacement-never-boots", "no-capacity",
                  "group-left-after-run"):
        row = rows[(cloud, "terminate", fault)]
        assert "ran the scheduled" in row.why, row.why
        assert "gpudesk: group-ended" not in row.why, row.why


@pytest.mark.parametrize("cloud", gm.GROUP_CLOUDS)
def test_with_the_app_open_no_capacity_ends_the_group_after_the_wait(
        rows: dict[tuple[str, str, str], gm.Row], cloud: str) -> None:
    """No capacity after a reclaim: with the desktop open, reconcile ends the group after
    keep_alive_wait_min (20 here) before capacity returns, so it bills less than the same
    fault with the app closed (where capacity returns and the scheduled end caps it)."""
    import re

    opened = rows[(cloud, "terminate", "no-capacity-open")]
    closed = rows[(cloud, "terminate", "no-capacity")]
    found = re.search(r"gpudesk: no-capacity at (\d+) min", opened.why)
    assert found is not None, opened.why
    reclaimed_at = round(gm.FAULT_AT * 60)  # the reclaim: a quarter of the hour in
    assert reclaimed_at + gm.GROUP_WAIT_MIN <= int(found[1]) <= reclaimed_at + \
        gm.GROUP_WAIT_MIN + gm.RECONCILE_EVERY_S / 60 + 1, opened.why
    assert _started(opened) == 1, opened.why  # nothing started after capacity returned
    assert _amount(opened.bill) < _amount(closed.bill), (opened.why, closed.why)


def test_a_group_whose_end_is_lost_goes_over(tmp_path: Path) -> None:
    """The control: the same group with its scheduled end gone bills on for 30 days and
    the matrix says OVER, so a group row that lost its cap could not pass as capped."""
    import asyncio
    import logging

    running = asyncio.events._get_running_loop()
    asyncio.events._set_running_loop(None)
    quiet = {n: logging.getLogger(n).level for n in ("gpudesk", "werkzeug", "moto")}
    for name in quiet:
        logging.getLogger(name).setLevel(logging.CRITICAL)
    world = gm.World()
    try:
        row = gm.run_row(world, "tencent+group", "terminate", gm.END_LOST, tmp_path / "row")
    finally:
        world.close()
        asyncio.events._set_running_loop(running)
        for name, level in quiet.items():
            logging.getLogger(name).setLevel(level)
    assert "the cloud lost the group's scheduled end" in row.why, row.why
    assert row.outcome == "OVER", row
    assert _amount(row.bill) > 100 * _amount(row.budget), row


@pytest.mark.parametrize("cloud", gm.CLOUDS)
def test_the_matrix_never_reads_the_hosts_uptime(tmp_path: Path, monkeypatch: Any,
                                                 cloud: str) -> None:
    """The matrix is a pure function of its inputs: the "user stop then start" row (whose
    agent counts billable time across a new boot) bills the same whether the host says it
    booted 30 s or 3 days ago; a fresh CI machine once billed 8.76 USD where an older one
    billed 8.16."""
    import asyncio
    import logging

    from gpudesk.agent import guard

    running = asyncio.events._get_running_loop()
    asyncio.events._set_running_loop(None)
    quiet = {n: logging.getLogger(n).level for n in ("gpudesk", "werkzeug", "moto")}
    for name in quiet:
        logging.getLogger(name).setLevel(logging.CRITICAL)
    made = []
    try:
        for uptime in (30.0, 3 * 24 * 3600.0):
            host = tmp_path / f"uptime-{uptime:g}"
            host.write_text(f"{uptime:.2f} 1.00\n", encoding="ascii")
            monkeypatch.setattr(guard, "UPTIME_FILE", str(host))  # what the host would say
            world = gm.World()
            try:
                made.append(gm.run_row(world, cloud, "stop", "stop-start",
                                       tmp_path / f"row-{uptime:g}"))
            finally:
                world.close()
    finally:
        asyncio.events._set_running_loop(running)
        for name, level in quiet.items():
            logging.getLogger(name).setLevel(level)
    assert gm.table(made[:1]) == gm.table(made[1:]), made
