"""The run launcher's own log lines: written in English on the machine, shown translated."""

from __future__ import annotations

from PySide6.QtCore import QCoreApplication
from PySide6.QtCore import QTranslator

from gpudesk.services.runs import run_launcher_script as script
from gpudesk.services.runs.launcher_lines import said_in_log
from gpudesk.ui.run.run_log_view import RunLogView

ZH = {
    script.SAID_RESUMING: "恢复运行（第 {attempt} 次）",
    script.SAID_CANNOT_START: "无法启动 {program}：{error}",
}


class _Chinese(QTranslator):
    """Two sentences of zh_CN, as the .qm would give them (context "Runs" only)."""

    def translate(self, context: str, source: str, disambiguation: str | None = None,
                  n: int = -1) -> str:
        # what a .qm gives: the translation, else the source itself (an empty answer
        # from a Python translator would read as "translated to nothing")
        return ZH.get(source, source) if context == "Runs" else source


def test_each_launcher_line_reads_back_with_its_values() -> None:
    line = "gpudesk: " + script.SAID_CANNOT_START.format(
        program="/usr/bin/python3", error="[Errno 2] No such file or directory: 'x'")
    said = said_in_log(line)
    assert said is not None and said.template == script.SAID_CANNOT_START
    assert said.values == {"program": "/usr/bin/python3",
                           "error": "[Errno 2] No such file or directory: 'x'"}
    assert str(said) == line.removeprefix("gpudesk: ")
    resumed = said_in_log("gpudesk: " + script.SAID_RESUMING.format(attempt=3))
    assert resumed is not None and resumed.values == {"attempt": "3"}
    assert said_in_log("gpudesk: resuming run") is None  # not the whole sentence
    assert said_in_log("resuming run (attempt 3)") is None  # the script's own output


def test_log_view_shows_launcher_lines_translated_even_when_split(qtbot) -> None:  # type: ignore[no-untyped-def]
    translator = _Chinese()
    app = QCoreApplication.instance()
    assert app is not None
    app.installTranslator(translator)
    try:
        view = RunLogView()
        qtbot.addWidget(view)
        log = (b"gpudesk: resuming run (attempt 2)\nepoch 1 loss 0.5\n"
               b"gpudesk: could not start torchrun: [Errno 2] No such file\n")
        cut = log.index(b"(attempt")  # the chunk ends inside the launcher's line
        view.append_bytes(log[:cut])
        assert "resuming" not in view.text()  # held until its end arrives
        view.append_bytes(log[cut:])
        assert view.text().splitlines() == [
            "gpudesk: 恢复运行（第 2 次）", "epoch 1 loss 0.5",
            "gpudesk: 无法启动 torchrun：[Errno 2] No such file"]
    finally:
        app.removeTranslator(translator)
