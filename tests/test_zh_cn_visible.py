"""简体中文, all of it (issue 25): every page and dialog of the window, opened in zh_CN with
real data (an own SSH machine and cloud machines in the ledger, accounts, a run, budgets),
shows no English word outside a short list of names.

The ``.ts`` completeness test only sees strings that are marked for translation; this one
reads what the window actually shows — labels, buttons, group boxes, tool tips, window
titles, table and list cells and headers, combo items, menus, the status bar, plot axes —
and the ``gpudesk:`` lines gpudesk writes into the run log, so an unmarked string fails here.
"""

from __future__ import annotations

import functools
import re
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("pytestqt")

from PySide6.QtCore import QAbstractItemModel  # noqa: E402
from PySide6.QtCore import QAbstractListModel  # noqa: E402
from PySide6.QtCore import QCoreApplication  # noqa: E402
from PySide6.QtCore import QEvent  # noqa: E402
from PySide6.QtCore import QModelIndex  # noqa: E402
from PySide6.QtCore import Qt  # noqa: E402
from PySide6.QtGui import QAction  # noqa: E402
from PySide6.QtWidgets import QAbstractButton  # noqa: E402
from PySide6.QtWidgets import QAbstractItemView  # noqa: E402
from PySide6.QtWidgets import QAbstractSpinBox  # noqa: E402
from PySide6.QtWidgets import QApplication  # noqa: E402
from PySide6.QtWidgets import QComboBox  # noqa: E402
from PySide6.QtWidgets import QDoubleSpinBox  # noqa: E402
from PySide6.QtWidgets import QGroupBox  # noqa: E402
from PySide6.QtWidgets import QHeaderView  # noqa: E402
from PySide6.QtWidgets import QLabel  # noqa: E402
from PySide6.QtWidgets import QLineEdit  # noqa: E402
from PySide6.QtWidgets import QMenu  # noqa: E402
from PySide6.QtWidgets import QMessageBox  # noqa: E402
from PySide6.QtWidgets import QPlainTextEdit  # noqa: E402
from PySide6.QtWidgets import QSpinBox  # noqa: E402
from PySide6.QtWidgets import QTabBar  # noqa: E402
from PySide6.QtWidgets import QTextEdit  # noqa: E402
from PySide6.QtWidgets import QWidget  # noqa: E402

from gpudesk.services.cloud.catalog import load_catalog  # noqa: E402
from gpudesk.services.core.settings import Settings  # noqa: E402
from gpudesk.services.money.ledger import Account  # noqa: E402
from gpudesk.services.money.ledger import Ledger  # noqa: E402
from gpudesk.services.money.ledger import Machine  # noqa: E402
from gpudesk.ui.shell.i18n import install_translator  # noqa: E402
from gpudesk.ui.shell.main_window import MainWindow  # noqa: E402

# Names that stay as they are in Chinese text: products, API and class names, acronyms,
# units. Compared case-sensitively, as they are written; common English words never.
ALLOWED = {
    "gpudesk", "AWS", "EC2", "ECS", "CVM", "GPU", "GPUs", "CPU", "vCPU", "SSH", "CUDA",
    "NVIDIA", "PyTorch", "torch", "torchrun", "Python", "python", "PySide", "Qt", "qasync",
    "pyqtgraph", "keyring", "numpy", "platformdirs", "LGPL", "GPL", "GNU", "BSD", "MIT",
    "PSF", "AND", "Zlib", "LICENSE", "TensorBoard", "Jupyter", "FSDP", "ZeRO", "LoRA",
    "QLoRA", "SGD", "Adam", "AdamW", "Adafactor", "Paged", "GradScaler", "FakeTensor",
    "Transformer", "Eager", "SDPA", "FFN", "token", "alpha", "GiB", "MiB", "TFLOPS", "USD",
    "CNY", "UTC", "API", "CSV", "PID", "pid", "MFU", "VPC", "RAM", "SSD", "English", "ssh", "RTX",
    "sshd", "pip", "venv", "KWallet", "SecretId", "SecretKey", "AccessKey", "Secret",
    "StopInstances", "StopCharging", "KeepCharging", "SpotAsPriceGo", "DescribePrice",
    "Ubuntu", "COS", "OSS", "AMI", "autocast",
}
# Names of more than one word.
PHRASES = re.compile(r"Secret Service|GNOME Keyring|Hugging Face|Credential Manager|"
                     r"Deep Learning AMI")
