"""The runaway-bill suite: every cloud × budget action × fault ends capped, refused or said,
measured by the cloud stand-ins' own bills (tests/guard_matrix_cases.py), and
docs/guard-matrix.md is exactly what the matrix prints.

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
        assert said.words.format(disk=gm.DISK_GB) in text.text(), (cloud, action, text.text())
