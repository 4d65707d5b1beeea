"""The Plan page against the real sizing maths, planner and bundled catalog."""

from __future__ import annotations

import asyncio
import csv
import io
import json
import math
from pathlib import Path

import pytest

pytest.importorskip("PySide6")
qasync = pytest.importorskip("qasync")

from fixtures_hf_hub import hub  # noqa: E402, F401
from PySide6.QtCore import Qt  # noqa: E402
from PySide6.QtWidgets import QComboBox  # noqa: E402
from PySide6.QtWidgets import QLabel  # noqa: E402
from PySide6.QtWidgets import QLineEdit  # noqa: E402
from PySide6.QtWidgets import QMessageBox  # noqa: E402
from PySide6.QtWidgets import QTableView  # noqa: E402

from gpudesk import sizing  # noqa: E402
from gpudesk.services.cloud.catalog import load_catalog  # noqa: E402
from gpudesk.services.core.settings import Settings  # noqa: E402
from gpudesk.services.plan import planner  # noqa: E402
from gpudesk.ui.plan.offers_model import format_hours  # noqa: E402
from gpudesk.ui.plan.offers_model import format_money  # noqa: E402
from gpudesk.ui.plan.offers_model import sort_key  # noqa: E402
from gpudesk.ui.plan.plan_form import is_invalid  # noqa: E402
from gpudesk.ui.plan.plan_page import PlanPage  # noqa: E402
from gpudesk.ui.shell.main_window import MainWindow  # noqa: E402
from gpudesk.ui.widgets.task_runner import TaskRunner  # noqa: E402


@pytest.fixture(autouse=True)
def _home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GPUDESK_HOME", str(tmp_path / "home"))


@pytest.fixture
def page(qtbot) -> PlanPage:  # type: ignore[no-untyped-def]
    p = PlanPage(Settings(), load_catalog())
    qtbot.addWidget(p)
    p.resize(1280, 800)
    return p


def choose(combo, key: str) -> None:  # type: ignore[no-untyped-def]
    index = combo.findData(key)
    assert index >= 0, key
    combo.setCurrentIndex(index)


def set_llama(page: PlanPage) -> None:
    f = page.form
    choose(f.source, "preset")
    choose(f.preset, "llama-2-7b")
    f.edits["batch"].setText("1")
    f.edits["seq"].setText("2048")
    choose(f.precision, "bf16")
    choose(f.optimizer, "adamw")


def test_llama_bar_matches_sizing_estimate(page: PlanPage) -> None:
    set_llama(page)
    # The bar shows the job as the selected offer runs it: on its GPU count.
    count = page.selected_offer().offer.gpu_count  # type: ignore[union-attr]
    want = sizing.estimate(sizing.preset("llama-2-7b"),
                           sizing.Setup(batch=1, seq=2048, precision="bf16", optimizer="adamw",
                                        gpus=count))
    got = {s.key: s.bytes for s in page.bar.segments}
    assert got == {"weights": want.weights_bytes, "gradients": want.gradients_bytes,
                   "optimizer": want.optimizer_bytes, "activations": want.activations_bytes,
                   "autocast_cache": want.autocast_cache_bytes,
                   "kv_cache": want.kv_cache_bytes, "comm_buffers": want.comm_buffer_bytes,
                   "cuda_context": want.cuda_context_bytes}
    assert page.bar.total_bytes == want.total_bytes
    assert not page.errors and not page.bar.stale
    lines = page.bar.legend_lines()
    assert lines[0] == f"Weights: {planner.format_bytes(want.weights_bytes)}"
    assert planner.format_bytes(want.total_bytes) in lines[-1]
    # The answers are sentences about the selected offer's GPU.
    gpu = page.selected_offer().offer.gpu  # type: ignore[union-attr]
    batch = sizing.largest_batch(want_model := sizing.preset("llama-2-7b"),
                                 sizing.Setup(batch=1, seq=2048, precision="bf16",
                                              gpus=count), gpu.usable_bytes)
    assert want_model.name == "llama-2-7b"
    assert gpu.name in page.answers.text()
    assert f"Largest batch per GPU that fits: {batch}." in page.answers.text() or batch == 0