# What a user types, quoted in a sentence: a shell command, an option value.
TYPED = re.compile(r"`[^`]*`|sudo ubuntu-drivers install|"
                   r"(?:sudo )?apt(?:-get)? install [\w.+-]+|(?:python3? -m )?pip install "
                   r"[^\s，。；)）]+|\battention\b(?= 或)")
# Widgets that list the user's own names: the AWS profiles of ~/.aws/credentials ("default").
DATA_WIDGETS = {"profile"}
TOKEN = re.compile(r"[A-Za-z0-9_./\\~@:+#=%'’\-]+")
WORD = re.compile(r"[A-Za-z]{3,}")
EDGE = ".,;:!?'’\"“”()[]{}<>…+="  # sentence punctuation around a word
LEFT_EDGE = "'’\"“”([{<"  # a leading dash, dot, slash or tilde marks an option or a path
ID_MARK = re.compile(r"[0-9._/\\~@:#=%\-]")
# A cloud key id as gpudesk masks it: "AKIA…WXYZ", "LTAI…0123".
MASKED_KEY = re.compile(r"\b[A-Za-z0-9]{2,}…[A-Za-z0-9]{2,}\b")


def english_words(text: str) -> list[str]:
    """The English words in ``text``: runs of 3+ ASCII letters that are not an allowed name
    and not part of an id-like token (digits, dots, dashes, slashes, underscores...)."""
    text = re.sub(r"<[^>]*>", " ", text)  # rich text
    text = re.sub(r"&[a-zA-Z]+;|&#\d+;", " ", text).replace("&", "")  # entities, accelerators
    text = PHRASES.sub(" ", TYPED.sub(" ", text))
    text = MASKED_KEY.sub(" ", text)  # a key id shown masked, as the keyring holds it
    found = []
    for token in TOKEN.findall(text):
        bare = token.lstrip(LEFT_EDGE).rstrip(EDGE)
        if bare.endswith(("'s", "’s")):
            bare = bare[:-2]
        if not bare or bare in ALLOWED or ID_MARK.search(bare):
            continue
        found += [w for w in WORD.findall(bare) if w not in ALLOWED]
    return found


def test_english_words_finds_words_not_names_or_ids() -> None:
    assert english_words("Up to date.") == ["date"]
    assert english_words("腾讯云 Tencent Cloud") == ["Tencent", "Cloud"]
    assert english_words("g5.xlarge us-east-1 ap-guangzhou GN7.2XLARGE32 12.5 GiB") == []
    assert english_words("<b>AWS</b>: 机器 (&P) ~/gpudesk train.py ssh://a@b:22") == []
    assert english_words("机器own") == ["own"]
    assert english_words("例如 --epochs 10，或 ~/data 与 .venv") == []
    assert english_words("例如：sudo apt install gnome-keyring。") == []
    assert english_words("或用 `gpudesk bootstrap --on TARGET` 创建") == []


# --------------------------------------------------------------------------- collecting

def _columns(model: QAbstractItemModel, parent: QModelIndex) -> int:
    if isinstance(model, QAbstractListModel):  # its columnCount is private in PySide6
        return 1
    return model.columnCount(parent)


