"""One fixture, ``store_env``, for the user's bucket on all three clouds.

AWS S3 is moto's server (``fixtures_aws.aws``); COS and OSS are the stand-ins of
``cos_standin``/``oss_standin``, reached as an HTTP proxy on 127.0.0.1 with the real
host names (``GPUDESK_STORE_PROXY``). Every request botocore sends is checked to go to
127.0.0.1 (directly, or through that proxy). Use from a test module with
``from fixtures_storage import store_env, cos_server, oss_server  # noqa: F401`` and
``from fixtures_aws import moto_server, aws  # noqa: F401``.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from collections.abc import Iterator
from dataclasses import dataclass
from dataclasses import field
from typing import Any
from urllib.parse import urlsplit

import botocore.httpsession
import pytest
from cos_standin import cos_standin
from fixtures_aws import ACCOUNT
from fixtures_aws import MotoAws
from oss_standin import oss_standin
from s3compat_standin import S3CompatStandin

from gpudesk.services.cloud.providers.base import Credentials
from gpudesk.services.storage.buckets import BucketMemory
from gpudesk.services.storage.buckets import BucketTarget
from gpudesk.services.storage.clients import PROXY_ENV
from gpudesk.services.storage.clients import make_client

CLOUDS = ("aws", "tencent", "aliyun")
REGIONS = {"aws": "eu-west-1", "tencent": "ap-guangzhou", "aliyun": "cn-hangzhou"}
COS_APPID = "1250000000"
KEYS = {  # key id, secret: shaped like each cloud's own
    "tencent": ("AKIDgpudeskCosStandin0123456789abcd", "CosSecretKey0123456789abcdefGHIJ"),
    "aliyun": ("LTAI5tGpudeskOssStandin01", "OssSecretKey0123456789abcdefGH"),
}
OTHER = ("AKIDotherAccount000000000000000000", "OtherSecret0000000000000000000000")
_ENV = ("HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy", "ALL_PROXY", "all_proxy",
        "AWS_PROFILE", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN",
        "GPUDESK_STORE_ENDPOINT")


@dataclass
class StoreEnv:
    cloud: str
    region: str
    account_id: str
    creds: Credentials
    memory: BucketMemory
    appid: str = ""
    standin: S3CompatStandin | None = None
    moto: MotoAws | None = None
    _counter: list[int] = field(default_factory=lambda: [0])

    def client(self, creds: Credentials | None = None) -> Any:
        return make_client(self.cloud, self.region, creds or self.creds, retries=1)

    def target(self) -> BucketTarget:
        return BucketTarget(self.cloud, self.region, self.account_id, self.appid)

    # ------------------------------------------------------------------ other accounts

    def other_account_takes(self, name: str) -> None:
        """Bucket ``name`` is taken before gpudesk asks for it: on S3 and OSS by another
        account; on COS, whose names end with the account's own APPID, by this account
        in another region (COS names are unique per account, across regions)."""
        if self.standin is not None:
            if self.cloud == "tencent":
                client = make_client("tencent", "ap-shanghai", self.creds, retries=1)
                region = "ap-shanghai"
            else:
                key, secret = OTHER
                self.standin.add_account(key, secret, "other-account")
                client = make_client(self.cloud, self.region,
                                     Credentials(self.cloud, key, secret),  # type: ignore[arg-type]
                                     retries=1)
                region = self.region
            client.create_bucket(Bucket=name, CreateBucketConfiguration={
                "LocationConstraint": region})
            return
        assert self.moto is not None
        other = self._moto_other_account()
        client = make_client("aws", self.region, other, retries=1)
        client.create_bucket(Bucket=name, CreateBucketConfiguration={
            "LocationConstraint": self.region})

    def _moto_other_account(self) -> Credentials:
        assert self.moto is not None
        sts = self.moto.client("sts", self.region)
        answer = sts.assume_role(RoleArn="arn:aws:iam::111122223333:role/other",
                                 RoleSessionName="other")["Credentials"]
        return Credentials("aws", answer["AccessKeyId"], answer["SecretAccessKey"],
                           answer["SessionToken"])

    def denied(self, action: str) -> tuple[Credentials, Callable[[], Any]]:
        """Keys of this account that may do everything but ``action`` (the cloud's
        policy name), and a context manager that makes the cloud enforce it."""
        import contextlib

        self._counter[0] += 1
        if self.standin is not None:
            key = f"{KEYS[self.cloud][0][:-4]}{self._counter[0]:04d}"
            secret = f"denied-secret-{self._counter[0]:04d}-0123456789abcdef"
            self.standin.add_account(key, secret, self.account_id, appid=self.appid,
                                     denied={action})
            return Credentials(self.cloud, key, secret), contextlib.nullcontext  # type: ignore
        assert self.moto is not None
        iam = self.moto.client("iam")
        user = f"limited{self._counter[0]}"
        iam.create_user(UserName=user)
        iam.put_user_policy(UserName=user, PolicyName="all-but-one", PolicyDocument=json.dumps(
            {"Version": "2012-10-17", "Statement": [
                {"Effect": "Allow", "Action": "s3:*", "Resource": "*"},
                {"Effect": "Deny", "Action": action, "Resource": "*"}]}))
        made = iam.create_access_key(UserName=user)["AccessKey"]
        creds = Credentials("aws", made["AccessKeyId"], made["SecretAccessKey"])
        return creds, self.moto.enforce_iam

    # ------------------------------------------------------------------ inspection

    def bucket_names(self) -> list[str]:
        if self.standin is not None:
            return sorted(n for n, b in self.standin.buckets.items()
                          if b.owner == self.account_id)
        assert self.moto is not None
        return sorted(b["Name"] for b in self.moto.client("s3").list_buckets()["Buckets"])

    def bucket_region(self, name: str) -> str:
        if self.standin is not None:
            return self.standin.buckets[name].region
        assert self.moto is not None
        found = self.moto.client("s3").get_bucket_location(Bucket=name)
        return str(found.get("LocationConstraint") or "us-east-1")

    def bucket_tags(self, name: str) -> dict[str, str]:
        if self.standin is not None:
            return dict(self.standin.buckets[name].tags)
        assert self.moto is not None
        tags = self.moto.client("s3", self.region).get_bucket_tagging(Bucket=name)["TagSet"]
        return {t["Key"]: t["Value"] for t in tags}

    def bucket_rules(self, name: str) -> list[dict[str, Any]]:
        """Lifecycle rules as (ID, prefix, expiration date or None, abort days or None)."""
        if self.standin is not None:
            return [{"ID": r["ID"], "Prefix": r["Prefix"], "Date": r.get("Date"),
                     "AbortDays": r.get("AbortDays")}
                    for r in self.standin.buckets[name].rules]
        assert self.moto is not None
        rules = self.moto.client("s3", self.region).get_bucket_lifecycle_configuration(
            Bucket=name)["Rules"]
        return [{"ID": r["ID"], "Prefix": r.get("Filter", {}).get("Prefix", r.get("Prefix")),
                 "Date": r.get("Expiration", {}).get("Date"),
                 "AbortDays": r.get("AbortIncompleteMultipartUpload", {}).get(
                     "DaysAfterInitiation")} for r in rules]

    def object_keys(self, bucket: str) -> list[str]:
        if self.standin is not None:
            return sorted(self.standin.buckets[bucket].objects)
        assert self.moto is not None
        pages = self.moto.client("s3", self.region).get_paginator("list_objects_v2").paginate(
            Bucket=bucket)
        return sorted(o["Key"] for p in pages for o in p.get("Contents", []))


def _guard_proxy(monkeypatch: pytest.MonkeyPatch, proxy: str) -> None:
    """Refuse any request that would leave 127.0.0.1: plain http through the stand-in."""
    real_send = botocore.httpsession.URLLib3Session.send

    def local_only(self: Any, request: Any) -> Any:
        parts = urlsplit(request.url)
        if parts.scheme != "http" or urlsplit(os.environ.get(PROXY_ENV, "")).hostname \
                != "127.0.0.1" or self._proxy_config.proxy_url_for(request.url) != proxy:
            raise AssertionError(f"a test tried to reach {parts.hostname} directly")
        return real_send(self, request)

    monkeypatch.setattr(botocore.httpsession.URLLib3Session, "send", local_only)


@pytest.fixture(scope="session")
def cos_server() -> Iterator[S3CompatStandin]:
    server = cos_standin().start()
    yield server
    server.stop()


@pytest.fixture(scope="session")
def oss_server() -> Iterator[S3CompatStandin]:
    server = oss_standin().start()
    yield server
    server.stop()


@pytest.fixture(params=CLOUDS)
def store_env(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch,
              tmp_path: Any) -> StoreEnv:
    cloud: str = request.param
    memory = BucketMemory(tmp_path / "store_buckets.json")
    for name in _ENV:
        monkeypatch.delenv(name, raising=False)
    if cloud == "aws":
        moto: MotoAws = request.getfixturevalue("aws")
        monkeypatch.delenv(PROXY_ENV, raising=False)
        return StoreEnv("aws", REGIONS["aws"], ACCOUNT, moto.credentials, memory, moto=moto)
    server: S3CompatStandin = request.getfixturevalue(
        "cos_server" if cloud == "tencent" else "oss_server")
    server.reset()
    key, secret = KEYS[cloud]
    appid = COS_APPID if cloud == "tencent" else ""
    account_id = "100012345678" if cloud == "tencent" else "1234567890123456"
    server.add_account(key, secret, account_id, appid=appid)
    monkeypatch.setenv(PROXY_ENV, server.proxy)
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
    _guard_proxy(monkeypatch, server.proxy)
    return StoreEnv(cloud, REGIONS[cloud], account_id, Credentials(cloud, key, secret),  # type: ignore[arg-type]
                    memory, appid=appid, standin=server)
