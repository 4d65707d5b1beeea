"""The Data page's "Copy to another region…", its Hugging Face token, and ``gpudesk data ls``'s
storage column (issue 32). The copy: the target typed into the dialog, the bucket checked and
the bytes and data-out price said (the CLI's words) before anything moves; Cancel in the
question moves nothing; Copy copies server-side with progress, says the CLI's line and lists
the copy; Cancel midway lists nothing; routes gpudesk does not copy are said on the page.
Against moto's S3 server over HTTP with two buckets in two regions and AWS's price list from a
stand-in. The token: saved from a password field into the real Secret Service, never shown in
any widget again."""
# ruff: noqa: F811 - pytest fixtures imported from the fixture modules arrive as parameters

from __future__ import annotations

import hashlib
import io
import json
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
from fixtures_keyring import secret_service  # noqa: E402, F401
from PySide6.QtCore import Qt  # noqa: E402
from PySide6.QtWidgets import QAbstractButton  # noqa: E402
from PySide6.QtWidgets import QLabel  # noqa: E402
from PySide6.QtWidgets import QLineEdit  # noqa: E402
from PySide6.QtWidgets import QMessageBox  # noqa: E402
from PySide6.QtWidgets import QPushButton  # noqa: E402
from PySide6.QtWidgets import QWidget  # noqa: E402
from test_data_push import FILES  # noqa: E402
from test_dataset_copy import ROWS  # noqa: E402, F401
from test_dataset_copy import WEST  # noqa: E402, F401
from test_dataset_copy import keys  # noqa: E402, F401
from test_dataset_copy import push  # noqa: E402, F401
from test_dataset_copy import two_regions  # noqa: E402, F401
from test_storage_price_list import PriceList  # noqa: E402, F401
from test_storage_price_list import offer_file  # noqa: E402, F401
from test_storage_price_list import price_list  # noqa: E402, F401

from gpudesk.cli.entry import main  # noqa: E402
from gpudesk.services.core.paths import cache_dir  # noqa: E402
from gpudesk.services.core.sizes import size_text  # noqa: E402
from gpudesk.services.storage import s3_price_list  # noqa: E402
from gpudesk.services.storage.clients import account_client  # noqa: E402
from gpudesk.ui.data.data_page import DataPage  # noqa: E402

WAIT_MS = 30_000
GIB = 1 << 30


def open_page(qtbot: Any, **kw: Any) -> DataPage:
    page = DataPage(None, **kw)
    qtbot.addWidget(page)
    page.resize(1100, 800)
    page.show()
    return page


def idle(qtbot: Any, page: DataPage) -> None:
    qtbot.waitUntil(lambda: not page.list_runner.busy and not page.copy_box.busy
                    and not page.push_box.runner.busy, timeout=WAIT_MS)


def choose(qtbot: Any, page: DataPage, region: str) -> None:
    """Click the row of the dataset in ``region``."""
    tree = page.tree
    item = next(tree.topLevelItem(i) for i in range(tree.topLevelItemCount())
                if tree.topLevelItem(i).text(3) == region)
    qtbot.mouseClick(tree.viewport(), Qt.MouseButton.LeftButton,
                     pos=tree.visualItemRect(item).center())
    assert page.selected() is not None and page.selected().region == region  # type: ignore[union-attr]


def ask_target(qtbot: Any, page: DataPage, uri: str, region: str = "") -> None:
    """Copy to another region…, the target typed, "Say the cost…" clicked."""
    assert page.copy_button.isEnabled()
    qtbot.mouseClick(page.copy_button, Qt.MouseButton.LeftButton)
    dialog = page.copy_box.dialog
    assert dialog is not None and dialog.isVisible()
    qtbot.keyClicks(dialog.target, uri)
    if region:
        qtbot.keyClicks(dialog.region, region)
    qtbot.mouseClick(dialog.next_button, Qt.MouseButton.LeftButton)


def question(qtbot: Any, page: DataPage) -> QMessageBox:
    qtbot.waitUntil(lambda: page.copy_box.question is not None
                    and page.copy_box.question.isVisible(), timeout=WAIT_MS)
    box = page.copy_box.question
    assert box is not None
    return box