def _model_texts(model: QAbstractItemModel, parent: QModelIndex, out: list[str],
                 limit: int = 400) -> None:
    rows = min(model.rowCount(parent), limit)
    cols = _columns(model, parent)
    for row in range(rows):
        for col in range(cols):
            index = model.index(row, col, parent)
            for role in (Qt.ItemDataRole.DisplayRole, Qt.ItemDataRole.ToolTipRole):
                value = index.data(role)
                if isinstance(value, str):
                    out.append(value)
            if col == 0 and not isinstance(model, QAbstractListModel) and \
                    model.rowCount(index) > 0:
                _model_texts(model, index, out, limit)


def _header_texts(model: QAbstractItemModel, out: list[str]) -> None:
    root = QModelIndex()
    for orientation, count in ((Qt.Orientation.Horizontal, _columns(model, root)),
                               (Qt.Orientation.Vertical, min(model.rowCount(root), 50))):
        for section in range(count):
            for role in (Qt.ItemDataRole.DisplayRole, Qt.ItemDataRole.ToolTipRole):
                value = model.headerData(section, orientation, role)
                if isinstance(value, str):
                    out.append(value)


def _menu_texts(menu: QMenu, out: list[str]) -> None:
    out.append(menu.title())
    for action in menu.actions():
        out += [action.text(), action.toolTip()]
        if action.menu() is not None:
            _menu_texts(action.menu(), out)  # type: ignore[arg-type]


def _plot_texts(widget: QWidget, out: list[str]) -> None:
    try:
        import pyqtgraph as pg
    except ImportError:  # pragma: no cover - a dependency
        return
    if not isinstance(widget, pg.GraphicsView):
        return
    for item in widget.scene().items():
        if isinstance(item, pg.AxisItem):
            out.append(str(item.labelText or ""))
        elif isinstance(item, pg.LabelItem):
            out.append(str(item.text or ""))
        elif isinstance(item, pg.TextItem):
            out.append(item.textItem.toPlainText())


def widget_texts(widget: QWidget) -> list[str]:
    """What one widget shows in words (not what the user typed into it)."""
    out: list[str] = [widget.toolTip(), widget.statusTip(), widget.whatsThis()]
    if widget.isWindow():
        out.append(widget.windowTitle())
    if isinstance(widget, QLabel):
        out.append(widget.text())
    if isinstance(widget, QAbstractButton):
        out.append(widget.text())
    if isinstance(widget, QGroupBox):
        out.append(widget.title())
    if isinstance(widget, QLineEdit):
        out.append(widget.placeholderText())
    if isinstance(widget, QAbstractSpinBox):
        out.append(widget.specialValueText())
        if isinstance(widget, QSpinBox | QDoubleSpinBox):
            out += [widget.prefix(), widget.suffix()]
    if isinstance(widget, QComboBox):
        for i in range(widget.count()):
            out.append(widget.itemText(i))
            tip = widget.itemData(i, Qt.ItemDataRole.ToolTipRole)
            if isinstance(tip, str):
                out.append(tip)
        out.append(widget.placeholderText())
    if isinstance(widget, QTabBar):
        for i in range(widget.count()):
            out += [widget.tabText(i), widget.tabToolTip(i)]
    if isinstance(widget, QAbstractItemView) and widget.model() is not None:
        _header_texts(widget.model(), out)
        _model_texts(widget.model(), QModelIndex(), out)
    if isinstance(widget, QPlainTextEdit | QTextEdit):
        out.append(widget.placeholderText())
        # the log and reports are the script's and Python's words; gpudesk's own lines
        # in them are gpudesk's to translate
        out += [line for line in widget.toPlainText().splitlines()
                if line.startswith("gpudesk:")]
    if isinstance(widget, QMessageBox):
        out += [widget.text(), widget.informativeText()]
    if isinstance(widget, QMenu):
        _menu_texts(widget, out)
    _plot_texts(widget, out)
    return [t for t in out if t]


def _in_combo(widget: QWidget) -> bool:
    parent = widget.parentWidget()
    while parent is not None:
        if isinstance(parent, QComboBox):
            return True
        parent = parent.parentWidget()
    return False


