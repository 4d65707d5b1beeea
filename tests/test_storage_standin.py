"""The COS and OSS stand-ins check what the real services check (so the other tests mean
something): SigV4 signatures, payload hashes, the endpoint's region, addressing, names."""

from __future__ import annotations

from typing import Any

import boto3
import pytest
from botocore.config import Config
from botocore.exceptions import ClientError
from fixtures_storage import StoreEnv  # noqa: F401
from fixtures_storage import cos_server  # noqa: F401
from fixtures_storage import oss_server  # noqa: F401
from fixtures_storage import store_env  # noqa: F401

from gpudesk.services.cloud.providers.base import Credentials
from gpudesk.services.storage import buckets
from gpudesk.services.storage.clients import endpoint_for
from gpudesk.services.storage.clients import make_client

STANDINS = pytest.mark.parametrize("store_env", ["tencent", "aliyun"], indirect=True)


def _code(err: pytest.ExceptionInfo[ClientError]) -> str:
    return str(err.value.response["Error"]["Code"])


def _raw_client(env: StoreEnv, *, style: str = "virtual", region: str = "",
                key: str = "", secret: str = "") -> Any:
    """A plain boto3 client through the stand-in, for requests gpudesk would not make."""
    assert env.standin is not None
    endpoint = endpoint_for(env.cloud, env.region)
    return boto3.session.Session(
        aws_access_key_id=key or env.creds.key_id,
        aws_secret_access_key=secret or env.creds.secret).client(
        "s3", endpoint_url=endpoint.url, region_name=region or env.region,
        config=Config(signature_version="s3v4",
                      s3={"addressing_style": style},  # type: ignore[arg-type]
                      proxies={"http": env.standin.proxy}, retries={"max_attempts": 1},
                      request_checksum_calculation="when_required"))


@STANDINS
def test_a_wrong_signature_is_refused(store_env: StoreEnv) -> None:  # noqa: F811
    env = store_env
    bad = Credentials(env.cloud, env.creds.key_id, env.creds.secret[:-1] + "X")  # type: ignore[arg-type]
    with pytest.raises(ClientError) as caught:
        make_client(env.cloud, env.region, bad, retries=1).head_bucket(Bucket="x-" + (
            env.appid or "bucket"))
    assert caught.value.response["ResponseMetadata"]["HTTPStatusCode"] == 403
    with pytest.raises(ClientError) as caught:
        make_client(env.cloud, env.region, bad, retries=1).list_objects_v2(
            Bucket="x-" + (env.appid or "bucket"))
    assert _code(caught) == "SignatureDoesNotMatch"
    assert env.standin is not None and "SignatureDoesNotMatch" in env.standin.refused
    # the same request with the right key goes through the check to the bucket lookup
    with pytest.raises(ClientError) as caught:
        env.client().list_objects_v2(Bucket="x-" + (env.appid or "bucket"))
    assert _code(caught) == "NoSuchBucket"


@STANDINS
def test_a_tampered_body_and_an_unknown_key_are_refused(store_env: StoreEnv) -> None:  # noqa: F811
    env = store_env
    store = buckets.ensure_bucket(env.client(), env.target(), env.memory).store
    client = env.client()

    def tamper(request: Any, **_: Any) -> None:
        request.body = b"not what was signed"

    client.meta.events.register_last("before-send.s3.PutObject", tamper)
    with pytest.raises(ClientError) as caught:
        client.put_object(Bucket=store.bucket, Key="k", Body=b"what was signed")
    assert _code(caught) == "XAmzContentSHA256Mismatch"
    with pytest.raises(ClientError) as caught:
        _raw_client(env, key="AKIDnobodyKnowsThisKey000000000000").list_objects_v2(
            Bucket=store.bucket)
    assert _code(caught) == "InvalidAccessKeyId"


@STANDINS
def test_the_signing_region_must_be_the_endpoints(store_env: StoreEnv) -> None:  # noqa: F811
    env = store_env
    other = "ap-beijing" if env.cloud == "tencent" else "cn-beijing"
    with pytest.raises(ClientError) as caught:
        _raw_client(env, region=other).list_objects_v2(Bucket="abc-" + (env.appid or "x"))
    assert _code(caught) == "AuthorizationHeaderMalformed"


