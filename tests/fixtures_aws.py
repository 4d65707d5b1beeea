"""A real moto server on 127.0.0.1 for the AWS provider, reset before every test.

Use from a test module with ``from fixtures_aws import moto_server, aws  # noqa: F401``.
The ``aws`` fixture points ``AWS_ENDPOINT_URL`` at the server, empties every
other AWS setting (profile, keys, config files, proxies), and refuses any HTTP
request botocore would send anywhere but 127.0.0.1, so no test can reach AWS.

moto lets nobody write the ``/aws/service/...`` SSM tree or Amazon-owned AMIs
(AWS publishes those), so :meth:`MotoAws.publish_dlami` adds them to the
in-process backends the way AWS's own publishing would make them appear.
"""

from __future__ import annotations

import json
import os
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC
from datetime import datetime
from typing import Any
from urllib.parse import urlsplit

import boto3
import botocore.httpsession
import pytest

from gpudesk.services.cloud.providers.aws import AwsProvider
from gpudesk.services.cloud.providers.base import Credentials

ACCOUNT = "123456789012"  # moto's default account
AMAZON_OWNER = "898082745236"  # the account that publishes the Deep Learning AMIs
KEY_ID = "AKIAGPUDESKTEST00001"
SECRET = "gPuDeSk/SeCrEt+KeY0123456789abcdefGHIJKL"  # 40 chars, looks like an AWS secret
DLAMI_PARAM = ("/aws/service/deeplearning/ami/x86_64/"
               "oss-nvidia-driver-gpu-pytorch-{torch}-ubuntu-{ubuntu}/latest/ami-id")
_AWS_ENV = ("AWS_PROFILE", "AWS_DEFAULT_PROFILE", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY",
            "AWS_SESSION_TOKEN", "AWS_SECURITY_TOKEN", "AWS_DEFAULT_REGION", "AWS_REGION",
            "AWS_ROLE_ARN", "AWS_WEB_IDENTITY_TOKEN_FILE", "AWS_CA_BUNDLE",
            "HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy", "ALL_PROXY", "all_proxy")


@dataclass
class MotoAws:
    endpoint: str
    credentials: Credentials

    def provider(self, **kwargs: Any) -> AwsProvider:
        kwargs.setdefault("endpoint_url", self.endpoint)
        return AwsProvider(self.credentials, **kwargs)

    def client(self, service: str, region: str = "us-east-1") -> Any:
        """A plain boto3 client for setting up and inspecting the fake cloud."""
        return boto3.session.Session(
            aws_access_key_id="AKIAADMINADMINADMIN1", aws_secret_access_key="admin-secret",
            region_name=region).client(service, endpoint_url=self.endpoint)  # type: ignore

    def post(self, path: str, body: bytes = b"") -> dict[str, Any]:
        req = urllib.request.Request(self.endpoint + path, data=body, method="POST",
                                     headers={"Content-Type": "text/plain"})
        with urllib.request.urlopen(req, timeout=10) as resp:  # noqa: S310 - 127.0.0.1 only
            text = resp.read().decode() or "{}"
        result: dict[str, Any] = json.loads(text)
        return result

    def publish_image(self, region: str, ami_id: str, name: str, created: datetime,
                      *, arch: str = "x86_64") -> str:
        """An Amazon-owned AMI, as AWS publishes the Deep Learning AMIs."""
        from moto.ec2.models import ec2_backends
        from moto.ec2.models.amis import Ami

        backend = ec2_backends[ACCOUNT][region]
        backend.amis[ami_id] = Ami(
            backend, ami_id=ami_id, name=name, owner_id=AMAZON_OWNER, owner_alias="amazon",
            public=True, architecture=arch, virtualization_type="hvm", creation_date=created,
            root_device_name="/dev/sda1", root_device_type="ebs", region_name=f"{region}a")
        return ami_id

    def publish_parameter(self, region: str, name: str, value: str) -> None:
        """A public SSM parameter under /aws/service (write-protected for users)."""
        from moto.ssm.models import Parameter
        from moto.ssm.models import ssm_backends

        backend = ssm_backends[ACCOUNT][region]
        backend._parameters[name].append(Parameter(  # type: ignore[abstract]
            account_id=ACCOUNT, name=name, value=value, parameter_type="String",
            description=None, allowed_pattern=None, keyid=None,
            last_modified_date=datetime.now(UTC), version=1, data_type="aws:ec2:image"))

    def publish_dlami(self, region: str = "us-east-1", *, torch: str = "2.9",
                      ubuntu: str = "24.04", ami_id: str = "ami-0d1a0000000000001") -> str:
        """A Deep Learning AMI and its SSM parameter, like AWS's current release."""
        self.publish_image(region, ami_id,
                           f"Deep Learning OSS Nvidia Driver AMI GPU PyTorch {torch} "
                           f"(Ubuntu {ubuntu}) 20260103", datetime(2026, 1, 3, tzinfo=UTC))
        self.publish_parameter(region, DLAMI_PARAM.format(torch=torch, ubuntu=ubuntu), ami_id)
        return ami_id

    @contextmanager
    def enforce_iam(self, free_calls: int = 0) -> Iterator[None]:
        """Make moto check signatures and IAM policies after ``free_calls`` requests."""
        self.post("/moto-api/reset-auth", str(free_calls).encode())
        try:
            yield
        finally:
            self.post("/moto-api/reset-auth", b"inf")

    def instance_count(self, region: str = "us-east-1") -> int:
        pages = self.client("ec2", region).get_paginator("describe_instances").paginate()
        return sum(len(r["Instances"]) for page in pages for r in page["Reservations"])


@pytest.fixture(scope="session")
def moto_server() -> Iterator[str]:
    """One ThreadedMotoServer for the session; its base URL."""
    from moto.server import ThreadedMotoServer

    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    try:
        yield f"http://{host}:{port}"
    finally:
        server.stop()


@pytest.fixture
def aws(moto_server: str, monkeypatch: pytest.MonkeyPatch) -> Iterator[MotoAws]:
    """A freshly reset moto, AWS_ENDPOINT_URL pointing at it, and dummy keys."""
    for name in _AWS_ENV:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_ENDPOINT_URL", moto_server)
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    monkeypatch.setenv("AWS_CONFIG_FILE", os.devnull)
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", os.devnull)
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")

    real_send = botocore.httpsession.URLLib3Session.send

    def local_only(self: Any, request: Any) -> Any:
        host = urlsplit(request.url).hostname
        if host != "127.0.0.1":
            raise AssertionError(f"a test tried to reach {host}; only 127.0.0.1 is allowed")
        return real_send(self, request)

    monkeypatch.setattr(botocore.httpsession.URLLib3Session, "send", local_only)
    env = MotoAws(moto_server, Credentials("aws", KEY_ID, SECRET))
    env.post("/moto-api/reset")
    yield env