def test_bad_heads_marks_field_keeps_inputs_and_last_result(page: PlanPage) -> None:
    f = page.form
    choose(f.source, "shape")
    f.edits["hidden"].setText("768")
    f.edits["batch"].setText("4")
    good_total = page.bar.total_bytes
    assert not page.errors
    f.edits["heads"].setText("7")
    assert [e.field for e in page.errors] == ["heads"]
    assert is_invalid(f.edits["heads"])
    assert not is_invalid(f.edits["hidden"])
    assert "7 heads do not divide hidden size 768" in page.form_errors.text()
    assert page.form_errors.text().startswith("Attention heads:")
    assert f.edits["hidden"].text() == "768" and f.edits["batch"].text() == "4"
    assert page.bar.stale and page.bar.total_bytes == good_total  # last good result, dimmed
    f.edits["heads"].setText("12")
    assert not page.errors and not is_invalid(f.edits["heads"]) and not page.bar.stale
    assert page.form_errors.text() == ""


def test_unparsable_number_is_marked_not_raised(page: PlanPage) -> None:
    page.form.edits["batch"].setText("eight")
    assert [e.field for e in page.errors] == ["batch"]
    assert is_invalid(page.form.edits["batch"])
    assert "whole number" in page.form_errors.text()


def test_offers_sorted_by_cost_fitting_first(page: PlanPage) -> None:
    job = page.job
    assert job is not None
    want = planner.rank_catalog(job, page.catalog, sort="cost")  # type: ignore[arg-type]
    got = page.visible_offers()
    assert len(got) == len(want) > 10
    assert [sort_key(r, "cost") for r in got] == [sort_key(r, "cost") for r in want]
    fits = [r.fits for r in got]
    assert any(fits) and not all(fits)
    assert fits == sorted(fits, reverse=True)  # every fitting offer before any other
    costs = [r.cost for r in got if r.fits]
    assert costs == sorted(costs)


def test_sort_by_price_and_headroom(page: PlanPage) -> None:
    choose(page.sort, "price")
    got = page.visible_offers()
    assert [sort_key(r, "price") for r in got] == sorted(sort_key(r, "price") for r in got)
    choose(page.sort, "headroom")
    heads = [r.headroom_bytes for r in page.visible_offers() if r.fits]
    assert heads == sorted(heads, reverse=True)


def test_filters_provider_and_spot(page: PlanPage) -> None:
    choose(page.provider, "tencent")
    rows = page.visible_offers()
    assert rows and {r.offer.provider for r in rows} == {"tencent"}
    choose(page.provider, "")
    page.spot.setChecked(True)
    rows = page.visible_offers()
    # Without a live spot quote an offer is ranked by on-demand and says "no spot price".
    assert rows and all(r.spot for r in rows)
    # (no price at all, the Aliyun rows: infinite, never a cost to finish)
    assert all(r.price_per_hour == (r.offer.spot_price or r.offer.ondemand_price or math.inf)
               for r in rows)
    from gpudesk.ui.plan.offers_model import COL
    unquoted = next(i for i in range(page.proxy.rowCount())
                    if page.proxy.ranked_at(i).offer.spot_price is None)
    assert page.proxy.index(unquoted, COL["market"]).data() == "no spot price"
    offer = page.proxy.ranked_at(unquoted).offer
    assert offer.price_status in ("bundled 2025-06-01", "estimate 2025-06-01")
    cell = page.proxy.index(unquoted, COL["price"])
    assert cell.data().endswith(f"({offer.price_kind})")  # never shown as if live
    assert cell.data(Qt.ItemDataRole.ToolTipRole).startswith(offer.price_status + ": ")
    page.max_price.setText("2")
    assert all(r.price_per_hour <= 2 for r in page.visible_offers())


