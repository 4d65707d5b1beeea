"""The "Trace my model" dialog runs a real fake-tensor trace off the GUI thread."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

pytest.importorskip("torch")
pytest.importorskip("qasync")

from gpudesk import sizing  # noqa: E402
from gpudesk.services.plan.planner import format_bytes  # noqa: E402
from gpudesk.ui.plan.trace_dialog import TraceDialog  # noqa: E402

FIXTURES = Path(__file__).parent / "fixtures_models.py"


def test_trace_dialog_shows_measured_lines(qtbot, loop) -> None:  # type: ignore[no-untyped-def]
    dialog = TraceDialog(sizing.Setup(batch=32, precision="fp32", optimizer="adam"))
    qtbot.addWidget(dialog)
    dialog.target.setText(f"{FIXTURES}:make_mlp")
    dialog.input_spec.setText("float32[8,256]")
    # The result is shown before the busy state ends (a done-callback one
    # loop turn later): wait for the runner to finish, not for the result.
    with qtbot.waitSignal(dialog.runner.finished, timeout=60_000) as finished:
        dialog.run_button.click()
    assert finished.args == [True]
    result = dialog.trace_result
    assert result is not None
    assert result.weights_bytes == 4 * result.params
    assert result.optimizer_bytes == 8 * result.params
    item = dialog.table.item(0, 0)
    assert item is not None and item.text() == format_bytes(result.weights_bytes)
    assert dialog.run_button.isEnabled()  # busy state ended


def test_trace_dialog_failure_is_shown_in_words(qtbot, loop) -> None:  # type: ignore[no-untyped-def]
    dialog = TraceDialog(sizing.Setup())
    qtbot.addWidget(dialog)
    dialog.target.setText("no_such_module_xyz:build")
    dialog.input_spec.setText("float32[1,4]")
    with qtbot.waitSignal(dialog.runner.finished, timeout=60_000):
        dialog.run_button.click()
    assert dialog.trace_result is None
    assert "no_such_module_xyz" in dialog.status.text()
    assert "Traceback" not in dialog.status.text()


def test_trace_dialog_needs_both_fields(qtbot) -> None:  # type: ignore[no-untyped-def]
    dialog = TraceDialog(sizing.Setup())
    qtbot.addWidget(dialog)
    dialog.run_button.click()
    assert dialog.trace_result is None and not dialog.runner.busy


def test_tools_menu_opens_trace_with_the_plan_setup(qtbot) -> None:  # type: ignore[no-untyped-def]
    from gpudesk.services.cloud.catalog import load_catalog
    from gpudesk.services.core.settings import Settings
    from gpudesk.ui.shell.main_window import MainWindow

    window = MainWindow(Settings(), load_catalog())
    qtbot.addWidget(window)
    window.plan.form.edits["batch"].setText("6")
    window.trace_action.trigger()
    dialog = window.findChild(TraceDialog)
    assert dialog is not None and dialog.isVisible()
    assert dialog._setup.batch == 6


def test_cancel_kills_the_trace_process(qtbot, loop, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    slow = tmp_path / "slow_model.py"
    slow.write_text("import time\n\ndef build():\n    time.sleep(120)\n")
    dialog = TraceDialog(sizing.Setup())
    qtbot.addWidget(dialog)
    dialog.target.setText(f"{slow}:build")
    dialog.input_spec.setText("float32[1,4]")
    dialog.run_button.click()
    qtbot.waitUntil(lambda: dialog.runner.busy and dialog.cancel_button.isEnabled())
    with qtbot.waitSignal(dialog.runner.finished, timeout=30_000):
        dialog.cancel_button.click()
    assert dialog.trace_result is None
    assert dialog.status.text() == "Trace cancelled."

    def child_alive() -> bool:
        found = subprocess.run(["pgrep", "-f", str(slow)], capture_output=True, text=True)
        return bool(found.stdout.strip())

    qtbot.waitUntil(lambda: not child_alive(), timeout=10_000)
