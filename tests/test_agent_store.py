"""The agent's stdlib S3 client against moto's server: signing, paging, multipart, credentials."""
# ruff: noqa: F811 - pytest fixtures imported from fixtures_agent_store arrive as parameters

from __future__ import annotations

import hashlib
import json
import os
import time
from pathlib import Path
from typing import Any

import pytest
from fixtures_agent_store import STS_SECRET  # noqa: F401 - fixtures
from fixtures_agent_store import STS_TOKEN  # noqa: F401 - fixtures
from fixtures_agent_store import Bucket  # noqa: F401 - fixtures
from fixtures_agent_store import aws  # noqa: F401 - fixtures
from fixtures_agent_store import bucket  # noqa: F401 - fixtures
from fixtures_agent_store import moto_server  # noqa: F401 - fixtures
from fixtures_agent_store import write_sts_file  # noqa: F401 - fixtures
from metadata_standin import MetadataStandin

from gpudesk.agent.cloud_stop import Creds
from gpudesk.agent.store import CredentialSource
from gpudesk.agent.store import Store
from gpudesk.agent.store import StoreConfig
from gpudesk.agent.store import StoreError
from gpudesk.agent.store import default_endpoint
from gpudesk.agent.store import sign


def _store(bucket: Bucket, **config: Any) -> Store:
    creds = config.pop("credentials_file", None) or str(write_sts_file(bucket.root / "sts.json"))
    data = {"cloud": "aws", "region": "us-east-1", "bucket": bucket.name,
            "endpoint": bucket.moto.endpoint, "addressing": "path",
            "credentials_file": creds, **config}
    return Store(StoreConfig.from_dict(data), multipart_threshold=8 << 20, part_size=5 << 20)


