"""The Data page (issue 32): a folder pushed by typing into its fields and clicking Push,
listed with its size, version and a month's storage at the sourced price; Cancel midway
leaves nothing listed; Remove asks first and "Cancel" keeps the dataset; bad input is said
next to its field with nothing sent. The Run page and ``gpudesk outputs`` name the
dataset and version a run used, in the same words. Against moto's S3 server over HTTP."""
# ruff: noqa: F811 - pytest fixtures imported from the fixture modules arrive as parameters

from __future__ import annotations

import hashlib
import threading
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("pytestqt")

from fixtures_agent_store import Bucket  # noqa: E402, F401
from fixtures_agent_store import aws  # noqa: E402, F401
from fixtures_agent_store import bucket  # noqa: E402, F401
from fixtures_agent_store import moto_server  # noqa: E402, F401
from fixtures_keyring import memory_keyring  # noqa: E402, F401
from PySide6.QtWidgets import QMessageBox  # noqa: E402
from PySide6.QtWidgets import QPushButton  # noqa: E402

from gpudesk.cli.entry import main  # noqa: E402
from gpudesk.services.cloud.credentials import save_credentials  # noqa: E402
from gpudesk.services.core.paths import cache_dir  # noqa: E402
from gpudesk.services.core.sizes import size_text  # noqa: E402
from gpudesk.services.core.window_state import update_state  # noqa: E402
from gpudesk.services.money.ledger import Ledger  # noqa: E402
from gpudesk.services.runs import detached as runs  # noqa: E402
from gpudesk.services.storage import dataset_registry  # noqa: E402
from gpudesk.services.storage import datasets  # noqa: E402
from gpudesk.services.storage import s3_price_list  # noqa: E402
from gpudesk.services.storage.clients import account_client  # noqa: E402
from gpudesk.services.storage.uri import parse_uri  # noqa: E402
from gpudesk.ui.data.data_page import COST_COLUMN  # noqa: E402
from gpudesk.ui.data.data_page import DataPage  # noqa: E402
from gpudesk.ui.data.push_box import BAR_STEPS  # noqa: E402
from gpudesk.ui.run.run_page import RunPage  # noqa: E402

WAIT_MS = 30_000
GB = 1024**3
FILES = {"train/a.bin": b"a" * 5000, "train/b.bin": bytes(range(256)) * 40,
         "labels.csv": b"x,y\n1,2\n"}


def make_folder(root: Path, files: dict[str, bytes]) -> Path:
    for rel, body in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(body)
    return root


@pytest.fixture
def account(bucket: Bucket, memory_keyring: object) -> Bucket:
    save_credentials(bucket.moto.credentials)
    return bucket


def open_page(qtbot: Any, **kw: Any) -> DataPage:
    page = DataPage(None, **kw)
    qtbot.addWidget(page)
    page.resize(1100, 700)
    page.show()
    return page


def idle(qtbot: Any, page: DataPage) -> None:
    qtbot.waitUntil(lambda: not page.list_runner.busy and not page.push_box.runner.busy
                    and not page.remove_runner.busy, timeout=WAIT_MS)


def rows(page: DataPage) -> list[list[str]]:
    tree = page.tree
    return [[tree.topLevelItem(i).text(c) for c in range(tree.columnCount())]
            for i in range(tree.topLevelItemCount())]


def fill(qtbot: Any, page: DataPage, folder: str, name: str, store: str) -> None:
    box = page.push_box
    for field, text in ((box.folder, folder), (box.name, name)):
        field.clear()
        qtbot.keyClicks(field, text)
    box.store.setEditText("")
    qtbot.keyClicks(box.store, store)