def window_texts(root: QWidget) -> list[tuple[str, str]]:
    """(where, text) for ``root`` and every widget and action under it."""
    found: list[tuple[str, str]] = []
    for widget in [root, *root.findChildren(QWidget)]:
        name = widget.objectName()
        if name in DATA_WIDGETS or name.startswith("qt_") or isinstance(widget, QHeaderView) \
                or (isinstance(widget, QAbstractItemView) and _in_combo(widget)):
            continue  # Qt's own parts, and views of a model read through its owner
        where = f"{type(widget).__name__}#{widget.objectName()}"
        found += [(where, t) for t in widget_texts(widget)]
    for action in root.findChildren(QAction):
        if not isinstance(action.parent(), QWidget):
            continue  # pyqtgraph's scene menu ("Export..."): never shown, the plots' menus are off
        found += [(f"QAction#{action.objectName()}", t)
                  for t in (action.text(), action.toolTip()) if t]
    return found


def english_in(found: list[tuple[str, str]]) -> list[str]:
    """One line per distinct text with English in it: where, the words, the text."""
    bad: dict[tuple[str, str], str] = {}
    for where, text in found:
        words = " ".join(dict.fromkeys(english_words(citations_removed(text))))
        if words and (where, words) not in bad:
            bad[where, words] = f"{where}: {words}  <<{text[:200]}>>"
    return sorted(bad.values())


def citations_removed(text: str) -> str:
    """``text`` without the catalog's citations of where its prices come from (the AWS
    Price List, a cloud's price page): data quoted as published, like a reference."""
    for source in _price_sources():
        text = text.replace(source, " ")
    return text


@functools.cache
def _price_sources() -> tuple[str, ...]:
    return tuple(sorted({o.price_source for o in load_catalog().offers if o.price_source},
                        key=len, reverse=True))


# --------------------------------------------------------------------------- the data

NOW = time.time()


def fill_ledger(ledger: Ledger) -> dict[str, Machine]:
    """An own SSH machine and a machine in each cloud, with budgets and accounts."""
    ledger.save_account(Account("aws", "AKIA…WXYZ", account="123456789012",
                                principal="arn:aws:iam::123456789012:user/alice",
                                can_launch=True, verified_at=NOW - 3600, added_at=NOW - 86400))
    ledger.save_account(Account("tencent", "AKID…abcd", account="100012345678",
                                can_launch=True, verified_at=NOW - 3600, added_at=NOW - 86400))
    ledger.save_account(Account("aliyun", "LTAI…0123", account="1234567890123456",
                                can_launch=False, launch_checked=False,
                                verified_at=NOW - 3600, added_at=NOW - 86400))
    machines = {
        "own": Machine(id="own-1", provider="own", name="lab-box", public_ip="192.0.2.10",
                       ssh_user="alice", ssh_port=22, gpus=2, gpu="RTX 4090",
                       state="ready", origin="added", launched_at=NOW - 7200,
                       key_file="/home/alice/.ssh/id_ed25519",
                       remote_python="/opt/venv/bin/python", remote_root="~/gpudesk"),
        "aws": Machine(id="m-aws-1", provider="aws", region="us-east-1", zone="us-east-1a",
                       instance_type="g5.xlarge", gpu="A10G", gpus=1, market="spot",
                       price_per_hour=0.45, currency="USD", cloud_id="i-0123456789abcdef0",
                       state="running", public_ip="198.51.100.7", ssh_user="ubuntu",
                       launched_at=NOW - 5400, running_since=NOW - 5400, disk_gb=100,
                       budget=30.0, on_budget="stop", enforced_by="agent,shutdown-behavior",
                       host_key_fingerprint="SHA256:abc"),
        "tencent": Machine(id="m-tc-1", provider="tencent", region="ap-guangzhou",
                           zone="ap-guangzhou-3", instance_type="GN7.2XLARGE32", gpu="T4",
                           gpus=1, price_per_hour=8.68, currency="CNY",
                           cloud_id="ins-abcd1234", state="running",
                           public_ip="203.0.113.20", ssh_user="ubuntu",
                           launched_at=NOW - 3600, running_since=NOW - 3600, disk_gb=50,
                           budget=200.0, on_budget="terminate",
                           enforced_by="agent,cloud-timer", cloud_timer_at=NOW + 20 * 3600),
        "aliyun": Machine(id="m-ali-1", provider="aliyun", region="cn-hangzhou",
                          zone="cn-hangzhou-i", instance_type="ecs.gn6i-c4g1.xlarge",
                          gpu="T4", gpus=1, price_per_hour=9.5, currency="CNY",
                          cloud_id="i-bp1abcdef", state="stopped", public_ip="203.0.113.30",
                          ssh_user="root", launched_at=NOW - 9000, billed_seconds=3600,
                          disk_gb=40, budget=100.0, on_budget="stop", enforced_by="agent"),
    }
    for m in machines.values():
        ledger.add(m, step="intent")
        ledger.update(m.id, step="state", state=m.state)
    return machines