def test_sigv4_matches_the_aws_documented_example() -> None:
    """The GET Object example of the AWS SigV4 docs (examplebucket, 20130524)."""
    creds = Creds("AKIAIOSFODNN7EXAMPLE", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", "")
    now = time.mktime(time.strptime("20130524T000000", "%Y%m%dT%H%M%S")) - time.timezone
    headers = sign(creds, "GET", "examplebucket.s3.amazonaws.com", "/test.txt", {},
                   {"range": "bytes=0-9"}, hashlib.sha256(b"").hexdigest(), "us-east-1", now)
    assert headers["authorization"] == (
        "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request, "
        "SignedHeaders=host;range;x-amz-content-sha256;x-amz-date, "
        "Signature=f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41")


def test_put_list_get_delete_and_multipart(bucket: Bucket, tmp_path: Path) -> None:
    store = _store(bucket)
    small = tmp_path / "small.bin"
    small.write_bytes(os.urandom(3000))
    big = tmp_path / "big.bin"
    big.write_bytes(os.urandom(12 << 20))  # three parts of 5, 5 and 2 MiB
    a = store.put_file("runs/r1/checkpoints/a b+c.pt", small)
    b = store.put_file("runs/r1/checkpoints/big.pt", big)
    assert (a.size, b.size) == (3000, 12 << 20) and b.etag.endswith("-3")
    head = bucket.s3.head_object(Bucket=bucket.name, Key="runs/r1/checkpoints/big.pt")
    assert head["Metadata"]["sha256"] == hashlib.sha256(big.read_bytes()).hexdigest()
    for i in range(5):
        store.put_bytes(f"runs/r1/logs/log.{i:06d}", b"line %d\n" % i, "text/plain")
    listed = store.list("runs/r1/", page_size=2)  # three pages and more
    assert sorted(o.key for o in listed) == bucket.keys("runs/r1/")
    assert len(listed) == 7
    got = store.get_file("runs/r1/checkpoints/big.pt", tmp_path / "dl" / "big.pt",
                         sha256=hashlib.sha256(big.read_bytes()).hexdigest(), size=12 << 20)
    assert got.read_bytes() == big.read_bytes()
    assert [p.name for p in got.parent.iterdir()] == ["big.pt"]  # no temporary left
    with pytest.raises(StoreError, match="differs from its SHA-256"):
        store.get_file("runs/r1/checkpoints/a b+c.pt", tmp_path / "dl" / "bad.pt",
                       sha256="0" * 64)
    assert not (tmp_path / "dl" / "bad.pt").exists()
    with pytest.raises(StoreError, match="differs from its SHA-256; not uploaded"):
        store.put_file("runs/r1/checkpoints/x.pt", small, sha256="0" * 64)
    store.delete("runs/r1/checkpoints/a b+c.pt")
    assert store.get_bytes("runs/r1/checkpoints/a b+c.pt") is None
    assert "runs/r1/checkpoints/a b+c.pt" not in bucket.keys("runs/")


def test_virtual_hosted_requests_reach_the_store_through_a_proxy(bucket: Bucket) -> None:
    # The bucket's own host name (as on AWS/OSS), sent to the proxy as an absolute URI;
    # moto, as the proxy's far end, finds the bucket in the Host header.
    # plain http here: an https endpoint would CONNECT through the proxy, which moto refuses
    store = _store(bucket, endpoint="http://s3.us-east-1.amazonaws.com",
                   addressing="virtual", proxy=bucket.moto.endpoint)
    assert store.host == f"{bucket.name}.s3.us-east-1.amazonaws.com"
    store.put_bytes("runs/r1/manifest.json", b"{}")
    assert bucket.read("runs/r1/manifest.json") == b"{}"
    assert [o.key for o in store.list("runs/")] == ["runs/r1/manifest.json"]


def test_default_endpoints() -> None:
    assert default_endpoint("aws", "us-west-2") == "https://s3.us-west-2.amazonaws.com"
    assert default_endpoint("tencent", "ap-guangzhou") == "https://cos.ap-guangzhou.myqcloud.com"
    assert default_endpoint("aliyun", "cn-hangzhou") == "https://s3.oss-cn-hangzhou.aliyuncs.com"


def _machine_role(bucket: Bucket) -> dict[str, str]:
    """An IAM role limited to the run's prefix, assumed through moto's STS."""
    iam = bucket.moto.client("iam")
    iam.create_role(RoleName="gpudesk-run-r1", AssumeRolePolicyDocument=json.dumps({
        "Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": "sts:AssumeRole",
                                                "Principal": {"Service": "ec2.amazonaws.com"}}]}))
    iam.put_role_policy(RoleName="gpudesk-run-r1", PolicyName="prefix", PolicyDocument=json.dumps({
        "Version": "2012-10-17", "Statement": [
            {"Effect": "Allow", "Action": ["s3:PutObject", "s3:GetObject", "s3:DeleteObject"],
             "Resource": f"arn:aws:s3:::{bucket.name}/runs/r1/*"}]}))
    got = bucket.moto.client("sts").assume_role(
        RoleArn="arn:aws:iam::123456789012:role/gpudesk-run-r1", RoleSessionName="machine")
    c = got["Credentials"]
    return {"key_id": c["AccessKeyId"], "secret": c["SecretAccessKey"],
            "token": c["SessionToken"]}


def _changed(secret: str) -> str:
    """The secret with its last character changed (never to itself: a secret that
    already ended in "x" once made this test pass its wrong-secret PUT)."""
    return secret[:-1] + ("y" if secret.endswith("x") else "x")


def test_a_signature_with_a_wrong_secret_is_refused_and_denials_name_the_action(
        bucket: Bucket) -> None:
    role = _machine_role(bucket)
    good = write_sts_file(bucket.root / "good.json", key_id=role["key_id"],
                          secret=role["secret"], token=role["token"])
    bad = write_sts_file(bucket.root / "bad.json", key_id=role["key_id"],
                         secret=_changed(role["secret"]), token=role["token"])
    with bucket.moto.enforce_iam():  # moto now recomputes every signature and checks IAM
        _store(bucket, credentials_file=str(good)).put_bytes("runs/r1/manifest.json", b"{}")
        with pytest.raises(StoreError) as wrong:
            _store(bucket, credentials_file=str(bad)).put_bytes("runs/r1/x.json", b"{}")
        with pytest.raises(StoreError) as outside:
            _store(bucket, credentials_file=str(good)).put_bytes("runs/r2/x.json", b"{}")
    assert wrong.value.status == 403 and wrong.value.code == "SignatureDoesNotMatch"
    assert "s3:PutObject on gpudesk-runs-test/runs/r1/x.json was denied" in str(wrong.value)
    assert outside.value.code == "AccessDenied"
    assert "s3:PutObject on gpudesk-runs-test/runs/r2/x.json was denied" in str(outside.value)
    assert bucket.keys() == ["runs/r1/manifest.json"]
    for exc in (wrong.value, outside.value):
        assert role["secret"] not in str(exc) and role["token"] not in str(exc)


