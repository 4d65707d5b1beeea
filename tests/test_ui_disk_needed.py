"""The Plan page's disk (issue 32, "Disk that fits"), typed and clicked in the real window:
a dataset known here (or a size typed in) and the checkpoints kept give the ``Disk
needed`` line; a dataset whose size this computer does not keep is read from its manifest
(moto's S3 over HTTP) on a worker thread. The Plan's need goes with the chosen offer to
the Launch dialog (moto's EC2 over HTTP): the disk field starts at it, and a smaller disk
is refused with the CLI's words before anything is written or asked."""
# ruff: noqa: F811 - fixtures imported from fixtures_* arrive as parameters

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from cloud_window import fill_launch_dialog
from cloud_window import open_cloud_window
from cloud_window import select_offer
from fixtures_aws import MotoAws  # noqa: F401
from fixtures_aws import aws  # noqa: F401
from fixtures_aws import moto_server  # noqa: F401
from fixtures_keyring import memory_keyring  # noqa: F401
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QComboBox
from PySide6.QtWidgets import QLabel
from PySide6.QtWidgets import QLineEdit
from PySide6.QtWidgets import QSpinBox

from gpudesk.calc import sizing
from gpudesk.cli.entry import main
from gpudesk.services.cloud import credentials
from gpudesk.services.cloud.catalog import load_catalog
from gpudesk.services.core.files import read_json_object
from gpudesk.services.core.files import write_json_object
from gpudesk.services.core.settings import Settings
from gpudesk.services.money.ledger import Account
from gpudesk.services.plan import disk_plan
from gpudesk.services.plan.disk_plan import GIB
from gpudesk.services.storage import dataset_registry
from gpudesk.services.storage.uri import parse_uri
from gpudesk.ui.machines.launch_dialog import LaunchDialog
from gpudesk.ui.plan.disk_needed import DiskNeeded
from gpudesk.ui.plan.plan_form import is_invalid
from gpudesk.ui.plan.plan_page import PlanPage
from gpudesk.ui.shell.main_window import MainWindow

LLAMA_BF16 = 6 * sizing.preset("llama-2-7b").parameter_count()  # bf16 weights + 2 moments


def _pick(qtbot: Any, combo: QComboBox, text: str) -> None:
    """Choose ``text`` in ``combo`` with the keyboard, as a user does."""
    combo.setFocus()
    target = combo.findText(text)
    assert target >= 0, text
    key = Qt.Key.Key_Down if target > combo.currentIndex() else Qt.Key.Key_Up
    while combo.currentIndex() != target:
        qtbot.keyClick(combo, key)


def _retype(qtbot: Any, field: QLineEdit | QSpinBox, text: str) -> None:
    field.setFocus()
    field.selectAll()
    qtbot.keyClick(field, Qt.Key.Key_Backspace)
    qtbot.keyClicks(field, text)


def _llama(page: PlanPage) -> None:
    f = page.form
    f.source.setCurrentIndex(f.source.findData("preset"))
    f.preset.setCurrentIndex(f.preset.findData("llama-2-7b"))
    f.precision.setCurrentIndex(f.precision.findData("bf16"))
    f.optimizer.setCurrentIndex(f.optimizer.findData("adamw"))


@pytest.fixture
def page(qtbot: Any) -> PlanPage:
    dataset_registry.remember("imagenet-mini", parse_uri("s3://my-lab-data/lab"), "us-east-1",
                      42 * GIB)
    p = PlanPage(Settings(), load_catalog())
    qtbot.addWidget(p)
    p.resize(1280, 800)
    return p


def _disk(page: PlanPage) -> DiskNeeded:
    box = page.findChild(DiskNeeded, "diskNeeded")
    assert box is not None
    return box


def test_a_dataset_and_the_checkpoints_kept_give_the_disk_needed(page: PlanPage,
                                                                  qtbot: Any) -> None:
    _llama(page)
    box = _disk(page)
    dataset = box.findChild(QComboBox, "diskDataset")
    kept = box.findChild(QSpinBox, "checkpointsKept")
    line = box.findChild(QLabel, "diskNeededLine")
    assert dataset is not None and kept is not None and line is not None
    assert [dataset.itemText(i) for i in range(dataset.count())] == [
        "none", "imagenet-mini", "not pushed yet: its size"]
    assert box.for_launch() is None  # no dataset: the Launch dialog keeps its own disk
    _pick(qtbot, dataset, "imagenet-mini")
    _retype(qtbot, kept, "3")
    assert kept.value() == 3
    # 42 + 4 × 37.65 + 30 = 222.6 GiB, + 10 % = 244.9 -> 245 GB
    assert line.text() == (
        "Disk needed: data 42.0 GB + 4 checkpoints × 37.7 GB (3 kept, 1 being written) + "
        "environment 30.0 GB (an estimate) + headroom 22.3 GB = 245 GB")
    need = box.for_launch()
    assert need is not None and need.checkpoint_bytes == LLAMA_BF16
    assert (need.data_bytes, need.data_name, need.gb) == (42 * GIB, "imagenet-mini", 245)
    # fewer checkpoints, a smaller line, as typed
    _retype(qtbot, kept, "0")
    assert line.text() == ("Disk needed: data 42.0 GB + environment 30.0 GB (an estimate) + "
                           "headroom 7.2 GB = 80 GB")