def test_an_offer_without_a_price_says_so_and_ranks_after_the_priced(page: PlanPage) -> None:
    from gpudesk.ui.plan.offers_model import COL

    choose(page.sort, "cost")
    rows = page.visible_offers()
    fitting = [r for r in rows if r.fits]
    unpriced = [i for i, r in enumerate(fitting) if r.offer.provider == "aliyun"]
    assert unpriced, "no fitting Alibaba Cloud offer on the page"
    assert unpriced == list(range(len(fitting) - len(unpriced), len(fitting)))  # after priced
    assert all(math.isfinite(r.cost) for r in fitting[:unpriced[0]])
    at = rows.index(fitting[unpriced[0]])
    assert page.proxy.index(at, COL["price"]).data() == "no bundled price"
    assert page.proxy.index(at, COL["cost"]).data() == "—"  # never $0.00
    tip = page.proxy.index(at, COL["price"]).data(Qt.ItemDataRole.ToolTipRole)
    assert tip.startswith("No bundled price: Alibaba Cloud publishes no list price")
    assert "Refresh prices from my clouds" in tip and "NO BUNDLED PRICE" in tip
    page.max_price.setText("1000")  # a maximum price: an offer with none cannot be under it
    assert not any(r.offer.provider == "aliyun" for r in page.visible_offers())


def test_selecting_offer_updates_summary(page: PlanPage) -> None:
    rows = page.visible_offers()
    fitting = [i for i, r in enumerate(rows) if r.fits]
    row = fitting[min(2, len(fitting) - 1)]
    page.select_row(row)
    chosen = page.selected_offer()
    assert chosen is not None and chosen is rows[row]
    judged = planner.judge(page.job, chosen.offer, spot=False)  # type: ignore[arg-type]
    assert page.summary_values["hours"].text() == format_hours(judged.hours)
    assert page.summary_values["cost"].text() == format_money(judged.cost)
    assert chosen.offer.instance_type in page.summary_values["machine"].text()
    assert page.bar.capacity_bytes == chosen.offer.gpu.usable_bytes
    page.form.edits["batch"].setText("2")  # the selection survives a recompute
    assert page.selected_offer().offer == chosen.offer  # type: ignore[union-attr]


def test_save_and_open_plan_round_trip(page: PlanPage, tmp_path: Path) -> None:
    set_llama(page)
    page.form.grad_checkpointing.setChecked(True)
    choose(page.provider, "aws")
    before = page.inputs()
    path = tmp_path / "plan.json"
    page.save_plan(path)
    data = json.loads(path.read_text(encoding="utf-8"))
    assert data["format"] == "gpudesk-plan" and data["model"]["name"] == "llama-2-7b"
    planner.plan_from_json(data)

    other = PlanPage(Settings(), page.catalog)
    assert other.inputs() != before
    other.open_plan(path)
    assert other.inputs() == before
    assert other.bar.total_bytes == page.bar.total_bytes


