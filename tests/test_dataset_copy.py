"""A dataset in another region than the machine (issue 32): its bucket-to-bucket copy says the
bytes and the data-out price (source, date) before anything moves, asks, copies server-side
(CopyObject; UploadPartCopy above the one-request limit) with the manifest last, and a run
on a machine there reads the copy; without one it is refused with the cost. Against moto's
S3 server over HTTP with two buckets in two regions, and AWS's price list served by a
stand-in in its real CSV form (the figures are this test's own)."""
# ruff: noqa: F811 - fixtures imported from fixtures_* arrive as parameters

from __future__ import annotations

import hashlib
import json
import threading
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from fixtures_agent_store import Bucket  # noqa: F401
from fixtures_agent_store import aws  # noqa: F401
from fixtures_agent_store import bucket  # noqa: F401
from fixtures_agent_store import moto_server  # noqa: F401
from fixtures_keyring import memory_keyring  # noqa: F401
from test_data_push import FILES
from test_data_push import make_folder
from test_storage_price_list import PriceList  # noqa: F401
from test_storage_price_list import _row  # noqa: F401
from test_storage_price_list import offer_file  # noqa: F401
from test_storage_price_list import price_list  # noqa: F401

from gpudesk.cli.entry import main
from gpudesk.services.cloud.credentials import save_credentials
from gpudesk.services.core.sizes import size_text
from gpudesk.services.money import spend
from gpudesk.services.runs import run_data
from gpudesk.services.storage import data_costs
from gpudesk.services.storage import dataset_copy
from gpudesk.services.storage import datasets
from gpudesk.services.storage import s3_price_list
from gpudesk.services.storage.clients import account_client
from gpudesk.services.storage.errors import StorageError
from gpudesk.services.storage.uri import parse_uri

WEST = "gpudesk-data-west"
GIB = 1 << 30


def inter_region(to: str, price: str, *, kind: str = "InterRegion Outbound",
                 frm: str = "us-east-1") -> list[str]:
    return _row(SKU=f"IR{frm}{to}{kind}{price}", StartingRange="0", EndingRange="Inf",
                Unit="GB", PricePerUnit=price, **{
                    "Product Family": "Data Transfer", "Transfer Type": kind,
                    "usageType": f"{frm}-{to}-AWS-Out-Bytes", "From Region Code": frm,
                    "To Region Code": to})


ROWS = (inter_region("us-west-2", "0.0200000000"),
        inter_region("eu-west-1", "0.0200000000"),
        # inbound to us-east-1 is free and not a price of data out of it
        inter_region("us-west-2", "0.0000000000", kind="InterRegion Inbound"),
        # two figures for one destination: none taken
        inter_region("ap-south-1", "0.0860000000"), inter_region("ap-south-1", "0.0900000000"))


@pytest.fixture
def two_regions(bucket: Bucket, memory_keyring: object) -> Bucket:
    """The account's keys in the keyring; ``bucket`` in us-east-1, WEST in us-west-2."""
    save_credentials(bucket.moto.credentials)
    bucket.moto.client("s3", "us-west-2").create_bucket(
        Bucket=WEST, CreateBucketConfiguration={"LocationConstraint": "us-west-2"})
    return bucket


def keys(b: Bucket, name: str, prefix: str) -> dict[str, bytes]:
    s3 = b.moto.client("s3")
    pages = s3.get_paginator("list_objects_v2").paginate(Bucket=name, Prefix=prefix)
    return {o["Key"]: s3.get_object(Bucket=name, Key=o["Key"])["Body"].read()
            for page in pages for o in page.get("Contents", [])}


class Recording:
    """The target's real client, with every S3 call it sends kept in order."""

    def __init__(self, client: Any) -> None:
        self.client, self.calls = client, []  # type: ignore[var-annotated]

    def __getattr__(self, name: str) -> Any:
        real = getattr(self.client, name)
        if not callable(real) or name.startswith("get_paginator"):
            return real

        def call(*args: Any, **kwargs: Any) -> Any:
            self.calls.append((name, kwargs.get("Key", "")))
            return real(*args, **kwargs)
        return call


