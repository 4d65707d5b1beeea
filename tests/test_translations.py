"""Simplified Chinese: complete, compiled, and switchable while the window is open."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

pytest.importorskip("PySide6")

from PySide6.QtCore import QCoreApplication  # noqa: E402
from PySide6.QtCore import Qt  # noqa: E402

from gpudesk.services.cloud.catalog import load_catalog  # noqa: E402
from gpudesk.services.core.settings import Settings  # noqa: E402
from gpudesk.ui.plan.offers_model import COL  # noqa: E402
from gpudesk.ui.shell.i18n import current_language  # noqa: E402
from gpudesk.ui.shell.i18n import install_translator  # noqa: E402
from gpudesk.ui.shell.main_window import MainWindow  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
TS = ROOT / "resources" / "translations" / "gpudesk_zh_CN.ts"
QM = TS.with_suffix(".qm")
KNOWN_CONTEXTS = {"AboutDialog", "AccountsPage", "Answers", "BillingTray", "CloudAccountBox",
                  "AllowMeOffer", "CrashDialog", "Credentials", "HostKey", "InstancesModel",
                  "InstancesPage", "LocalDateAxis", "DataPage", "DiskPlan", "DiskNeeded",
                  "LaunchDialog", "Launcher", "MainWindow", "MemoryBar", "OffersModel",
                  "OwnMachinesBox", "OwnMachineDialog", "PlanForm", "PlanPage", "Planner",
                  "ProviderError", "Runs", "SpotPanel", "SpotRates",
                  "RunPage", "RunControl", "HostKeyQuestion", "Agent", "Bootstrap", "BudgetAlerts",
                  "BudgetBanner", "SpotRecovery", "SshConfig", "Telemetry", "DashboardPage",
                  "GpuPlots", "OverviewPage", "WatchPage",
                  "SettingsDialog", "SizingError", "SizingNote", "Ssh", "Sync", "TaskRunner",
                  "TraceDialog", "WelcomeDialog", "Guard", "Catalog", "MachineCombo",
                  "BudgetDialog", "RunOutputs", "Storage", "RunQueue", "RunQueueView",
                  "RunMachines", "KeepAlive", "Budget"}


def qt_tool(name: str) -> str | None:
    local = Path(sys.executable).parent / name
    return str(local) if local.exists() else shutil.which(name)


def entries(ts: Path) -> list[tuple[str, str, ET.Element]]:
    out = []
    for context in ET.parse(ts).getroot().iter("context"):
        for message in context.iter("message"):
            out.append((context.findtext("name", ""), message.findtext("source", ""),
                        message.find("translation")))  # type: ignore[arg-type]
    return out


@pytest.fixture(autouse=True)
def _english_after(qapp, tmp_path, monkeypatch):  # type: ignore[no-untyped-def]
    monkeypatch.setenv("GPUDESK_HOME", str(tmp_path / "home"))
    yield
    install_translator(qapp, "en")


def test_ts_has_no_unfinished_entries() -> None:
    found = entries(TS)
    assert len(found) > 100
    for context, source, translation in found:
        assert translation is not None and translation.get("type") is None, (context, source)
        assert (translation.text or "").strip(), (context, source)
        # Placeholders must survive, or .format() raises at run time.
        assert set(re.findall(r"{\w+}", source)) == set(re.findall(r"{\w+}", translation.text
                                                                   or "")), (context, source)


def test_every_source_string_is_translated(tmp_path: Path) -> None:
    """Run lupdate afresh: a string added to the code without a translation fails here."""
    lupdate = qt_tool("pyside6-lupdate")
    if lupdate is None:
        pytest.skip("pyside6-lupdate is not installed")
    fresh = tmp_path / "fresh.ts"
    shutil.copy(TS, fresh)
    sources = sorted(str(p.relative_to(ROOT)) for p in (ROOT / "gpudesk").rglob("*.py"))
    subprocess.run([lupdate, *sources, "-no-obsolete", "-ts", str(fresh)], cwd=ROOT,
                   check=True, capture_output=True)
    found = entries(fresh)
    missing = [(c, s) for c, s, t in found if t is None or t.get("type") or not t.text]
    assert not missing, "run scripts/update_translations.py and translate: " + repr(missing)
    # lupdate's Python parser can misattribute a context; such strings never translate.
    assert {c for c, _, _ in found} <= KNOWN_CONTEXTS


def test_qm_is_up_to_date(tmp_path: Path) -> None:
    lrelease = qt_tool("pyside6-lrelease")
    if lrelease is None:
        pytest.skip("pyside6-lrelease is not installed")
    out = tmp_path / "check.qm"
    subprocess.run([lrelease, str(TS), "-qm", str(out)], check=True, capture_output=True)
    assert out.read_bytes() == QM.read_bytes(), "run scripts/update_translations.py"


def test_install_translator_translates_core_messages(qapp) -> None:  # type: ignore[no-untyped-def]
    assert install_translator(qapp, "zh_CN") == "zh_CN"
    assert current_language() == "zh_CN"
    text = QCoreApplication.translate("SizingError",
                                      "{heads} heads do not divide hidden size {hidden}")
    assert text.format(heads=7, hidden=768) == "7 个头无法整除隐藏维度 768"
    assert install_translator(qapp, "en") == "en"
    assert QCoreApplication.translate("Planner", "no spot price known for this offer") == (
        "no spot price known for this offer")


def test_switching_language_retranslates_window(qtbot, qapp) -> None:  # type: ignore[no-untyped-def]
    window = MainWindow(Settings(language="en"), load_catalog())
    qtbot.addWidget(window)
    nav = window.nav.item(0)
    label = window.plan.form.labels["batch"]
    assert nav.text() == "Plan" and label.text() == "Batch per GPU"
    window.set_language("zh_CN")
    qtbot.waitUntil(lambda: window.nav.item(0).text() == "规划")
    assert label.text() == "每卡批大小"
    assert window.file_menu.title() == "文件(&F)"
    assert "价格日期" in window.catalog_label.text()
    assert window.plan.model.headerData(COL["cost"], Qt.Orientation.Horizontal) == "完成总费用"
    assert window.settings.language == "zh_CN"
    form = window.plan.form
    form.source.setCurrentIndex(form.source.findData("shape"))
    form.edits["heads"].setText("7")  # errors show in Chinese too
    assert "注意力头数: 7 个头无法整除隐藏维度 768" in window.plan.form_errors.text()
    window.set_language("en")
    qtbot.waitUntil(lambda: window.nav.item(0).text() == "Plan")
    assert label.text() == "Batch per GPU"


def test_core_names_and_guard_sentences_follow_the_language(qapp) -> None:  # type: ignore[no-untyped-def]
    """A cloud's title, put by the core into many messages, and the guard's sentences
    (Qt-free, marked with QT_TRANSLATE_NOOP) show in the window's language."""
    from gpudesk.services.cloud import guard
    from gpudesk.services.cloud.accounts import title
    from gpudesk.services.cloud.catalog import provider_title
    from gpudesk.services.money.ledger import Machine
    from gpudesk.ui.widgets.task_runner import format_template

    m = Machine(id="m-1", provider="tencent", currency="CNY", budget=200.0,
                on_budget="terminate", enforced_by="agent,cloud-timer",
                cloud_timer_at=1_767_225_600.0)
    assert install_translator(qapp, "zh_CN") == "zh_CN"
    assert (provider_title("tencent"), title("aliyun"), title("aws")) == ("腾讯云", "阿里云", "AWS")
    said = [format_template(guard.CONTEXT, t, v) for t, v in guard.sentences(m)]
    assert said[0].startswith("花费达到 200.00 CNY 时，腾讯云会在 UTC 时间 2026-01-01 00:00 "
                              "自行销毁")
    assert "销毁这台机器" in said[-1] and "terminate" not in said[-1]
    assert install_translator(qapp, "en") == "en"
    assert provider_title("tencent") == "Tencent Cloud"
    assert guard.english(m)[0].startswith("At 200.00 CNY Tencent Cloud itself terminates")