def test_a_folder_pushed_from_the_page_is_listed_with_its_size_version_and_cost(  # type: ignore[no-untyped-def]
        qtbot, loop, account: Bucket, tmp_path: Path) -> None:
    # S3's price as AWS's public price list says it, read earlier (Tools → Refresh prices)
    s3_price_list.save(cache_dir(), s3_price_list.S3Prices(
        "us-east-1", "2025-06-01", s3_price_list.offer_url("us-east-1"), 1.0, 0.023))
    page = open_page(qtbot)
    idle(qtbot, page)
    assert "No dataset is known here yet" in page.state.text()
    folder = make_folder(tmp_path / "ds", FILES)
    fill(qtbot, page, str(folder), "mnist", f"s3://{account.name}/lab")
    page.push_box.push_button.click()
    qtbot.waitUntil(lambda: page.tree.topLevelItemCount() == 1, timeout=WAIT_MS)
    idle(qtbot, page)

    raw = account.read("lab/data/sets/mnist/manifest.json")
    version = hashlib.sha256(raw).hexdigest()[:12]
    total = sum(len(b) for b in FILES.values())
    (row,) = rows(page)
    assert row[:4] == ["mnist", size_text(total), "3", "us-east-1"]
    assert row[4].endswith(str(folder)) and row[5] == version
    assert row[COST_COLUMN] == f"{total / GB * 0.023:,.4f} USD"
    tip = page.tree.topLevelItem(0).toolTip(COST_COLUMN)
    assert "0.023 USD/GB-month" in tip and "AWS Price List" in tip and "2025-06-01" in tip
    box = page.push_box
    assert box.bar.value() == BAR_STEPS
    assert box.message.text() == (f"mnist: 3 files, {size_text(total)} in s3://{account.name}"
                                  f"/lab/data/sets/mnist/ (us-east-1), version {version}")
    assert "files already in the bucket" in box.sent.text()
    assert page.state.text().startswith("1 dataset(s)")

    # the same folder again: nothing sent, every file already there (the CLI's words)
    box.push_button.click()
    qtbot.waitUntil(lambda: box.sent.text() == "0 B of 0 B sent (0 files, 0 B/s); 3 files "
                    "already in the bucket", timeout=WAIT_MS)
    idle(qtbot, page)
    assert len(account.keys("lab/data/blobs/")) == 3


def test_cancel_midway_leaves_nothing_listed(  # type: ignore[no-untyped-def]
        qtbot, loop, account: Bucket, tmp_path: Path) -> None:
    # more files than the push's 16 workers: at most 16 uploads start before the first
    # ends and 16 more wait at the gate, so some files are never sent
    folder = make_folder(tmp_path / "ds", {f"f{i:02d}.bin": bytes([i]) * 2000
                                           for i in range(40)})
    first_sent, gate = threading.Event(), threading.Event()

    class Held:
        """The account's client; after the first file went up, each upload waits until the
        test lets it go (the Cancel button is clicked meanwhile)."""

        def __init__(self, client: Any) -> None:
            self.client = client

        def __getattr__(self, name: str) -> object:
            return getattr(self.client, name)

        def put_object(self, **kw: Any) -> object:
            if first_sent.is_set():
                gate.wait(WAIT_MS / 1000)
            answer = self.client.put_object(**kw)
            first_sent.set()
            return answer

    page = open_page(qtbot, client_for=lambda cloud, region: Held(
        account_client(cloud, region)))
    fill(qtbot, page, str(folder), "held", f"s3://{account.name}/lab")
    box = page.push_box
    box.push_button.click()
    qtbot.waitUntil(first_sent.is_set, timeout=WAIT_MS)
    assert box.cancel_button.isEnabled()
    box.cancel_button.click()
    gate.set()
    qtbot.waitUntil(lambda: not box.runner.busy, timeout=WAIT_MS)
    assert box.message.text() == ("The push of held was cancelled; nothing is listed as a "
                                  "dataset (the next push reuses what was sent).")
    idle(qtbot, page)
    assert page.tree.topLevelItemCount() == 0
    assert f"No dataset in s3://{account.name}/lab/ yet" in page.state.text()
    assert account.keys("lab/data/sets/") == []
    assert 1 <= len(account.keys("lab/data/blobs/")) < 40
    assert "held" not in dataset_registry.known()