def push(b: Bucket, tmp_path: Path, files: dict[str, bytes] = FILES) -> datasets.Dataset:
    folder = make_folder(tmp_path / "ds", files)
    assert main(["data", "push", str(folder), "mnist", "--store", f"s3://{b.name}/lab"]) == 0
    store = parse_uri(f"s3://{b.name}/lab")
    return datasets.load(account_client("aws", "us-east-1"), store, "us-east-1", "mnist")


# --------------------------------------------------------------------------- the price


def test_the_inter_region_price_is_read_per_destination_from_the_source_regions_list() -> None:
    read = s3_price_list.parse_offer_csv(offer_file(extra=ROWS).decode().splitlines(),
                                         "us-east-1", "u", fetched_at=1.0)
    assert read.inter_region_gb == {"us-west-2": 0.02, "eu-west-1": 0.02}
    other = s3_price_list.parse_offer_csv(offer_file("us-west-2").decode().splitlines(),
                                          "us-west-2", "u")
    assert other.inter_region_gb == {}  # us-east-1's rows are not us-west-2's prices


def test_the_copy_price_has_source_and_date_or_says_why_not(price_list: PriceList) -> None:
    unread = data_costs.copy_charge("aws", "us-east-1", "us-west-2")
    assert unread.per_gb is None and "has not been read for this region" in unread.reason
    price_list.files[("AmazonS3", "us-east-1")] = (200, offer_file(extra=ROWS))
    s3_price_list.refresh("us-east-1")
    found = data_costs.copy_charge("aws", "us-east-1", "us-west-2")
    assert (found.per_gb, found.currency, found.as_of and found.as_of.isoformat()) == (
        0.02, "USD", "2026-11-20")
    assert found.source.startswith(f"AWS Price List {price_list.url}/offers/v1.0/aws/"
                                   "AmazonS3/current/us-east-1/index.csv (read ")
    assert found.cost(3 * GIB) == pytest.approx(0.06)
    none = data_costs.copy_charge("aws", "us-east-1", "ap-south-1")
    assert none.per_gb is None and "gives no single price for data out to ap-south-1" \
        in none.reason
    cos = data_costs.copy_charge("tencent", "ap-guangzhou", "ap-shanghai")
    assert cos.per_gb is None and "no price list" in cos.reason and cos.currency == "CNY"


# --------------------------------------------------------------------------- the copy


