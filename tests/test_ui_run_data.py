"""The Run page's Data field (issue 32): typed into, Run clicked; the machine fetches the
dataset from the bucket before the script starts, and the run's record names its version.
A name that is not a dataset is said and nothing starts."""
# ruff: noqa: F811 - pytest fixtures imported from the fixture modules arrive as parameters

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from fixtures_agent_store import Bucket  # noqa: F401 - fixtures
from fixtures_agent_store import aws  # noqa: F401 - fixtures
from fixtures_agent_store import bucket  # noqa: F401 - fixtures
from fixtures_agent_store import moto_server  # noqa: F401 - fixtures
from fixtures_keyring import memory_keyring  # noqa: F401 - fixture
from fixtures_sshd import SshdServer  # noqa: F401 - fixtures
from fixtures_sshd import sshd  # noqa: F401 - fixtures
from test_run_data_resume import READS_DATA
from test_ui_run import WAIT_MS  # noqa: F401 - fixtures
from test_ui_run import fill_pinned  # noqa: F401 - fixtures
from test_ui_run import ledger  # noqa: F401 - fixtures
from test_ui_run import page  # noqa: F401 - fixtures

from gpudesk.services.cloud.credentials import save_credentials
from gpudesk.services.runs import detached as runs
from gpudesk.services.storage import datasets
from gpudesk.services.storage.clients import account_client
from gpudesk.services.storage.uri import StoreUri
from gpudesk.ui.run.run_page import RunPage


@pytest.fixture
def pushed(bucket: Bucket, tmp_path: Path, memory_keyring: object,
           monkeypatch: pytest.MonkeyPatch) -> datasets.Dataset:
    """A dataset in moto's S3, pushed from this computer; the machine's agent reaches moto."""
    monkeypatch.setenv("GPUDESK_STORE_ENDPOINT_AWS", bucket.moto.endpoint)
    monkeypatch.setenv("GPUDESK_STORE_ADDRESSING_AWS", "path")
    save_credentials(bucket.moto.credentials)
    folder = tmp_path / "dataset"
    folder.mkdir()
    (folder / "vocab.txt").write_bytes(b"a\nb\n")
    return datasets.push(account_client("aws", "us-east-1"), StoreUri("aws", bucket.name),
                         "us-east-1", folder, "vocab")


def test_the_data_field_gives_the_run_its_dataset(  # type: ignore[no-untyped-def]
        qtbot, page: RunPage, sshd: SshdServer, tmp_path: Path,
        pushed: datasets.Dataset) -> None:
    out = fill_pinned(page, sshd, tmp_path, "--max-steps 2 --ckpt-steps 2")
    (tmp_path / "proj" / "reads_data.py").write_text(READS_DATA)
    page.script.setText("reads_data.py")
    qtbot.keyClicks(page.form_box.data, "vocab")
    page.run_button.click()
    qtbot.waitUntil(lambda: (out / "data-seen-0.json").exists(), timeout=WAIT_MS)
    seen: dict[str, Any] = json.loads((out / "data-seen-0.json").read_text())
    assert list(seen["files"]) == ["vocab.txt"]
    (record_path,) = runs.RunRecord.folder().glob("*.json")
    record = runs.RunRecord.load(record_path.stem)
    assert record.data["manifest_sha256"] == pushed.manifest_sha256
    assert record.store_uri == str(pushed.store)


def test_a_name_that_is_no_dataset_is_said_and_nothing_starts(  # type: ignore[no-untyped-def]
        qtbot, page: RunPage, sshd: SshdServer, tmp_path: Path,
        pushed: datasets.Dataset) -> None:
    fill_pinned(page, sshd, tmp_path, "--max-steps 2")
    qtbot.keyClicks(page.form_box.data, "nothing")
    page.run_button.click()
    qtbot.waitUntil(lambda: not page.launch_runner.busy and not page.starting,
                    timeout=WAIT_MS)
    assert "No dataset named nothing is known here" in page.status.text()
    assert not (tmp_path / "machine").exists()
    assert not list(runs.RunRecord.folder().glob("*.json"))