def test_a_copy_from_the_page_says_the_cost_first_and_cancel_moves_nothing(  # type: ignore[no-untyped-def]
        qtbot, loop, two_regions: Bucket, price_list: PriceList, tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    price_list.files[("AmazonS3", "us-east-1")] = (200, offer_file(extra=ROWS))
    source = push(two_regions, tmp_path)
    unique = {f.sha256: f.size for f in source.files}  # a blob shared by two files: once
    size, blobs = sum(unique.values()), len(unique)
    page = open_page(qtbot)
    qtbot.waitUntil(lambda: page.tree.topLevelItemCount() == 1, timeout=WAIT_MS)
    idle(qtbot, page)
    assert not page.copy_button.isEnabled()  # nothing chosen yet
    choose(qtbot, page, "us-east-1")

    ask_target(qtbot, page, f"s3://{WEST}/lab")
    box = question(qtbot, page)
    words = (f"Copying dataset mnist from s3://{two_regions.name}/lab/ (us-east-1) to "
             f"s3://{WEST}/lab/ (us-west-2) sends {size_text(size)} in {blobs} files "
             f"between regions, billed as data out of us-east-1: {size / GIB:.2g} GB × 0.02 "
             f"USD/GB = {size / GIB * 0.02:.2g} USD (AWS Price List {price_list.url}")
    assert box.text().startswith(words), box.text()
    assert "2026-11-20)." in box.text()
    assert box.text().endswith(f"\n\nCopy dataset mnist to s3://{WEST}/lab/?")
    assert box.icon() == QMessageBox.Icon.Question  # the price is known
    assert page.copy_box.message.text() == box.text().split("\n\n")[0]
    # the CLI says the same sentence before it asks
    capsys.readouterr()
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr("builtins.input", lambda _prompt: "n")
        assert main(["data", "copy", "mnist", "--to", f"s3://{WEST}/lab"]) == 1
    assert capsys.readouterr().out.splitlines()[0] == page.copy_box.message.text()

    qtbot.mouseClick(box.button(QMessageBox.StandardButton.Cancel), Qt.MouseButton.LeftButton)
    assert page.copy_box.message.text() == ("The copy of dataset mnist was not confirmed; "
                                            "nothing was copied.")
    assert not page.copy_box.busy
    assert keys(two_regions, WEST, "lab/") == {}

    # asked again, and Copy: server-side, the manifest last, the CLI's line, the copy listed
    ask_target(qtbot, page, f"s3://{WEST}/lab")
    box = question(qtbot, page)
    yes = box.findChild(QPushButton, "datasetCopyYes")
    qtbot.mouseClick(yes, Qt.MouseButton.LeftButton)
    assert page.copy_box.cancel_button.isVisible()
    qtbot.waitUntil(lambda: page.copy_box.message.text().startswith("mnist: "),
                    timeout=WAIT_MS)
    version = hashlib.sha256(two_regions.read("lab/data/sets/mnist/manifest.json")
                             ).hexdigest()[:12]
    assert page.copy_box.message.text() == (
        f"mnist: {len(source.files)} files, {size_text(source.bytes)} in s3://{WEST}/lab/data/sets/"
        f"mnist/ (us-west-2), version {version}; a machine in us-west-2 reads "
        "this copy")
    assert page.copy_box.bar.value() == page.copy_box.bar.maximum()
    assert not page.copy_box.cancel_button.isVisible()
    there = keys(two_regions, WEST, "lab/data/")
    assert there == keys(two_regions, two_regions.name, "lab/data/")
    qtbot.waitUntil(lambda: page.tree.topLevelItemCount() == 2, timeout=WAIT_MS)
    idle(qtbot, page)
    listed = sorted((page.tree.topLevelItem(i).text(0), page.tree.topLevelItem(i).text(3),
                     page.tree.topLevelItem(i).text(5)) for i in range(2))
    assert listed == [("mnist", "us-east-1", version), ("mnist", "us-west-2", version)]
    # and `gpudesk data ls` lists the copy too
    assert main(["data", "ls", "--json"]) == 0
    assert sorted(d["region"] for d in json.loads(capsys.readouterr().out)) == [
        "us-east-1", "us-west-2"]


def test_cancel_midway_lists_no_copy(  # type: ignore[no-untyped-def]
        qtbot, loop, two_regions: Bucket, price_list: PriceList, tmp_path: Path) -> None:
    source = push(two_regions, tmp_path, {f"f{i:02d}.bin": bytes([i]) * 100
                                          for i in range(6)})
    first_done, gate = threading.Event(), threading.Event()

    class Held:
        """The account's client; after the first blob is copied, each copy waits until
        the test lets it go (Cancel is clicked meanwhile)."""

        def __init__(self, client: Any) -> None:
            self.client = client

        def __getattr__(self, name: str) -> object:
            return getattr(self.client, name)

        def copy_object(self, **kw: Any) -> object:
            if first_done.is_set():
                gate.wait(WAIT_MS / 1000)
            answer = self.client.copy_object(**kw)
            first_done.set()
            return answer

    page = open_page(qtbot, client_for=lambda cloud, region: Held(
        account_client(cloud, region)))
    qtbot.waitUntil(lambda: page.tree.topLevelItemCount() == 1, timeout=WAIT_MS)
    idle(qtbot, page)
    choose(qtbot, page, "us-east-1")
    ask_target(qtbot, page, f"s3://{WEST}/lab", "us-west-2")
    box = question(qtbot, page)
    assert box.icon() == QMessageBox.Icon.Warning  # no price read: a warning, said why
    assert "the price is not known" in box.text()
    qtbot.mouseClick(box.findChild(QPushButton, "datasetCopyYes"), Qt.MouseButton.LeftButton)
    qtbot.waitUntil(first_done.is_set, timeout=WAIT_MS)
    cancel = page.copy_box.cancel_button
    assert cancel.isVisible() and cancel.isEnabled()
    assert not page.copy_button.isEnabled()  # one copy at a time
    qtbot.mouseClick(cancel, Qt.MouseButton.LeftButton)
    gate.set()
    qtbot.waitUntil(lambda: not page.copy_box.busy, timeout=WAIT_MS)
    assert page.copy_box.message.text() == (
        f"The copy of dataset mnist was cancelled; nothing is listed in s3://{WEST}/lab/ "
        "(the next copy reuses what was copied).")
    left = keys(two_regions, WEST, "lab/")
    assert 1 <= len(left) < len(source.files) and all("/blobs/" in k for k in left)
    idle(qtbot, page)
    assert [page.tree.topLevelItem(i).text(3) for i in range(page.tree.topLevelItemCount())
            ] == ["us-east-1"]
    assert page.copy_button.isEnabled()


def test_routes_and_buckets_that_cannot_be_copied_to_are_said_on_the_page(  # type: ignore[no-untyped-def]
        qtbot, loop, two_regions: Bucket, price_list: PriceList, tmp_path: Path) -> None:
    push(two_regions, tmp_path)
    page = open_page(qtbot)
    qtbot.waitUntil(lambda: page.tree.topLevelItemCount() == 1, timeout=WAIT_MS)
    idle(qtbot, page)
    choose(qtbot, page, "us-east-1")
    said = page.copy_box.message

    # an empty target: said in the dialog, which stays open
    qtbot.mouseClick(page.copy_button, Qt.MouseButton.LeftButton)
    dialog = page.copy_box.dialog
    assert dialog is not None
    qtbot.mouseClick(dialog.next_button, Qt.MouseButton.LeftButton)
    assert dialog.isVisible() and dialog.error.text() == ("Type the bucket to copy to: "
                                                          "s3://bucket/prefix.")
    dialog.reject()

    cases = [
        (f"s3://{two_regions.name}/other", "", f"s3://{two_regions.name}/other/ is in "
         "us-east-1, the region dataset mnist is in already"),
        ("s3://no-such-copy-bucket/lab", "", "The bucket no-such-copy-bucket does not exist"),
        ("oss://bucket-b/lab", "cn-beijing", "gpudesk copies a dataset only between buckets "
         "of one cloud"),
    ]
    for uri, region, words in cases:
        ask_target(qtbot, page, uri, region)
        idle(qtbot, page)
        assert said.text().startswith("Nothing was copied: ") and words in said.text(), \
            said.text()
        assert page.copy_box.question is None or not page.copy_box.question.isVisible()
    assert keys(two_regions, WEST, "") == {}


def _all_text(root: QWidget) -> list[str]:
    """Every text a user could see or copy from ``root``'s widgets."""
    seen: list[str] = []
    for w in [root, *root.findChildren(QWidget)]:
        seen += [w.toolTip(), w.windowTitle(), w.accessibleName(), w.statusTip()]
        if isinstance(w, QLabel | QAbstractButton):
            seen.append(w.text())
        if isinstance(w, QLineEdit):
            seen += [w.text(), w.placeholderText(), w.displayText()]
    return seen


def test_the_hf_token_saved_from_the_page_is_in_the_keyring_and_never_shown(  # type: ignore[no-untyped-def]
        qtbot, loop, secret_service, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    import keyring

    from gpudesk.services.cloud import credentials

    token = "hf_PageTypedToken0123456789abcdefXYZ"
    try:
        credentials.delete_hf_token()
        page = open_page(qtbot)
        idle(qtbot, page)
        box = page.hf_token
        assert box.state.text() == "no token saved"
        assert not box.forget_button.isEnabled() and not box.save_button.isEnabled()
        assert box.field.echoMode() == QLineEdit.EchoMode.Password
        qtbot.keyClicks(box.field, token)
        assert token not in box.field.displayText()  # dots while typed
        qtbot.mouseClick(box.save_button, Qt.MouseButton.LeftButton)
        assert keyring.get_password("gpudesk", credentials.HF_TOKEN_ENTRY) == token
        assert box.field.text() == "" and box.state.text() == "a token is saved"
        assert box.message.text() == ("the Hugging Face token is in the keyring; runs reading "
                                      "a Hub dataset pass it to the machine as a short-lived "
                                      "file")
        assert not any(token in text for text in _all_text(page))
        # the CLI says the same words
        monkeypatch.setattr("sys.stdin", io.StringIO(token + "\n"))
        assert main(["data", "hf-token"]) == 0
        assert capsys.readouterr().out.strip() == box.message.text()

        # a page opened later says one is saved, still without it
        again = open_page(qtbot)
        idle(qtbot, again)
        assert again.hf_token.state.text() == "a token is saved"
        assert not any(token in text for text in _all_text(again))

        qtbot.mouseClick(box.forget_button, Qt.MouseButton.LeftButton)
        assert keyring.get_password("gpudesk", credentials.HF_TOKEN_ENTRY) is None
        assert box.state.text() == "no token saved"
        assert box.message.text() == "the Hugging Face token was removed from the keyring"
        assert main(["data", "hf-token", "--forget"]) == 0
        assert capsys.readouterr().out.strip() == box.message.text()

        # an empty token is refused, nothing saved
        qtbot.keyClicks(box.field, "   ")
        assert not box.save_button.isEnabled()
        qtbot.keyClick(box.field, Qt.Key.Key_Return)
        assert box.message.text() == "The token is empty."
        assert keyring.get_password("gpudesk", credentials.HF_TOKEN_ENTRY) is None
    finally:
        credentials.delete_hf_token()


def test_data_ls_shows_the_storage_a_month_as_the_page_does(  # type: ignore[no-untyped-def]
        qtbot, loop, two_regions: Bucket, tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    push(two_regions, tmp_path)
    total = sum(len(b) for b in FILES.values())
    capsys.readouterr()
    # no price read for the region: no figure, and why (the page's words)
    assert main(["data", "ls", "--json"]) == 0
    (listed,) = json.loads(capsys.readouterr().out)
    month = listed["storage_per_month"]
    assert (month["amount"], month["currency"]) == (None, "USD")
    assert "price not known" in month["text"] and "has not been read" in month["text"]
    assert main(["data", "ls"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].split() == ["NAME", "SIZE", "FILES", "REGION", "STORAGE", "A", "MONTH",
                              "SOURCE"]
    assert out[1].startswith("mnist ") and " price not known " in out[1]

    # S3's price read earlier (Tools → Refresh prices): the sum, with source and date
    s3_price_list.save(cache_dir(), s3_price_list.S3Prices(
        "us-east-1", "2025-06-01", s3_price_list.offer_url("us-east-1"), 1.0, 0.023))
    assert main(["data", "ls"]) == 0
    out = capsys.readouterr().out.splitlines()
    cell = f"{total / GIB * 0.023:,.4f} USD"
    assert cell in out[1].split("  ") or f" {cell} " in out[1], out[1]
    assert out[2] == "Storage a month:"
    assert out[3].startswith("  mnist: ") and "0.023 USD/GB-month" in out[3] \
        and "AWS Price List" in out[3] and "2025-06-01" in out[3]
    assert main(["data", "ls", "--json"]) == 0
    (listed,) = json.loads(capsys.readouterr().out)
    month = listed["storage_per_month"]
    assert month["amount"] == pytest.approx(total / GIB * 0.023)
    assert month["text"] == out[3][len("  mnist: "):]
    # the page's cell says the same figure
    page = open_page(qtbot)
    qtbot.waitUntil(lambda: page.tree.topLevelItemCount() == 1, timeout=WAIT_MS)
    idle(qtbot, page)
    from gpudesk.ui.data.data_page import COST_COLUMN

    assert page.tree.topLevelItem(0).text(COST_COLUMN) == cell