def test_a_size_typed_for_data_not_pushed_yet(page: PlanPage, qtbot: Any) -> None:
    box = _disk(page)
    size = box.findChild(QLineEdit, "diskDataGb")
    line = box.findChild(QLabel, "diskNeededLine")
    assert size is not None and line is not None
    assert not size.isEnabled()
    _pick(qtbot, box.dataset, "not pushed yet: its size")
    assert size.isEnabled()
    _retype(qtbot, box.kept, "0")
    _retype(qtbot, size, "120")
    assert line.text() == ("Disk needed: data 120.0 GB + environment 30.0 GB (an estimate) "
                           "+ headroom 15.0 GB = 165 GB")
    _retype(qtbot, size, "lots")
    assert is_invalid(size)
    assert line.text() == "A size must be a number of GB of at least 0 (got lots)."
    assert box.for_launch() is None  # nothing carried while the size is bad
    _retype(qtbot, size, "12.5")
    assert not is_invalid(size)
    need = box.for_launch()
    assert need is not None and need.data_bytes == int(12.5 * GIB) and need.data_name == ""


@pytest.fixture
def aws_window(qtbot: Any, loop: Any, aws: MotoAws, memory_keyring: Any,
               monkeypatch: pytest.MonkeyPatch, banner_port: int) -> Iterator[MainWindow]:
    credentials.save_credentials(aws.credentials)
    aws.publish_dlami("us-east-1")
    dataset_registry.remember("imagenet-mini", parse_uri("s3://my-lab-data/lab"), "us-east-1",
                      150 * GIB)
    with open_cloud_window(qtbot, monkeypatch, banner_port, "AWS_ENDPOINT_URL",
                           aws.endpoint.removeprefix("http://")) as w:
        w.ledger.save_account(Account("aws", "AKIA…0001", account="123456789012",
                                      can_launch=True))
        yield w


def test_the_plans_disk_goes_to_the_launch_dialog_and_a_smaller_one_is_refused(
        aws_window: MainWindow, qtbot: Any, aws: MotoAws) -> None:
    select_offer(aws_window, "g4dn.xlarge", "us-east-1")  # GPT-2, fp16 AMP
    box = aws_window.plan.disk_needed
    _pick(qtbot, box.dataset, "imagenet-mini")
    _retype(qtbot, box.kept, "2")
    need = box.for_launch()
    assert need is not None
    gpt2 = sizing.preset("gpt2").parameter_count()
    assert need.checkpoint_bytes == 12 * gpt2  # fp32 weights + two fp32 Adam moments
    qtbot.mouseClick(aws_window.plan.launch_button, Qt.MouseButton.LeftButton)
    dialog = aws_window.launch_dialog
    assert isinstance(dialog, LaunchDialog)
    fill_launch_dialog(dialog, "203.0.113.7/32", fallbacks=False)
    disk = dialog.findChild(QSpinBox, "diskGb")
    said = dialog.findChild(QLabel, "diskNeed")
    assert disk is not None and said is not None
    assert disk.value() == need.gb == 203  # 150 + 3 × 1.4 + 30 = 184.2, + 10 % -> 203
    assert said.text() == f"Disk needed: {need.parts()}"
    _retype(qtbot, disk, "100")
    assert disk.value() == 100
    qtbot.mouseClick(dialog.launch_button, Qt.MouseButton.LeftButton)
    # the CLI's words (gpudesk launch --data), before anything is written or asked
    with pytest.raises(disk_plan.DiskTooSmall) as cli_words:
        need.check(100)
    assert dialog.log.text() == cli_words.value.message()
    assert dialog.log.text().startswith("A 100 GB disk is too small for this job: data "
                                        "150.0 GB + 3 checkpoints × 1.4 GB")
    assert dialog.log.text().endswith("Choose a bigger disk (at least 203 GB).")
    assert not dialog.runner.busy and aws_window.ledger.machines(include_ended=True) == []
    assert aws.instance_count() == 0
    # a big enough disk: the refusal goes
    _retype(qtbot, disk, "250")
    assert dialog.log.text() == ""
    dialog.reject()


def test_a_dataset_without_a_kept_size_is_read_from_its_bucket(
        qtbot: Any, loop: Any, aws: MotoAws, memory_keyring: Any, tmp_path: Path) -> None:
    credentials.save_credentials(aws.credentials)
    aws.client("s3").create_bucket(Bucket="lab-data")
    folder = tmp_path / "ds"
    folder.mkdir()
    (folder / "a.bin").write_bytes(b"a" * 7000)
    assert main(["data", "push", str(folder), "pushed-elsewhere", "--store",
                 "s3://lab-data/p", "--region", "us-east-1"]) == 0
    registry = read_json_object(dataset_registry.registry_path())
    del registry["pushed-elsewhere"]["bytes"]  # as a registry from before sizes were kept
    write_json_object(dataset_registry.registry_path(), registry)
    box = DiskNeeded()
    qtbot.addWidget(box)
    _retype(qtbot, box.kept, "0")
    _pick(qtbot, box.dataset, "pushed-elsewhere")
    assert box.line.text() == "Reading the size of pushed-elsewhere from its bucket…"
    assert box.for_launch() is None
    qtbot.waitUntil(lambda: box.for_launch() is not None, timeout=20000)
    need = box.for_launch()
    assert need is not None and need.data_bytes == 7000
    assert box.line.text().startswith("Disk needed: data 0.0 GB + environment 30.0 GB")
    assert dataset_registry.known_bytes()["pushed-elsewhere"] == 7000