@pytest.mark.parametrize("store_env", ["aliyun"], indirect=True)
def test_oss_refuses_path_style(store_env: StoreEnv) -> None:  # noqa: F811
    env = store_env
    store = buckets.ensure_bucket(env.client(), env.target(), env.memory).store
    with pytest.raises(ClientError) as caught:
        _raw_client(env, style="path").list_objects_v2(Bucket=store.bucket)
    assert _code(caught) == "SecondLevelDomainForbidden"
    assert caught.value.response["ResponseMetadata"]["HTTPStatusCode"] == 403
    # gpudesk's own client addresses the bucket by host name
    assert env.standin is not None
    host = f"{store.bucket}.{env.standin.service_host(env.region)}"
    assert env.standin.log and all(e.host == host for e in env.standin.log)


@pytest.mark.parametrize("store_env", ["tencent"], indirect=True)
def test_cos_bucket_names_carry_the_accounts_appid(store_env: StoreEnv) -> None:  # noqa: F811
    env = store_env
    client = env.client()
    for name in ("mybucket-1259999999", "mybucket", "-bad-1250000000",
                 "a" * 30 + "-1250000000"):
        with pytest.raises(ClientError) as caught:
            client.create_bucket(Bucket=name, CreateBucketConfiguration={
                "LocationConstraint": env.region})
        assert _code(caught) == "InvalidBucketName", name
    with pytest.raises(ClientError) as caught:
        client.create_bucket(Bucket="ok-1250000000", CreateBucketConfiguration={
            "LocationConstraint": "ap-shanghai"})
    assert _code(caught) == "IllegalLocationConstraintException"
    client.create_bucket(Bucket="ok-1250000000", CreateBucketConfiguration={
        "LocationConstraint": env.region})


@pytest.mark.parametrize("store_env", ["aliyun"], indirect=True)
def test_oss_bucket_names_are_3_to_63_lowercase(store_env: StoreEnv) -> None:  # noqa: F811
    client = store_env.client()
    # botocore cannot put these in a host name, so it falls back to path-style, which
    # OSS refuses before it looks at the name; either way nothing is created
    for name in ("ab", "a" * 64, "Upper-case", "ends-with-"):
        with pytest.raises(ClientError) as caught:
            client.create_bucket(Bucket=name, CreateBucketConfiguration={
                "LocationConstraint": store_env.region})
        assert _code(caught) in ("InvalidBucketName", "SecondLevelDomainForbidden"), name
    with pytest.raises(ClientError) as caught:  # a host name, but no OSS bucket name
        client.create_bucket(Bucket="my.bucket", CreateBucketConfiguration={
            "LocationConstraint": store_env.region})
    assert _code(caught) == "InvalidBucketName"
    assert store_env.standin is not None and store_env.standin.buckets == {}


@STANDINS
def test_listing_pages_at_1000_and_the_bill_counts(store_env: StoreEnv) -> None:  # noqa: F811
    env = store_env
    client = env.client()
    store = buckets.ensure_bucket(client, env.target(), env.memory).store
    for i in range(1001):
        client.put_object(Bucket=store.bucket, Key=f"k/{i:04d}", Body=b"12345")
    page = client.list_objects_v2(Bucket=store.bucket, MaxKeys=5000)
    assert page["KeyCount"] == 1000 and page["IsTruncated"]
    rest = client.list_objects_v2(Bucket=store.bucket, MaxKeys=5000,
                                  ContinuationToken=page["NextContinuationToken"])
    assert [o["Key"] for o in rest["Contents"]] == ["k/1000"] and not rest["IsTruncated"]
    with pytest.raises(ClientError) as caught:
        client.delete_objects(Bucket=store.bucket, Delete={
            "Objects": [{"Key": f"k/{i:04d}"} for i in range(1001)]})
    assert _code(caught) == "MalformedXML"
    assert env.standin is not None
    env.standin.advance(3600)
    bill = env.standin.bill(env.account_id)
    assert bill.byte_seconds == 1001 * 5 * 3600
    assert bill.requests["PutObject"] == 1001 and bill.requests["ListObjectsV2"] == 2
