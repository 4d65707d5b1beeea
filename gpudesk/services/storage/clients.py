"""A boto3 S3 client per (cloud, region, credentials), for S3, COS and OSS alike.

COS and OSS are reached through their S3-compatible endpoints with virtual-hosted
addressing and SigV4 (OSS refuses path-style; new COS buckets do too). Checksums
are sent only when an operation requires one: botocore's newer default adds
``aws-chunked`` trailers that OSS's S3 layer does not take.

Tests: ``AWS_ENDPOINT_URL`` points S3 at moto; ``GPUDESK_STORE_PROXY`` sends the COS
and OSS requests, over plain http with their real host names, through a proxy on
127.0.0.1 (the stand-in), so that virtual-hosted names need no DNS.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

from gpudesk.services.cloud.providers.base import Credentials

PROXY_ENV = "GPUDESK_STORE_PROXY"
ENDPOINT_ENV = "GPUDESK_STORE_ENDPOINT"  # overrides every cloud's endpoint (tests, mirrors)


@dataclass(frozen=True)
class Endpoint:
    url: str | None  # None: boto3's own (honours AWS_ENDPOINT_URL)
    proxy: str | None


def endpoint_for(cloud: str, region: str) -> Endpoint:
    """The S3-compatible endpoint of ``cloud`` in ``region`` (sources in docs/storage.md)."""
    proxy = os.environ.get(PROXY_ENV) or None
    override = os.environ.get(ENDPOINT_ENV) or None
    scheme = "http" if proxy else "https"
    if override:
        return Endpoint(override.format(region=region), proxy)
    if cloud == "aws":
        return Endpoint(f"{scheme}://s3.{region}.amazonaws.com" if proxy else None, proxy)
    if cloud == "tencent":
        return Endpoint(f"{scheme}://cos.{region}.myqcloud.com", proxy)
    if cloud == "aliyun":
        return Endpoint(f"{scheme}://s3.oss-{region}.aliyuncs.com", proxy)
    raise ValueError(f"unknown cloud {cloud!r}")


def make_client(cloud: str, region: str, credentials: Credentials, *,
                retries: int = 3) -> Any:
    """A botocore S3 client; blocking, so call it from a worker thread."""
    import boto3
    from botocore.config import Config

    endpoint = endpoint_for(cloud, region)
    config = Config(
        region_name=region, signature_version="s3v4",
        s3={"addressing_style": "virtual"},
        proxies={"http": endpoint.proxy} if endpoint.proxy else None,
        retries={"max_attempts": retries, "mode": "standard"},
        connect_timeout=10, read_timeout=60,
        request_checksum_calculation="when_required",
        response_checksum_validation="when_required",
    )
    session = boto3.session.Session(
        aws_access_key_id=credentials.key_id, aws_secret_access_key=credentials.secret,
        aws_session_token=credentials.session_token or None, region_name=region)
    return session.client("s3", endpoint_url=endpoint.url, config=config)


def account_client(cloud: str, region: str) -> Any:
    """A client with the account's own keys from the keyring (the desktop's side only: they
    never reach a machine). Raises ProviderError "auth" when the keyring has none."""
    from gpudesk.services.cloud.accounts import MSG_NO_ACCOUNT
    from gpudesk.services.cloud.accounts import title
    from gpudesk.services.cloud.credentials import load_credentials
    from gpudesk.services.cloud.providers.base import ProviderError

    creds = load_credentials(cloud)  # type: ignore[arg-type]
    if creds is None:
        raise ProviderError("auth", MSG_NO_ACCOUNT, provider=title(cloud), provider_id=cloud)
    return make_client(cloud, region, creds)