def a_record(k: int, t: float) -> dict[str, Any]:
    return {"seq": k + 1, "t": t, "src": "nvidia-smi",
            "gpus": [{"index": i, "uuid": f"GPU-{i}", "name": "NVIDIA A10G", "util": 90 + i,
                      "mem_used_mib": 20000, "mem_total_mib": 23028, "temp_c": 60,
                      "power_w": 200.0, "power_limit_w": 300} for i in range(2)],
            "procs": [{"pid": 4100 + i, "gpu_uuid": f"GPU-{i}", "gpu_index": i,
                       "name": "python3", "mem_used_mib": 19000} for i in range(2)]}


def no_cloud(_name: str) -> Any:
    raise AssertionError("this test asks no cloud")


@pytest.fixture
def window(qtbot, qapp, loop, tmp_path: Path, echo) -> Iterator[MainWindow]:  # type: ignore[no-untyped-def]
    assert install_translator(qapp, "zh_CN") == "zh_CN"
    ledger = Ledger()
    fill_ledger(ledger)
    settings = Settings(language="zh_CN", welcomed=True, monthly_budget_usd=100.0,
                        machine_budget_usd=30.0, budget_action="terminate", currency="CNY")
    w = MainWindow(settings, load_catalog(), ledger=ledger, providers=no_cloud)
    w._may_quit = True  # type: ignore[attr-defined] - closing does not ask about the billing
    qtbot.addWidget(w)
    w.show()
    qtbot.waitExposed(w)
    yield w
    for dialog in w.findChildren(QWidget):
        if dialog.isWindow() and dialog is not w and dialog.isVisible():
            dialog.close()
    w.close()
    w.deleteLater()
    QCoreApplication.sendPostedEvents(None, QEvent.Type.DeferredDelete)
    ledger.close()
    install_translator(qapp, "en")