def test_role_credentials_come_from_the_metadata_and_are_refreshed_before_expiry(
        bucket: Bucket) -> None:
    issued: list[str] = []
    clock = [time.time()]

    def issue() -> dict[str, str]:
        n = len(issued)
        issued.append(f"ASIAROLE{n:012d}")
        expiry = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(clock[0] + 3600))
        return {"Code": "Success", "AccessKeyId": issued[-1],
                "SecretAccessKey": f"role-secret-{n}", "Token": f"role-token-{n}",
                "Expiration": expiry}

    with MetadataStandin("aws", "gpudesk-run-r1", "i-0123", "us-east-1", issue) as md:
        config = StoreConfig.from_dict({"cloud": "aws", "region": "us-east-1",
                                        "bucket": bucket.name, "role": "gpudesk-run-r1",
                                        "metadata": md.url, "endpoint": bucket.moto.endpoint,
                                        "addressing": "path"})
        creds = CredentialSource(config, now=lambda: clock[0])
        store = Store(config, creds, now=lambda: clock[0])
        store.put_bytes("runs/r1/a.json", b"1")
        store.put_bytes("runs/r1/b.json", b"2")
        assert issued == ["ASIAROLE000000000000"]  # one fetch serves until near expiry
        clock[0] += 3600 - 200  # within five minutes of the expiry: fetched again
        store.put_bytes("runs/r1/c.json", b"3")
        assert len(issued) == 2 and creds.get().key_id == "ASIAROLE000000000001"
        assert "role-secret" not in repr(creds.get())
        assert any(h.startswith("PUT /latest/api/token") for h in md.hits)  # IMDSv2
    assert bucket.keys() == ["runs/r1/a.json", "runs/r1/b.json", "runs/r1/c.json"]


def test_sts_file_must_be_private_unexpired_and_short_lived(bucket: Bucket) -> None:
    path = write_sts_file(bucket.root / "sts.json")
    os.chmod(path, 0o644)
    with pytest.raises(StoreError, match="must be 600"):
        _store(bucket, credentials_file=str(path)).put_bytes("runs/r1/a", b"")
    expired = write_sts_file(bucket.root / "old.json", expires_in=-10)
    with pytest.raises(StoreError, match="expired at"):
        _store(bucket, credentials_file=str(expired)).put_bytes("runs/r1/a", b"")
    long_lived = bucket.root / "keys.json"
    fd = os.open(long_lived, os.O_WRONLY | os.O_CREAT, 0o600)
    with os.fdopen(fd, "w") as fh:
        json.dump({"key_id": "AKIALONGLIVED0000001", "secret": STS_SECRET}, fh)
    with pytest.raises(StoreError, match="never the account's keys") as exc:
        _store(bucket, credentials_file=str(long_lived)).put_bytes("runs/r1/a", b"")
    assert STS_SECRET not in str(exc.value) and STS_TOKEN not in str(exc.value)
    with pytest.raises(StoreError, match="neither a role nor"):
        Store(StoreConfig.from_dict({"cloud": "aws", "region": "us-east-1", "bucket": "b"}))


def test_an_unreachable_bucket_says_so(bucket: Bucket) -> None:
    store = _store(bucket, endpoint="http://127.0.0.1:9")
    with pytest.raises(StoreError, match=r"^cannot reach the bucket: gpudesk-runs-test at "
                                         r"127\.0\.0\.1:9 \(ConnectionRefusedError\)$"):
        store.put_bytes("runs/r1/manifest.json", b"{}")