def test_remove_asks_first_and_cancel_keeps_it(  # type: ignore[no-untyped-def]
        qtbot, loop, account: Bucket, tmp_path: Path) -> None:
    folder = make_folder(tmp_path / "ds", FILES)
    store = parse_uri(f"s3://{account.name}/lab")
    datasets.push(account_client("aws", "us-east-1"), store, "us-east-1", folder, "vocab")
    page = open_page(qtbot)  # lists what was pushed from here when first shown
    qtbot.waitUntil(lambda: page.tree.topLevelItemCount() == 1, timeout=WAIT_MS)
    idle(qtbot, page)
    # no price read for the region: no figure, and why
    assert rows(page)[0][COST_COLUMN] == "price not known"
    assert "has not been read" in page.tree.topLevelItem(0).toolTip(COST_COLUMN)
    assert not page.remove_button.isEnabled()  # nothing chosen yet
    page.tree.setCurrentItem(page.tree.topLevelItem(0))
    assert page.remove_button.isEnabled()

    page.remove_button.click()
    box = page.last_box
    assert box is not None and box.isVisible()
    total = size_text(sum(len(b) for b in FILES.values()))
    assert box.text() == f"Remove dataset vocab (3 files, {total}) from s3://{account.name}/lab/?"
    box.button(QMessageBox.StandardButton.Cancel).click()
    assert page.message.text() == "nothing removed"
    assert account.keys("lab/data/sets/") == ["lab/data/sets/vocab/manifest.json"]
    assert [r[0] for r in rows(page)] == ["vocab"]

    page.remove_button.click()
    yes = page.last_box.findChild(QPushButton, "dataRemoveYes")  # type: ignore[union-attr]
    yes.click()
    qtbot.waitUntil(lambda: page.message.text().startswith("removed vocab"), timeout=WAIT_MS)
    idle(qtbot, page)
    assert page.message.text() == "removed vocab (3 stored files no dataset uses any more)"
    assert page.tree.topLevelItemCount() == 0
    assert account.keys("lab/data/") == []


def test_bad_input_is_said_next_to_its_field_and_nothing_is_sent(  # type: ignore[no-untyped-def]
        qtbot, loop, account: Bucket, tmp_path: Path) -> None:
    page = open_page(qtbot)
    idle(qtbot, page)
    box = page.push_box
    fill(qtbot, page, str(tmp_path / "missing"), "bad/name", "")
    box.push_button.click()
    assert not box.runner.busy
    assert box.name_error.isVisible() and "'bad/name' is not a dataset name" in \
        box.name_error.text()
    assert box.folder_error.isVisible() and box.folder_error.text() == (
        f"{tmp_path / 'missing'} is not a folder: give the folder to push.")
    assert box.store_error.isVisible() and "No bucket to push to" in box.store_error.text()

    # good fields, a bucket that is not there: said at the Bucket field, nothing sent
    folder = make_folder(tmp_path / "ds", FILES)
    fill(qtbot, page, str(folder), "good", "s3://no-such-lab-bucket/x")
    box.push_button.click()
    assert not box.name_error.isVisible() and not box.folder_error.isVisible()
    qtbot.waitUntil(lambda: box.store_error.isVisible(), timeout=WAIT_MS)
    idle(qtbot, page)
    assert "The bucket no-such-lab-bucket does not exist" in box.store_error.text()
    assert box.message.text() == "Nothing was sent."
    assert account.keys("") == []
    # the list says it too, with what to do
    page.refresh_button.click()
    idle(qtbot, page)
    assert page.state.text().startswith("The datasets in s3://no-such-lab-bucket/x/ could "
                                        "not be listed: The bucket no-such-lab-bucket does "
                                        "not exist")


RUN = "proj-20261206-080000-ab12"


def test_the_run_page_and_the_cli_name_the_dataset_and_version_a_run_used(  # type: ignore[no-untyped-def]
        qtbot, loop, account: Bucket, tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    sha = hashlib.sha256(b"manifest").hexdigest()
    store = f"s3://{account.name}/lab/"
    runs.RunRecord(id=RUN, project="/p", remote_project="/p", script="train.py", args=[],
                   nproc=1, created=1.0, store_uri=store, store_region="us-east-1",
                   nodes=[runs.NodeRun("ssh://x@127.0.0.1:1", None, f"/r/{RUN}")],
                   data={"name": "vocab", "manifest_sha256": sha,
                         "key": "lab/data/sets/vocab/manifest.json", "path": "",
                         "uri": store}).save()
    line = f"Data: the dataset vocab, version {sha[:12]}, from {store}data/sets/vocab/"
    assert main(["outputs", RUN]) == 0
    assert f"  {line}\n" in capsys.readouterr().out

    update_state(run_selected=RUN)
    with Ledger(tmp_path / "ledger.sqlite") as ledger:
        page = RunPage(ledger)
        qtbot.addWidget(page)
        page.show()
        qtbot.waitUntil(lambda: page.dataset_line.isVisible(), timeout=WAIT_MS)
        assert page.dataset_line.text() == line
        page.run_list.choose_none()
        page.attach(None)
        assert not page.dataset_line.isVisible()
        page.close()
