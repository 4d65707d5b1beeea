"""Plan when nothing fits (issue 31 item 20): the page says so, and what would fit, in the
calculator's own numbers; an impossible size gets a sanity word; long figures stay whole."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

pytest.importorskip("PySide6")

from PySide6.QtCore import Qt  # noqa: E402

from gpudesk.calc import sizing  # noqa: E402
from gpudesk.cli.entry import main as cli_main  # noqa: E402
from gpudesk.services.cloud.catalog import load_catalog  # noqa: E402
from gpudesk.services.core.settings import Settings  # noqa: E402
from gpudesk.services.plan import planner  # noqa: E402
from gpudesk.ui.plan.plan_page import PlanPage  # noqa: E402


@pytest.fixture(autouse=True)
def _home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GPUDESK_HOME", str(tmp_path / "home"))


@pytest.fixture
def page(qtbot) -> PlanPage:  # type: ignore[no-untyped-def]
    p = PlanPage(Settings(), load_catalog())
    qtbot.addWidget(p)
    p.resize(1280, 800)
    p.show()
    return p


def choose(qtbot, combo, key: str) -> None:  # type: ignore[no-untyped-def]
    """Pick an item the way a keyboard user does: focus the combo and step to it."""
    index = combo.findData(key)
    assert index >= 0, key
    combo.setFocus()
    while combo.currentIndex() != index:
        qtbot.keyClick(combo, Qt.Key.Key_Down if combo.currentIndex() < index else Qt.Key.Key_Up)


def type_into(qtbot, edit, text: str) -> None:  # type: ignore[no-untyped-def]
    edit.selectAll()
    qtbot.keyClick(edit, Qt.Key.Key_Backspace)
    qtbot.keyClicks(edit, text)


def llama_full(qtbot, page: PlanPage) -> planner.Job:  # type: ignore[no-untyped-def]
    f = page.form
    choose(qtbot, f.source, "preset")
    choose(qtbot, f.preset, "llama-2-7b")
    type_into(qtbot, f.edits["batch"], "1")
    type_into(qtbot, f.edits["seq"], "2048")
    choose(qtbot, f.precision, "amp-bf16")
    assert page.job is not None and page.job.setup.finetune == "full"
    return page.job


def test_llama_7b_full_fine_tune_says_nothing_fits_and_what_would(qtbot, page) -> None:  # type: ignore[no-untyped-def]
    job = llama_full(qtbot, page)
    assert not any(r.fits for r in page.visible_offers())  # the premise: nothing fits
    text = page.nothing_fits.text()
    assert page.nothing_fits.isVisible()
    assert text.startswith(f"Nothing fits: none of the {len(page.visible_offers())} offers")
    # each alternative named with the memory the calculator gives on its cheapest offer
    offers = [r.offer for r in page.visible_offers()]
    for change, setup in (("LoRA", replace(job.setup, finetune="lora")),
                          ("QLoRA (4-bit NF4 base)", replace(
                              job.setup, finetune="qlora", quantize="nf4-dq")),
                          ("ZeRO-1", replace(job.setup, zero=1))):
        best = next(r for r in planner.rank(planner.Job(job.model, setup, job.work), offers)
                    if r.fits)
        assert best.estimate is not None
        line = (f"• {change}: fits on {best.offer.instance_type} ({best.offer.gpu_count} × "
                f"{best.offer.gpu.name}")
        assert line in text, (line, text)
        assert f"{planner.format_bytes(best.estimate.total_bytes)} of " \
               f"{planner.format_bytes(best.offer.gpu.usable_bytes)} per GPU" in text
    # how many of the biggest GPU offered: the calculator's count, not a guess
    biggest = max((o.gpu for o in offers if o.gpu.supports("amp-bf16")),
                  key=lambda g: g.usable_bytes)
    count = next(n for n in (1, 2, 4, 8, 16) if any(
        sizing.estimate(job.model, replace(job.setup, gpus=n, zero=z)).total_bytes
        <= biggest.usable_bytes for z in (0, 1, 2, 3)))
    assert f"• More GPUs: {count} × {biggest.name} (the largest GPU offered)" in text
    assert "Tried, fits no offer shown: Gradient checkpointing." in text
    # the selection is the offer that comes closest, not the cheapest T4 without bf16
    chosen = page.selected_offer()
    assert chosen is not None and chosen.estimate is not None
    assert chosen.offer.gpu.supports("amp-bf16")
    assert "no amp-bf16 support" not in page.answers.text()
    assert not page.launch_button.isEnabled()


def test_gradient_checkpointing_ticked_by_hand_is_no_longer_offered(qtbot, page) -> None:  # type: ignore[no-untyped-def]
    llama_full(qtbot, page)
    box = page.form.grad_checkpointing
    box.click()  # QAbstractButton.click(): the real toggle, as a mouse press releases it
    assert page.job is not None and page.job.setup.grad_checkpointing
    assert "Gradient checkpointing" not in page.nothing_fits.text()


def test_a_fitting_job_has_no_nothing_fits_box(qtbot, page) -> None:  # type: ignore[no-untyped-def]
    f = page.form
    choose(qtbot, f.source, "preset")
    choose(qtbot, f.preset, "gpt2")
    type_into(qtbot, f.edits["batch"], "1")
    assert any(r.fits for r in page.visible_offers())
    assert not page.nothing_fits.isVisible() and page.nothing_fits.text() == ""


def test_1e18_parameters_get_a_sanity_word_and_figures_that_scale(qtbot, page) -> None:  # type: ignore[no-untyped-def]
    f = page.form
    choose(qtbot, f.source, "params")
    type_into(qtbot, f.edits["params"], "1e18")
    assert page.job is not None and page.job.model.parameter_count() == 10 ** 18
    text = page.nothing_fits.text()
    assert text.startswith("No model this size exists: 1e+18 parameters. The largest ever "
                           "reported has 174 trillion")
    assert f"16-bit weights alone would take {planner.format_bytes(2e18)}" in text
    assert planner.format_bytes(2e18) == "1.7 EiB"
    assert "not even 131,072 × A100-80GB (the largest GPU offered) can hold it" in text
    # every legend line drawn whole at 1280 px (units scale: no "1000000.0 TiB"), and the
    # full lines are the bar's tooltip
    bar = page.bar
    assert bar.elided_lines() == bar.legend_lines()
    assert all("…" not in line for line in bar.elided_lines())
    assert bar.toolTip() == "\n".join(bar.legend_lines())
    assert "EiB" in bar.legend_lines()[-1]


def test_a_narrow_bar_elides_the_total_and_keeps_it_in_the_tooltip(qtbot, page) -> None:  # type: ignore[no-untyped-def]
    llama_full(qtbot, page)
    bar = page.bar
    bar.setFixedWidth(200)
    qtbot.waitUntil(lambda: bar.width() == 200)
    shown = bar.elided_lines()
    assert bar.fontMetrics().horizontalAdvance(shown[-1]) <= 200 * 1.2  # bold, elided
    assert shown[-1].endswith("…")
    assert bar.legend_lines()[-1] in bar.toolTip()


def test_a_real_model_size_has_no_sanity_word() -> None:
    assert planner.implausible_size(sizing.params_model(1.6e12)) == ""
    assert planner.implausible_size(sizing.params_model(175e12)) != ""


@pytest.mark.parametrize(("n", "text"), [
    (1000 * 1024 ** 4, "1000.0 TiB"), (1024 ** 5, "1.0 PiB"), (2e18, "1.7 EiB"),
    (1024 ** 7, "1.18e+21 B")])
def test_format_bytes_scales(n: float, text: str) -> None:
    assert planner.format_bytes(n) == text


def test_cli_offers_says_the_same_nothing_fits_words(capsys, qtbot, page) -> None:  # type: ignore[no-untyped-def]
    llama_full(qtbot, page)
    window_lines = page.nothing_fits.text().splitlines()
    assert cli_main(["offers", "--model", "llama-2-7b", "--batch", "1", "--seq", "2048",
                     "--precision", "amp-bf16", "--tokens", "1e9"]) == 0
    out = capsys.readouterr().out
    for line in window_lines:
        assert line in out.splitlines(), line


def test_a_cell_its_column_cuts_short_reads_whole_in_its_tooltip(qtbot, page) -> None:  # type: ignore[no-untyped-def]
    from gpudesk.ui.plan.offers_model import COL

    llama_full(qtbot, page)
    for row in range(3):
        index = page.proxy.index(row, COL["instance"])
        assert page.proxy.data(index, Qt.ItemDataRole.ToolTipRole) == \
            page.proxy.ranked_at(row).offer.instance_type