def test_open_bad_plan_raises_sizing_error(page: PlanPage, tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text("{not json", encoding="utf-8")
    with pytest.raises(sizing.SizingError) as err:
        page.open_plan(bad)
    assert err.value.field == "plan"


def test_export_csv_writes_ranked_rows(page: PlanPage, tmp_path: Path) -> None:
    choose(page.provider, "aws")
    path = tmp_path / "offers.csv"
    page.export_csv(path)
    rows = list(csv.DictReader(io.StringIO(path.read_text(encoding="utf-8"))))
    visible = page.visible_offers()
    assert len(rows) == len(visible)
    assert [r["instance_type"] for r in rows] == [r.offer.instance_type for r in visible]
    assert {r["provider"] for r in rows} == {"aws"}


def test_last_plan_persists_in_settings(qtbot) -> None:  # type: ignore[no-untyped-def]
    settings = Settings()
    first = PlanPage(settings, load_catalog())
    qtbot.addWidget(first)
    set_llama(first)
    assert settings.last_plan["preset"] == "llama-2-7b"
    second = PlanPage(settings, load_catalog())
    qtbot.addWidget(second)
    assert combo_text(second) == "llama-2-7b"
    assert second.form.edits["seq"].text() == "2048"


def combo_text(page: PlanPage) -> str:
    return str(page.form.preset.currentData())


def test_vision_preset_asks_for_images(page: PlanPage) -> None:
    choose(page.form.preset, "vit-b-16")
    assert page.form.form.isRowVisible(page.form.edits["image_size"])
    assert not page.form.form.isRowVisible(page.form.edits["seq"])
    assert page.form.labels["work"].text() == "Training images"
    assert page.job is not None and page.job.work.samples > 0


def test_catalog_loads_through_task_runner(qtbot, loop) -> None:  # type: ignore[no-untyped-def]
    window = MainWindow(Settings())
    qtbot.addWidget(window)
    qtbot.waitUntil(lambda: window.plan.catalog is not None, timeout=5000)
    assert window.plan.visible_offers()
    assert "days old" in window.catalog_label.text()
    assert window.catalog_label.text().startswith("Prices from 20")


def test_task_runner_shows_readable_error(qtbot, loop) -> None:  # type: ignore[no-untyped-def]
    page = PlanPage(Settings(), load_catalog())
    qtbot.addWidget(page)
    runner = TaskRunner(page, button=page.spot)

    def boom() -> None:
        raise sizing.SizingError("heads", "{heads} heads do not divide hidden size {hidden}",
                                 heads=7, hidden=768)

    with qtbot.waitSignal(runner.finished, timeout=5000) as blocker:
        runner.run_blocking(boom)
        assert not page.spot.isEnabled()  # busy
    assert blocker.args == [False]
    assert page.spot.isEnabled()
    box = runner.last_box
    assert isinstance(box, QMessageBox)
    assert box.text() == "heads: 7 heads do not divide hidden size 768"
    assert box.detailedText() == ""  # known errors: no traceback
    box.close()

    def unknown() -> None:
        raise KeyError("x")

    with qtbot.waitSignal(runner.finished, timeout=5000):
        runner.run_blocking(unknown)
    assert runner.last_box is not None and "KeyError" in runner.last_box.text()
    assert "Traceback" in runner.last_box.detailedText()
    runner.last_box.close()


def test_task_runner_cancel(qtbot, loop) -> None:  # type: ignore[no-untyped-def]
    page = PlanPage(Settings(), load_catalog())
    qtbot.addWidget(page)
    runner = TaskRunner(page, show_dialog=False)
    with qtbot.waitSignal(runner.finished, timeout=5000) as blocker:
        runner.run(asyncio.sleep(60))
        qtbot.waitUntil(lambda: runner.busy)
        runner.cancel()
    assert blocker.args == [False] and not runner.busy and runner.last_error is None


def test_estimate_notes_are_translated(page: PlanPage) -> None:
    from gpudesk.ui.shell.i18n import install_translator

    f = page.form
    choose(f.source, "preset")
    choose(f.preset, "gpt2")
    choose(f.precision, "amp-bf16")
    choose(f.zero, "3")
    assert "ZeRO-3 working set" in page.notes.text()
    install_translator(_app(), "zh_CN")
    try:
        page.recompute()
        assert "ZeRO-3 工作集" in page.notes.text()
    finally:
        install_translator(_app(), "en")


def _app():  # type: ignore[no-untyped-def]
    from PySide6.QtWidgets import QApplication

    return QApplication.instance()


# --------------------------------------------------------------------------- fine-tuning (issue 17)

CONFIGS = Path(__file__).parent / "data" / "hf_configs"


def widget(page: PlanPage, cls, name: str):  # type: ignore[no-untyped-def]
    """A control found the way an accessibility tool finds it: by object name."""
    found = page.findChild(cls, name)
    assert found is not None, name
    return found


def pick(page: PlanPage, name: str, key: str) -> None:
    """Choose an item of the combo ``name`` with the arrow keys, as a keyboard user would."""
    from PySide6.QtCore import Qt
    from PySide6.QtTest import QTest
    from PySide6.QtWidgets import QComboBox

    combo = widget(page, QComboBox, name)
    index = combo.findData(key)
    assert index >= 0, key
    while combo.currentIndex() != index:
        before = combo.currentIndex()
        down = before < index
        QTest.keyClick(combo, Qt.Key.Key_Down if down else Qt.Key.Key_Up)
        assert combo.currentIndex() != before, f"{name} did not move to {key}"


def type_into(qtbot, page: PlanPage, name: str, text: str) -> None:  # type: ignore[no-untyped-def]
    from PySide6.QtWidgets import QLineEdit

    edit = widget(page, QLineEdit, name)
    edit.selectAll()
    qtbot.keyClicks(edit, text)


def row_of(page: PlanPage, gpu: str, count: int = 1) -> int:
    for i, r in enumerate(page.visible_offers()):
        if r.offer.gpu.name == gpu and r.offer.gpu_count == count:
            return i
    raise AssertionError(f"no {count} × {gpu} offer")


def click_row(qtbot, page: PlanPage, row: int) -> None:  # type: ignore[no-untyped-def]
    from PySide6.QtCore import Qt

    index = page.proxy.index(row, 0)
    page.table.scrollTo(index)
    rect = page.table.visualRect(index)
    qtbot.mouseClick(page.table.viewport(), Qt.MouseButton.LeftButton, pos=rect.center())
    assert page.selected_offer() is page.visible_offers()[row]


def llama_full_ft(qtbot, page: PlanPage, model: str = "llama-2-7b") -> None:  # type: ignore[no-untyped-def]
    pick(page, "field_source", "preset")
    pick(page, "field_model", model)
    type_into(qtbot, page, "field_batch", "1")
    type_into(qtbot, page, "field_seq", "1304")
    pick(page, "field_precision", "bf16")


def test_lora_controls_size_the_adapters(qtbot, page: PlanPage) -> None:  # type: ignore[no-untyped-def]
    from PySide6.QtWidgets import QLineEdit

    llama_full_ft(qtbot, page)
    rank = widget(page, QLineEdit, "field_lora_rank")
    assert not rank.isVisible() or not rank.isVisibleTo(page)
    pick(page, "field_finetune", "lora")
    page.show()
    assert widget(page, QLineEdit, "field_lora_rank").isVisibleTo(page)
    type_into(qtbot, page, "field_lora_rank", "16")
    type_into(qtbot, page, "field_lora_targets", "all-linear")
    assert not page.errors
    est = page.shown_estimate
    assert est is not None and est.trainable_params == 39_976_960  # PEFT's count, r=16
    assert est.gradients_bytes == 2 * est.trainable_params
    type_into(qtbot, page, "field_lora_targets", "q,wte")
    assert [e.field for e in page.errors] == ["lora_targets"]
    assert is_invalid(widget(page, QLineEdit, "field_lora_targets"))
    assert "wte" in page.form_errors.text()


def test_qlora_fits_one_24_gb_card_where_full_fine_tuning_does_not(  # type: ignore[no-untyped-def]
        qtbot, page: PlanPage) -> None:
    llama_full_ft(qtbot, page, "llama-2-13b")
    click_row(qtbot, page, row_of(page, "A10G"))
    chosen = page.selected_offer()
    assert chosen is not None and not chosen.fits
    text = page.answers.text()
    assert "QLoRA (nf4-dq base, rank 8) fits on one A10G" in text
    # The suggestion is what the page computes when the user picks it.
    pick(page, "field_finetune", "qlora")
    assert page.selected_offer() is not None and page.selected_offer().fits  # type: ignore[union-attr]
    assert page.shown_estimate is not None
    assert page.shown_estimate.quantized_bytes > 0
    assert any("double quantization" in n for n in page.shown_estimate.notes)


def test_quantized_inference_says_what_is_quantized(qtbot, page: PlanPage) -> None:  # type: ignore[no-untyped-def]
    llama_full_ft(qtbot, page)
    pick(page, "field_mode", "inference")
    pick(page, "field_quantize", "nf4")
    chosen = page.selected_offer()
    assert chosen is not None
    want = sizing.estimate(sizing.preset("llama-2-7b"), sizing.Setup(
        mode="inference", batch=1, seq=1304, gen_tokens=256, precision="bf16", quantize="nf4",
        gpus=chosen.offer.gpu_count))
    assert page.shown_estimate == want and want.quantized_params > 0
    assert "embeddings, norms, biases and the LM head stay 16-bit" in page.notes.text()


def test_attention_and_fsdp_choices(qtbot, page: PlanPage) -> None:  # type: ignore[no-untyped-def]
    from PySide6.QtWidgets import QComboBox

    pick(page, "field_model", "gpt2")
    assert widget(page, QComboBox, "field_attention").currentData() == "sdpa"
    sdpa = page.estimate.activations_bytes  # type: ignore[union-attr]
    pick(page, "field_attention", "eager")
    assert page.estimate.activations_bytes > 1.5 * sdpa  # type: ignore[union-attr]
    pick(page, "field_attention", "flash")
    assert page.estimate.activations_bytes == sdpa  # type: ignore[union-attr]
    type_into(qtbot, page, "field_gpus", "8")
    pick(page, "field_fsdp", "full")
    page.show()
    assert not widget(page, QComboBox, "field_zero").isVisibleTo(page)
    assert page.job is not None and page.job.setup.fsdp == "full"
    assert page.estimate.autocast_cache_bytes == 0  # type: ignore[union-attr]
    assert any("FSDP FULL_SHARD" in n for n in page.estimate.notes)  # type: ignore[union-attr]


def test_load_config_json_button(qtbot, loop, page: PlanPage) -> None:  # type: ignore[no-untyped-def]
    from PySide6.QtCore import Qt
    from PySide6.QtWidgets import QFileDialog
    from PySide6.QtWidgets import QLineEdit
    from PySide6.QtWidgets import QPushButton

    button = widget(page, QPushButton, "loadConfig")
    pick(page, "field_source", "config")
    page.show()
    assert button.isVisibleTo(page) and button.text() == "Load config.json…"
    assert [e.field for e in page.errors] == ["hub"]
    assert page.form_errors.text() == ("Hugging Face model: fetch its config.json, or load a "
                                       "config.json file, first")
    qtbot.mouseClick(button, Qt.MouseButton.LeftButton)
    dialog = page.findChild(QFileDialog)
    assert dialog is not None
    dialog.selectFile(str(CONFIGS / "mistral-7b" / "config.json"))
    dialog.accept()
    qtbot.waitUntil(lambda: page.form.config_model is not None, timeout=5000)
    assert widget(page, QLineEdit, "field_kv_heads").text() == "8"
    assert widget(page, QLineEdit, "field_ffn").text() == "14336"
    assert not page.errors and page.estimate is not None
    assert page.estimate.params == sizing.preset("mistral-7b").parameter_count()
    assert "— load another…" in button.text()
    # The loaded shape survives a restart without reading the file again.
    again = PlanPage(page.settings, load_catalog())
    qtbot.addWidget(again)
    assert again.estimate == page.estimate


def test_no_negative_free_memory_and_t4_is_not_proposed(qtbot, page: PlanPage) -> None:  # type: ignore[no-untyped-def]
    from gpudesk.ui.plan.offers_model import COL

    llama_full_ft(qtbot, page)
    pick(page, "field_precision", "amp-bf16")
    headroom = [page.proxy.index(i, COL["headroom"]).data() for i in range(page.proxy.rowCount())]
    assert any("short" in h for h in headroom)
    assert not any(h.startswith("-") for h in headroom)
    click_row(qtbot, page, row_of(page, "T4"))
    text = page.answers.text()
    assert "The T4 has no amp-bf16 support" in text
    assert "Fewest GPUs" not in text and "fits on one T4" not in text
    assert "free" not in text or "-" not in text.split("free")[0][-12:]


def test_panel_and_offer_give_the_same_per_gpu_figure(qtbot, page: PlanPage) -> None:  # type: ignore[no-untyped-def]
    llama_full_ft(qtbot, page)
    pick(page, "field_precision", "amp-bf16")
    multi = next(i for i, r in enumerate(page.visible_offers())
                 if r.offer.gpu_count > 1 and r.estimate is not None)
    click_row(qtbot, page, multi)
    chosen = page.selected_offer()
    assert chosen is not None and chosen.estimate is not None
    assert page.bar.total_bytes == chosen.estimate.total_bytes
    assert planner.format_bytes(chosen.estimate.total_bytes) in page.answers.text()
    assert {s.key: s.bytes for s in page.bar.segments}["comm_buffers"] > 0  # DDP buckets
    assert {s.key: s.bytes for s in page.bar.segments}["autocast_cache"] > 0


def test_a_hugging_face_model_id_is_fetched_and_sized(qtbot, loop, page: PlanPage,  # type: ignore[no-untyped-def]
                                                      hub: list[str]) -> None:  # noqa: F811
    """Typed like a person: the model id, Fetch; the config.json comes from the (stand-in) Hub
    once, off the GUI thread, and the shape fills the form; a bad id is refused in place."""
    from PySide6.QtCore import Qt
    from PySide6.QtWidgets import QLineEdit
    from PySide6.QtWidgets import QPushButton

    pick(page, "field_source", "config")
    page.show()
    model_id = widget(page, QLineEdit, "hubModelId")
    fetch = widget(page, QPushButton, "fetchConfig")
    assert model_id.isVisibleTo(page) and fetch.text() == "Fetch"
    qtbot.keyClicks(model_id, "not a model id")
    qtbot.mouseClick(fetch, Qt.MouseButton.LeftButton)
    assert hub == [] and model_id.property("invalid") == "true"
    assert "org/name" in model_id.toolTip()
    model_id.clear()
    qtbot.keyClicks(model_id, "Qwen/Qwen2-0.5B")
    qtbot.keyClick(model_id, Qt.Key.Key_Return)
    qtbot.waitUntil(lambda: page.form.config_model is not None, timeout=10000)
    assert hub == ["/Qwen/Qwen2-0.5B/resolve/main/config.json"]
    assert model_id.property("invalid") == "false"
    assert widget(page, QLineEdit, "field_layers").text() == "24"
    assert widget(page, QLineEdit, "field_kv_heads").text() == "2"
    assert page.form.config_model.name == "Qwen/Qwen2-0.5B"
    assert widget(page, QPushButton, "loadConfig").text() == "Qwen/Qwen2-0.5B — load another…"
    assert not page.errors and page.estimate is not None
    # A gated model: the error says what to do, and the form keeps what it had.
    model_id.clear()
    qtbot.keyClicks(model_id, "meta-llama/Llama-2-7b-hf")
    with qtbot.waitSignal(page.runner.finished, timeout=10000):
        qtbot.mouseClick(fetch, Qt.MouseButton.LeftButton)
    box = page.runner.last_box
    assert box is not None and "gated" in box.text() and "config.json" in box.text()
    box.close()
    assert page.form.config_model.name == "Qwen/Qwen2-0.5B"


# ---------------------------------------------------------------- issue 25: says what it knows


def retype(qtbot, edit, text: str) -> None:  # type: ignore[no-untyped-def]
    """Type into a field as a user does: select what is there, type over it."""
    edit.setFocus()
    edit.selectAll()
    if text:
        qtbot.keyClicks(edit, text)
    else:
        qtbot.keyClick(edit, Qt.Key.Key_Backspace)


def test_every_field_says_its_own_error_at_once_in_its_unit(page: PlanPage, qtbot) -> None:  # type: ignore[no-untyped-def]
    page.show()
    f = page.form
    mfu = page.findChild(QLineEdit, "field_mfu")
    batch = page.findChild(QLineEdit, "field_batch")
    seq = page.findChild(QLineEdit, "field_seq")
    retype(qtbot, mfu, "-10")
    retype(qtbot, batch, "0")
    retype(qtbot, seq, "long")
    qtbot.waitUntil(lambda: len(page.errors) == 3)
    assert {e.field for e in page.errors} == {"mfu", "batch", "seq"}
    shown = {name: page.findChild(QLabel, f"error_{name}") for name in ("mfu", "batch", "seq")}
    for name, label in shown.items():  # each under its own field, all at once
        assert label.isVisible() and label.text(), name
        assert is_invalid(f.edits[name])
    assert shown["mfu"].text() == "enter a percentage between 1 and 100"  # percent, as typed
    assert "between 0 and 1" not in page.form_errors.text()
    assert shown["batch"].text() == "enter a whole number of at least 1"
    assert "whole number" in shown["seq"].text()
    # every red field has its text; no text stays without its red field
    for name, edit in f.edits.items():
        label = page.findChild(QLabel, f"error_{name}")
        assert is_invalid(edit) == (label.isVisible() and bool(label.text())), name
    retype(qtbot, mfu, "40")
    qtbot.waitUntil(lambda: not shown["mfu"].isVisible())
    assert not is_invalid(mfu) and len(page.errors) == 2
    retype(qtbot, batch, "4")
    retype(qtbot, seq, "512")
    qtbot.waitUntil(lambda: not page.errors)
    assert not any(label.isVisible() for label in shown.values())
    assert page.job is not None and page.job.work.mfu == 0.4


def test_a_bad_max_price_says_why_next_to_it(page: PlanPage, qtbot) -> None:  # type: ignore[no-untyped-def]
    page.show()
    box = page.findChild(QLineEdit, "offersMaxPrice")
    retype(qtbot, box, "cheap")
    why = page.findChild(QLabel, "maxPriceError")
    qtbot.waitUntil(why.isVisible)
    assert is_invalid(box) and "price" in why.text()
    retype(qtbot, box, "2.5")
    qtbot.waitUntil(lambda: not why.isVisible())
    assert not is_invalid(box)


def test_filtering_to_one_provider_updates_the_selected_offer(page: PlanPage, qtbot) -> None:  # type: ignore[no-untyped-def]
    page.show()
    qtbot.waitExposed(page)
    table = page.findChild(QTableView, "offersTable")
    offers = page.visible_offers()
    row = next(i for i, r in enumerate(offers) if r.offer.provider == "aws" and i > 2)
    chosen = offers[row].offer
    qtbot.mouseClick(table.viewport(), Qt.MouseButton.LeftButton,
                     pos=table.visualRect(page.proxy.index(row, 1)).center())
    machine = page.findChild(QLabel, "summary_machine")
    assert machine.text().startswith(f"{chosen.instance_type} · AWS")
    provider = page.findChild(QComboBox, "offersProvider")
    provider.setFocus()
    while provider.currentData() != "tencent":
        qtbot.keyClick(provider, Qt.Key.Key_Down)
    shown = page.visible_offers()
    assert shown and all(r.offer.provider == "tencent" for r in shown)
    selected = page.selected_offer()
    assert selected is not None and selected in shown  # the panel shows a row of the table
    assert "· Tencent Cloud ·" in machine.text() and "AWS" not in machine.text()
    assert machine.text().startswith(selected.offer.instance_type)
    # a filter that leaves nothing leaves nothing selected
    retype(qtbot, page.findChild(QLineEdit, "offersMaxPrice"), "0.0001")
    qtbot.waitUntil(lambda: page.proxy.rowCount() == 0)
    assert page.selected_offer() is None and machine.text() == "—"
    assert not page.launch_button.isEnabled()
    # and the user's own choice comes back with the filters that allow it
    retype(qtbot, page.findChild(QLineEdit, "offersMaxPrice"), "")
    provider.setFocus()
    while provider.currentData() != "":
        qtbot.keyClick(provider, Qt.Key.Key_Up)
    qtbot.waitUntil(lambda: machine.text().startswith(f"{chosen.instance_type} · AWS"))


def test_the_chosen_offer_stays_in_view_after_a_filter_or_a_sort(page: PlanPage, qtbot) -> None:  # type: ignore[no-untyped-def]
    """Issue 31 item 18: after the provider or the sort changes, the selected (cheapest) row
    is scrolled into view, not left above the table's viewport."""
    page.show()
    qtbot.waitExposed(page)
    table = page.table

    def chosen_in_view() -> bool:
        rows = table.selectionModel().selectedRows()
        if not rows:
            return False
        rect = table.visualRect(rows[0])
        return table.viewport().rect().intersects(rect) and rect.height() > 0

    for change in (lambda: choose(page.provider, "aws"), lambda: choose(page.sort, "price"),
                   lambda: choose(page.provider, "")):
        bar = table.verticalScrollBar()
        bar.setValue(bar.maximum())  # the user had scrolled to the bottom
        change()
        qtbot.waitUntil(chosen_in_view)


def test_a_sort_chosen_before_the_prices_arrive_is_kept_and_applied(qtbot) -> None:  # type: ignore[no-untyped-def]
    """At start the offers table waits for the catalog (it is made after the first screen);
    a sort the user picks meanwhile is remembered and is the table's order once it comes."""
    from PySide6.QtTest import QTest

    settings = Settings()
    p = PlanPage(settings)  # no catalog yet, as at the window's start
    qtbot.addWidget(p)
    p.resize(1280, 800)
    p.show()
    assert not p.table.isVisible() and p.sort.isVisible()
    assert p.selected_offer() is None
    p.sort.setFocus()
    while p.sort.currentData() != "price":
        QTest.keyClick(p.sort, Qt.Key.Key_Down)
    assert settings.last_plan["sort"] == "price"

    p.set_catalog(load_catalog())  # the prices arrive
    assert p.table.isVisible()
    got = p.visible_offers()
    assert len(got) > 10
    assert [sort_key(r, "price") for r in got] == sorted(sort_key(r, "price") for r in got)
    assert p.selected_offer() is not None  # the first row, chosen as always