def open_every_page(window: MainWindow, qtbot, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """Visit each page with something on it."""
    from cloud_window import offer_row
    from cloud_window import plan_gpt2

    from gpudesk.services.runs import detached as runs
    from gpudesk.services.runs.spot_recovery import MirrorState

    plan_gpt2(window.plan)
    window.plan.select_row(offer_row(window.plan, "GN7.2XLARGE32", "ap-guangzhou"))
    for key in ("plan", "accounts", "instances", "run", "watch"):
        window.show_page(key)
        qtbot.wait(10)
    instances = window.instances
    instances.show_ended.setChecked(True)
    from gpudesk.services.cloud.reconcile import ReconcileReport

    instances._reconciled(ReconcileReport())  # what a check of the clouds that found all says
    instances.select_machine("m-tc-1")

    run = window.run
    project = tmp_path / "proj"
    project.mkdir()
    (project / "train.py").write_text("print('hi')\n")
    record = runs.RunRecord(id="proj-20261204-150000-ab12", project=str(project),
                            remote_project="~/gpudesk/projects/proj", script="train.py",
                            args=["--epochs", "3"], nproc=2, created=NOW - 600,
                            nodes=[runs.NodeRun("own-1", None,
                                                "/home/alice/gpudesk/runs/proj", "192.0.2.10")])
    record.save()
    run.reload_machines()
    run.reload_runs(select=record.id)
    run.machine.setCurrentIndex(run.machine.findData("own-1"))
    run.last_status = runs.RunStatus("exited", code=0, seconds=420.0, checkpoints=3,
                                     latest_checkpoint="ckpt-000000300.pt")
    (getattr(run, "_refresh", None) or run._show_state)()
    run._show_mirror(MirrorState(next_bytes=3 << 30, cost=0.27, currency="USD",
                                 kept=("ckpt-000000200.pt", "ckpt-000000300.pt"),
                                 over_cap=("ckpt-000000100.pt",)))
    for line in gpudesk_log_lines():
        run._say(line)

    # a budget crossing as the alerts send it: the banner above the pages and the status bar
    from gpudesk.services.money import budgets

    month = budgets.Budget(budgets.SCOPE_MONTH, "2026-12", 100.0)
    machine = budgets.Budget(budgets.SCOPE_MACHINE, "m-tc-1", 30.0, action="terminate")
    for crossing in (budgets.Crossing(month, 80.0, 85.0, NOW),
                     budgets.Crossing(machine, 100.0, 31.0, NOW, "terminate", ("m-tc-1",))):
        window.budget_alerts.alert.emit(crossing, *window.budget_alerts.message(crossing))

    watch = window.watch
    watch.reload_machines()
    from gpudesk.ui.watch.dashboard_page import DashboardPage

    dashboard = DashboardPage("lab-box", "own-1", watch)  # as connect_selected makes it
    watch.dashboards["own-1"] = dashboard
    watch.stack.addWidget(dashboard)
    watch.overview.watch(dashboard)
    dashboard.feed_many([a_record(k, NOW - 60 + k) for k in range(30)])
    qtbot.waitUntil(lambda: not dashboard.backfilling, timeout=5000)
    dashboard.set_spend([(NOW - 3600, 0.0), (NOW, 0.45)], 0.45, "USD", 30.0, None)
    dashboard.redraw()
    watch.show_machine("own-1")
    show_state = getattr(watch, "_show_state", None)
    if show_state is not None:
        show_state("lab-box", "streaming")


def agent_guard_texts(window: MainWindow) -> list[str]:
    """What the Watch page says the agent enforces on each cloud machine on its own."""
    from gpudesk.services.remote.machine_rules import agent_rules
    from gpudesk.ui.watch.watch_page import describe_guard

    return [describe_guard(agent_rules(m, window.settings, window.ledger))
            for m in window.ledger.machines() if m.provider != "own"]


LOG_LINE = re.compile(r"MSG_(PREFLIGHT|SYNCED|STARTED|MISSING_REQ|LOW_DISK|DRIVER|COPIED|"
                      r"NO_CHECKPOINT|LAUNCHING|RESUM)")


def filled(template: str) -> dict[str, Any]:
    """Values for every placeholder of ``template``: a number where it has a format spec,
    else an id-like word (never an English one)."""
    return {name: 12.0 if spec else "alice@lab-1"
            for name, spec in re.findall(r"{(\w+)(?::([^}]*))?}", template)}


def gpudesk_log_lines() -> list[str]:
    """The ``gpudesk:`` lines the services report while preflighting, syncing, starting and
    recovering a run: every such message they mark, with values filled in."""
    from gpudesk.services.runs import detached
    from gpudesk.services.runs import run_control
    from gpudesk.services.runs import spot_recovery

    said = getattr(detached, "Said", None)
    if said is None:
        return []
    lines: list[str] = []
    for module in (detached, run_control, spot_recovery):
        context = {detached: "Runs", run_control: "RunControl",
                   spot_recovery: "SpotRecovery"}[module]
        for attr, template in vars(module).items():
            if LOG_LINE.match(attr) and isinstance(template, str):
                values = filled(template)
                if "message" in values:
                    values["message"] = said(context, run_control.MSG_LOW_DISK,
                                             **filled(run_control.MSG_LOW_DISK))
                if "device" in values and hasattr(detached, "device_text"):
                    values["device"] = detached.device_text(2)
                lines.append(said(context, template, **values))
    return lines


def open_every_dialog(window: MainWindow, qtbot, tmp_path: Path) -> list[QWidget]:  # type: ignore[no-untyped-def]
    """Preferences, Welcome, About, Launch (an offer chosen, per cloud), Own machine, Trace,
    Crash; shown, not run modally."""
    from gpudesk.ui.machines.launch_dialog import LaunchDialog
    from gpudesk.ui.shell import crash_dialog
    from gpudesk.ui.shell.welcome import WelcomeDialog

    dialogs: list[QWidget] = [window.show_preferences(), window.show_about(),
                              window.show_trace_dialog(),
                              window.accounts.own.open_add_dialog()]
    welcome = WelcomeDialog("zh_CN", lambda _l: None, window)
    welcome.show()
    dialogs.append(welcome)
    # the real path: Launch… on the Plan page with an offer chosen (its cloud has keys)
    from cloud_window import offer_row

    window.show_page("plan")
    window.plan.select_row(offer_row(window.plan, "GN7.2XLARGE32", "ap-guangzhou"))
    qtbot.waitUntil(window.plan.launch_button.isEnabled, timeout=10000)
    window.plan.launch_button.click()
    qtbot.waitUntil(lambda: window.launch_dialog is not None, timeout=10000)
    assert window.launch_dialog is not None
    dialogs.append(window.launch_dialog)
    catalog = window.plan.catalog
    assert catalog is not None

    async def never(*_a: Any) -> Any:
        raise AssertionError("nothing launches here")

    for provider, action in (("aws", "stop"), ("aliyun", "terminate")):
        offer = catalog.filter(provider=provider)[0]
        d = LaunchDialog(offer, catalog, never, detect=False, money=window.money,
                         budget=30.0, on_budget=action, parent=window)
        d.show()
        dialogs.append(d)
    # the questions with the most words: terminate a machine, quit while machines bill
    box = window.instances.ask_terminate()  # the Tencent machine is selected
    if box is not None:
        dialogs.append(box)
    change_budget = getattr(window.instances, "change_budget", None)  # Change budget…
    budget = change_budget() if change_budget is not None else None
    if budget is not None:
        dialogs.append(budget)
    if hasattr(window, "ask_quit") and hasattr(window, "billing_machines"):
        dialogs.append(window.ask_quit(window.billing_machines()))
    window.show_page("run")
    window.run.ask_stop()  # the chosen run: "Stop the run?"
    dialogs += [b for b in window.run.findChildren(QMessageBox) if b.isVisible()]
    try:
        raise RuntimeError("a test's own problem")
    except RuntimeError as exc:
        crash = crash_dialog.show_crash(RuntimeError, exc, exc.__traceback__)
    assert crash is not None
    dialogs.append(crash)
    qtbot.wait(50)
    return dialogs


def test_every_page_and_dialog_speaks_chinese(window: MainWindow, qtbot, qapp,  # type: ignore[no-untyped-def]
                                              tmp_path: Path) -> None:
    open_every_page(window, qtbot, tmp_path)
    dialogs = open_every_dialog(window, qtbot, tmp_path)
    found = window_texts(window)
    found += [("describe_guard", t) for t in agent_guard_texts(window)]
    for dialog in dialogs:
        found += window_texts(dialog)
    found += [("menuBar", t) for a in window.menuBar().actions() if a.menu() is not None
              for t in widget_texts(a.menu())]  # type: ignore[arg-type]
    found += [("statusBar", window.statusBar().currentMessage())]
    tray = getattr(window, "tray", None)
    if tray is not None:
        found += [("tray", tray.icon.toolTip())]
    found += [(f"toplevel {type(w).__name__}", t) for w in QApplication.topLevelWidgets()
              if w.isVisible() and w not in dialogs and w is not window
              for t in widget_texts(w)]
    for dialog in dialogs:
        dialog.close()
    assert len(found) > 300  # the pages were there
    shown = "\n".join(t for _w, t in found)
    for chinese in ("已是最新。",  # "Up to date." after checking the clouds
                    "腾讯云", "阿里云",  # the clouds' titles, not "tencent"/"Tencent Cloud"
                    "自有机器",  # an own machine in the machine choosers, not "own"
                    "自行销毁这台机器",  # the guard's sentence (Launch dialog, Instances)
                    "检查点"):  # the checkpoint copies' status line on the Run page
        assert chinese in shown, chinese
    bad = english_in(found)
    assert not bad, f"{len(bad)} English texts under zh_CN:\n" + "\n".join(bad)


# ------------------------------------------------ messages built at run time (issue 31)

def _in_chinese(qapp: Any, make: Any) -> str:
    """``make()``'s text with the window in Chinese (English again afterwards)."""
    assert install_translator(qapp, "zh_CN") == "zh_CN"
    try:
        return str(make())
    finally:
        install_translator(qapp, "en")


def test_a_preflight_refusal_is_translated_with_its_finding(qapp) -> None:  # type: ignore[no-untyped-def]
    """``run_control.preflight`` passes the finding as template and values, not as an
    English sentence: the window shows it whole in Chinese."""
    from gpudesk.services.core.said import Said
    from gpudesk.services.remote import bootstrap
    from gpudesk.services.runs.run_control import MSG_NO_GPU_HERE
    from gpudesk.services.runs.run_control import RunControlError
    from gpudesk.ui.widgets.task_runner import error_text

    error = RunControlError(MSG_NO_GPU_HERE, problem=Said(
        bootstrap.CONTEXT, bootstrap.MSG_NO_DRIVER, target="gpu1"), target="gpu1")
    text = _in_chinese(qapp, lambda: error_text(error)[0])
    assert "nvidia-smi" in text and not english_words(text), text


def test_an_ssh_error_in_a_budget_change_is_chinese(qapp) -> None:  # type: ignore[no-untyped-def]
    """The agent's "could not be reached" line of Change budget carries the SSH error as a
    Said: Chinese around and inside it, no class name, no "after 1 attempts"."""
    from gpudesk.services.core.said import said_of
    from gpudesk.services.remote import ssh
    from gpudesk.services.remote.machine_budget import MSG_AGENT_LATER
    from gpudesk.ui.widgets.task_runner import format_template

    error = ssh.SshUnreachable(ssh.MSG_UNREACHABLE_ONCE, target="root@203.0.113.7:22",
                               attempts=1, detail=ssh.WHY_REFUSED, port=22)
    text = _in_chinese(qapp, lambda: format_template("Guard", MSG_AGENT_LATER,
                                                     {"why": said_of(error)}))
    assert "203.0.113.7" in text and not english_words(text), text


def test_a_stop_and_its_tail_are_one_chinese_sentence(qapp) -> None:  # type: ignore[no-untyped-def]
    from gpudesk.services.cloud.providers import aliyun_errors
    from gpudesk.ui.machines.stop_sentence import stop_sentence

    m = Machine(id="m-1", name="gpu-1", provider="aliyun", state="stopped",
                stopped_mode="StopCharging", cloud_id="i-1")
    text = _in_chinese(qapp, lambda: stop_sentence(m, aliyun_errors.MSG_STOPPED_STOP_CHARGING))
    assert text.count("StopCharging") == 1 and not english_words(text), text
