"""``gpudesk launch --store auto|none|URI`` (issue 22) against moto's EC2 over HTTP: the
choice is in the ledger's intent row (written before the cloud call) and in ``show``;
a bad URI, or a bucket on another cloud, is refused before anything is written or made."""
# ruff: noqa: F811 - fixtures imported from fixtures_* arrive as parameters

from __future__ import annotations

import contextlib
import http.server
import io
import json
import threading
from typing import Any

import pytest
from fixtures_aws import MotoAws  # noqa: F401
from fixtures_aws import aws  # noqa: F401
from fixtures_aws import moto_server  # noqa: F401
from fixtures_keyring import memory_keyring  # noqa: F401

from gpudesk.cli.entry import main
from gpudesk.services.cloud import credentials
from gpudesk.services.money.ledger import Ledger

LAUNCH = ["launch", "--provider", "aws", "--type", "g4dn.xlarge", "--region", "us-east-1",
          "--allow-from", "203.0.113.7/32", "--no-wait-ssh", "--poll", "0.01",
          "--no-instance-role"]


@pytest.fixture
def cloud(aws: MotoAws, memory_keyring: Any) -> MotoAws:
    """moto with a Deep Learning AMI, and the keys in the keyring the launcher reads."""
    credentials.save_credentials(aws.credentials)
    aws.publish_dlami("us-east-1")
    aws.client("s3").create_bucket(Bucket="my-lab-data")  # a given store must exist (issue 30)
    return aws


def _run(args: list[str]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(args)
    return code, out.getvalue(), err.getvalue()


def _launched(args: list[str]) -> dict[str, Any]:
    code, out, err = _run([*LAUNCH, *args, "--json"])
    assert code == 0, err
    data: dict[str, Any] = json.loads(out)
    return data


@pytest.mark.parametrize(("given", "kept", "summary"), [
    ([], "auto", {"uri": "auto", "role": "", "credentials": "sts"}),
    (["--store", "none"], "none", {"uri": "", "role": "", "credentials": "none"}),
    (["--store", "s3://my-lab-data/runs-2026/"], "s3://my-lab-data/runs-2026/",
     {"uri": "s3://my-lab-data/runs-2026/", "role": "", "credentials": "sts"}),
])
def test_the_store_is_in_the_intent_row_and_in_show(
        cloud: MotoAws, given: list[str], kept: str, summary: dict[str, str]) -> None:
    data = _launched(given)
    with Ledger() as ledger:
        m = ledger.get(data["id"])
        assert m is not None and m.state == "running" and m.store == kept
    assert cloud.instance_count() == 1
    code, out, err = _run(["show", data["id"], "--json"])
    assert code == 0, err
    assert json.loads(out)["store"] == summary
    code, out, _ = _run(["show", data["id"]])
    assert code == 0
    (line,) = [x for x in out.splitlines() if x.strip().startswith("run data:")]
    if kept == "none":
        assert "no bucket" in line and "copies on this computer only" in line
    elif kept == "auto":
        assert "the account's gpudesk bucket in the machine's region" in line
        assert "short-lived keys for each run" in line
    else:
        assert kept in line


@pytest.mark.parametrize(("store", "says"), [
    ("s3://Bad_Bucket/x", "'Bad_Bucket' is not a valid S3 bucket name"),
    ("ftp://bucket/x", "'ftp://bucket/x' is not a store address"),
    ("s3://ab/x", "it must be 3 to 63 characters long"),
    ("cos://lab-data-1250000000/x", "is on another cloud than the machine (AWS)"),
    ("s3://lab-data/../etc", "is not a relative path inside the run"),
])
def test_a_bad_store_launches_nothing(cloud: MotoAws, store: str, says: str) -> None:
    code, out, err = _run([*LAUNCH, "--store", store])
    assert code == 2 and out == ""
    assert says in err, err
    with Ledger() as ledger:
        assert ledger.machines(include_ended=True) == []  # no intent row either
    assert cloud.instance_count() == 0
    assert cloud.client("ec2").describe_key_pairs()["KeyPairs"] == []  # nothing made at all


def test_the_store_is_written_before_the_cloud_is_asked(aws: MotoAws,
                                                         memory_keyring: Any) -> None:
    """No Deep Learning AMI in the region: the cloud refuses after the intent row was
    written, and that row already names the bucket."""
    credentials.save_credentials(aws.credentials)
    aws.client("s3").create_bucket(Bucket="my-lab-data")
    code, _, err = _run([*LAUNCH, "--store", "s3://my-lab-data/p"])
    assert code == 1 and "GPU deep-learning image" in err
    with Ledger() as ledger:
        (m,) = ledger.machines(include_ended=True)
    assert (m.state, m.store, m.cloud_id) == ("failed", "s3://my-lab-data/p/", "")
    assert aws.instance_count() == 0


def test_a_missing_bucket_launches_nothing_and_names_it(cloud: MotoAws) -> None:
    """Issue 30: a bucket that is not there is refused before the intent row or the cloud."""
    code, out, err = _run([*LAUNCH, "--store", "s3://missing-lab-bucket/x"])
    assert code != 0 and out == ""
    assert "The bucket missing-lab-bucket does not exist" in err, err
    assert "Create it first, or give another bucket as the store" in err
    with Ledger() as ledger:
        assert ledger.machines(include_ended=True) == []
    assert cloud.instance_count() == 0
    assert cloud.client("ec2").describe_key_pairs()["KeyPairs"] == []


def test_an_unreachable_store_launches_nothing(cloud: MotoAws,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GPUDESK_STORE_ENDPOINT", "http://127.0.0.1:9")  # nothing listens
    code, _, err = _run([*LAUNCH, "--store", "s3://my-lab-data/x"])
    assert code != 0
    assert "The bucket my-lab-data could not be reached at http://127.0.0.1:9" in err, err
    with Ledger() as ledger:
        assert ledger.machines(include_ended=True) == []
    assert cloud.instance_count() == 0


class _Refusing(http.server.BaseHTTPRequestHandler):
    """An S3 endpoint that answers every request as S3 does for keys a bucket refuses."""

    def do_HEAD(self) -> None:  # noqa: N802 - http.server's name
        self.send_response(403)
        self.send_header("x-amz-bucket-region", "us-east-1")
        self.end_headers()

    def log_message(self, *args: object) -> None:
        pass


def test_a_store_that_refuses_the_keys_launches_nothing(
        cloud: MotoAws, monkeypatch: pytest.MonkeyPatch) -> None:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Refusing)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        monkeypatch.setenv("GPUDESK_STORE_ENDPOINT", f"http://127.0.0.1:{server.server_port}")
        code, _, err = _run([*LAUNCH, "--store", "s3://my-lab-data/x"])
    finally:
        server.shutdown()
        server.server_close()
    assert code != 0
    assert "The bucket my-lab-data refused the S3 account's keys (403)" in err, err
    assert "Allow s3:ListBucket on it for these keys" in err
    with Ledger() as ledger:
        assert ledger.machines(include_ended=True) == []
    assert cloud.instance_count() == 0