def test_a_copy_says_bytes_and_price_first_then_copies_server_side_manifest_last(
        two_regions: Bucket, price_list: PriceList, tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    price_list.files[("AmazonS3", "us-east-1")] = (200, offer_file(extra=ROWS))
    source = push(two_regions, tmp_path)
    capsys.readouterr()
    blobs = {f.sha256: f.size for f in source.files}
    # asked, and answered no: the words are said, nothing moves
    answers = iter(["n"])
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr("builtins.input", lambda prompt: (print(prompt, end=""), next(answers))[1])
        assert main(["data", "copy", "mnist", "--to", f"s3://{WEST}/lab"]) == 1
    out = capsys.readouterr()
    size = sum(blobs.values())
    gb = f"{size / GIB:.2g}"  # a small dataset: two significant digits, not 0.000
    words = (f"Copying dataset mnist from s3://{two_regions.name}/lab/ (us-east-1) to "
             f"s3://{WEST}/lab/ (us-west-2) sends {size_text(size)} in {len(blobs)} files "
             f"between regions, billed as data out of us-east-1: {gb} GB × 0.02 USD/GB = "
             f"{size / GIB * 0.02:.2g} USD (AWS Price List {price_list.url}")
    assert out.out.startswith(words), out.out
    assert "2026-11-20)." in out.out and "Copy dataset mnist to s3://" in out.out
    assert "was not confirmed; nothing was copied" in out.err
    assert keys(two_regions, WEST, "lab/") == {}

    # the service: a copy that is not confirmed moves nothing either
    target = parse_uri(f"s3://{WEST}/lab")
    recording = Recording(account_client("aws", "us-west-2"))
    plan = dataset_copy.plan(recording, source, target, "us-west-2")
    assert (plan.bytes, len(plan.missing)) == (size, len(blobs))
    assert plan.cost == pytest.approx(size / GIB * 0.02)
    with pytest.raises(StorageError, match="was not confirmed"):
        dataset_copy.copy(account_client("aws", "us-east-1"), recording, plan, confirmed=False)
    seen: list[tuple[int, int]] = []
    copied = dataset_copy.copy(account_client("aws", "us-east-1"), recording, plan,
                               confirmed=True, progress=lambda d, t: seen.append((d, t)))
    assert seen[0] == (0, size) and seen[-1] == (size, size)
    sent = [c for c in recording.calls if c[0] in ("copy_object", "put_object")]
    assert [c[0] for c in sent] == ["copy_object"] * len(blobs) + ["put_object"]
    assert sent[-1][1] == "lab/data/sets/mnist/manifest.json"  # the manifest last
    # the same bytes under the same names, the manifest byte for byte (the same version)
    there = keys(two_regions, WEST, "lab/data/")
    here = keys(two_regions, two_regions.name, "lab/data/")
    assert there == here
    assert {k.rsplit("/", 1)[-1]: hashlib.sha256(v).hexdigest() for k, v in there.items()
            if "/blobs/" in k} == {sha: sha for sha in blobs}
    assert copied.manifest_sha256 == source.manifest_sha256
    assert dataset_copy.copies_of("mnist")["us-west-2"].store == target

    # a second copy has nothing to send and says so: no data-out charge
    again = dataset_copy.plan(account_client("aws", "us-west-2"), source, target, "us-west-2")
    assert again.missing == () and "nothing is copied and nothing is billed for data out" \
        in again.words()

    # the month's spend: the upload free (AWS's page), the copy at the price, with source
    lines = data_costs.load()
    up = next(t for t in lines if t.kind == data_costs.UPLOAD)
    key = spend.month_key(up.at)
    month = data_costs.month_lines(key, now=max(t.at for t in lines) + 1)
    by_kind = {line.kind: line for line in month}
    upload = by_kind[data_costs.UPLOAD]
    assert upload.bytes == size + len(here["lab/data/sets/mnist/manifest.json"])
    assert (upload.cost, upload.charge.source) == (0.0, "https://aws.amazon.com/s3/pricing/ "
                                                         "(Data Transfer)")
    assert str(upload.said()).startswith("Upload of dataset mnist to aws us-east-1: ")
    assert "free (https://aws.amazon.com/s3/pricing/ (Data Transfer), read 2026-12-06)" \
        in upload.said()
    copy_line = by_kind[data_costs.COPY]
    assert (copy_line.bytes, copy_line.region, copy_line.to) == (size, "us-east-1",
                                                                 "us-west-2")
    assert copy_line.cost == pytest.approx(size / GIB * 0.02)
    assert f"= {size / GIB * 0.02:.2g} USD (AWS Price List" in copy_line.said()
    # and in `gpudesk spend`, in the same words
    assert main(["spend", "--month", key, "--json"]) == 0
    data = json.loads(capsys.readouterr().out)["data"]
    assert {d["kind"]: d["bytes"] for d in data["lines"]} == {"upload": upload.bytes,
                                                               "copy": size}
    assert data["totals"]["USD"] == pytest.approx(size / GIB * 0.02, abs=1e-6)
    assert [d["text"] for d in data["lines"]] == [str(line.said()) for line in month]


def test_a_copy_cut_short_leaves_no_manifest_and_the_next_one_sends_only_the_rest(
        two_regions: Bucket, price_list: PriceList, tmp_path: Path) -> None:
    source = push(two_regions, tmp_path)
    target = parse_uri(f"s3://{WEST}/lab")
    west = account_client("aws", "us-west-2")
    plan = dataset_copy.plan(west, source, target, "us-west-2")
    assert not plan.price_known and "the price is not known (No data-out price for aws in " \
        "us-east-1 yet: AWS's public price list (AmazonS3) has not been read" in plan.words()
    cancel = threading.Event()
    calls: list[int] = []

    def after_first(done: int, total: int) -> None:
        calls.append(done)
        if done:  # after the first blob with bytes (the empty file's comes first)
            cancel.set()

    with pytest.raises(StorageError, match="was cancelled; nothing is listed"):
        dataset_copy.copy(account_client("aws", "us-east-1"), west, plan, confirmed=True,
                          progress=after_first, cancel=cancel)
    left = keys(two_regions, WEST, "lab/")
    assert len(left) == 2 and all("/blobs/" in k for k in left)  # two blobs, no manifest
    assert [t.bytes for t in data_costs.load() if t.kind == data_costs.COPY] == [calls[-1]]
    assert datasets.list_store(west, target, "us-west-2") == []
    assert "us-west-2" not in dataset_copy.copies_of("mnist")
    rest = dataset_copy.plan(west, source, target, "us-west-2")
    assert len(rest.missing) == len(plan.missing) - 2
    dataset_copy.copy(account_client("aws", "us-east-1"), west, rest, confirmed=True)
    assert [d.name for d in datasets.list_store(west, target, "us-west-2")] == ["mnist"]
    # the bytes billed: each blob once, the part before the cancel and the rest after
    copies = [t for t in data_costs.load() if t.kind == data_costs.COPY]
    assert sum(t.bytes for t in copies) == plan.bytes
    assert {(t.region, t.to) for t in copies} == {("us-east-1", "us-west-2")}


def test_a_blob_above_the_one_request_limit_is_copied_in_ranged_parts(
        two_regions: Bucket, tmp_path: Path) -> None:
    big = bytes(range(256)) * (12 * 1024 * 4)  # 12 MiB
    source = push(two_regions, tmp_path, {"big.bin": big, "small.txt": b"x"})
    target = parse_uri(f"s3://{WEST}/lab")
    recording = Recording(account_client("aws", "us-west-2"))
    plan = dataset_copy.plan(recording, source, target, "us-west-2")
    mib = 1024 * 1024
    dataset_copy.copy(account_client("aws", "us-east-1"), recording, plan, confirmed=True,
                      one_copy_max=5 * mib, part=5 * mib)
    names = [c[0] for c in recording.calls]
    assert names.count("upload_part_copy") == 3 and names.count("copy_object") == 1
    assert names.index("complete_multipart_upload") < names.index("put_object")
    sha = hashlib.sha256(big).hexdigest()
    assert keys(two_regions, WEST, f"lab/data/blobs/{sha}")[f"lab/data/blobs/{sha}"] == big


def test_routes_gpudesk_does_not_copy_are_refused_with_what_to_do(
        two_regions: Bucket, tmp_path: Path) -> None:
    source = push(two_regions, tmp_path)
    west = account_client("aws", "us-west-2")
    with pytest.raises(StorageError, match="is in us-east-1, the region dataset mnist is in"):
        dataset_copy.plan(west, source, parse_uri("s3://other/lab"), "us-east-1")
    with pytest.raises(StorageError, match="only between buckets of one cloud"):
        dataset_copy.plan(west, source, parse_uri("oss://bucket-b/lab"), "cn-beijing")
    cos = datasets.Dataset("mnist", parse_uri("cos://data-1250000000/lab"), "ap-guangzhou",
                           source.files, "", "", "0" * 64)
    with pytest.raises(StorageError, match="on AWS S3 only: tencent's copy between regions "
                       "was not tested here. Push the folder to a bucket in ap-shanghai"):
        dataset_copy.plan(west, cos, parse_uri("cos://data2-1250000000/lab"), "ap-shanghai")


# --------------------------------------------------------------------------- the run


def test_a_run_in_another_region_is_refused_with_the_cost_then_reads_the_copy(
        two_regions: Bucket, price_list: PriceList, tmp_path: Path) -> None:
    price_list.files[("AmazonS3", "us-east-1")] = (200, offer_file(extra=ROWS))
    s3_price_list.refresh("us-east-1")
    source = push(two_regions, tmp_path)
    east = SimpleNamespace(provider="aws", region="us-east-1")
    west = SimpleNamespace(provider="aws", region="us-west-2")
    data, store, region = run_data.resolve("mnist", machine=east)  # same region: as before
    assert (store, region) == (f"s3://{two_regions.name}/lab/", "us-east-1")
    with pytest.raises(StorageError) as refused:
        run_data.resolve("mnist:/data", machine=west)
    size = source.bytes
    said = str(refused.value)
    assert said.startswith(f"Dataset mnist is in s3://{two_regions.name}/lab/ (us-east-1); "
                           "the machine is in us-west-2. Copy it to a bucket of yours in "
                           "us-west-2 first, then start the run again: gpudesk data copy "
                           "mnist --to s3://BUCKET/PREFIX --to-region us-west-2.")
    assert f"{size / GIB:.2g} GB × 0.02 USD/GB = {size / GIB * 0.02:.2g} USD" in said
    assert keys(two_regions, WEST, "lab/") == {}  # nothing moved

    assert main(["data", "copy", "mnist", "--to", f"s3://{WEST}/lab", "--yes"]) == 0
    data, store, region = run_data.resolve("mnist:/data", machine=west)
    assert (store, region) == (f"s3://{WEST}/lab/", "us-west-2")
    assert data["manifest_sha256"] == source.manifest_sha256 and data["uri"] == store
    # a new version pushed: the old copy is not read; the run is refused until copied again
    (tmp_path / "ds" / "labels.csv").write_bytes(b"x,y\n5,6\n")
    assert main(["data", "push", str(tmp_path / "ds"), "mnist"]) == 0
    with pytest.raises(StorageError, match="Copy it to a bucket of yours in us-west-2"):
        run_data.resolve("mnist", machine=west)
    # an own machine (no cloud region) reads the bucket itself, as before
    assert run_data.resolve("mnist", machine=SimpleNamespace(provider="own", region=""))[1] \
        == f"s3://{two_regions.name}/lab/"


# --------------------------------------------------------------------------- the window


def test_the_windows_question_says_the_same_words_and_copies_only_on_copy(
        two_regions: Bucket, price_list: PriceList, tmp_path: Path, qtbot: Any) -> None:
    from PySide6.QtCore import Qt
    from PySide6.QtWidgets import QMessageBox
    from PySide6.QtWidgets import QPushButton
    from PySide6.QtWidgets import QWidget

    from gpudesk.ui.widgets.copy_question import ask_copy

    price_list.files[("AmazonS3", "us-east-1")] = (200, offer_file(extra=ROWS))
    s3_price_list.refresh("us-east-1")
    source = push(two_regions, tmp_path)
    target = parse_uri(f"s3://{WEST}/lab")
    west = account_client("aws", "us-west-2")
    plan = dataset_copy.plan(west, source, target, "us-west-2")
    parent = QWidget()
    qtbot.addWidget(parent)
    parent.show()
    answers: list[str] = []

    def yes() -> None:
        answers.append("yes")
        dataset_copy.copy(account_client("aws", "us-east-1"), west, plan, confirmed=True)

    box = ask_copy(parent, plan, yes, lambda: answers.append("no"))
    assert box.text() == f"{plan.words()}\n\nCopy dataset mnist to s3://{WEST}/lab/?"
    assert box.icon() == QMessageBox.Icon.Question  # the price is known
    assert box.defaultButton() is box.button(QMessageBox.StandardButton.Cancel)
    qtbot.mouseClick(box.button(QMessageBox.StandardButton.Cancel), Qt.MouseButton.LeftButton)
    assert answers == ["no"] and keys(two_regions, WEST, "lab/") == {}
    box = ask_copy(parent, plan, yes, lambda: answers.append("no"))
    copy_button = box.findChild(QPushButton, "datasetCopyYes")
    assert copy_button is not None and copy_button.text() == "Copy"
    qtbot.mouseClick(copy_button, Qt.MouseButton.LeftButton)
    assert answers == ["no", "yes"]
    assert "lab/data/sets/mnist/manifest.json" in keys(two_regions, WEST, "lab/")
