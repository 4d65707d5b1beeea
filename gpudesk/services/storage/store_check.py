"""Is the bucket there, reachable, and open to the account's keys? Asked before anything bills.

A store URI given at launch, in a machine profile or for one run is checked with one
HeadBucket before a machine is launched or a run starts (issue 30): a bucket that does not
exist, cannot be reached or refuses the keys is refused with its name and the fix, instead
of a billing machine whose runs later get keys to nothing. For AWS the answer also names
the bucket's region (``x-amz-bucket-region``), so an own machine needs no region typed.

Blocking (boto3): call it from a worker thread.
"""

from __future__ import annotations

from typing import TYPE_CHECKING
from typing import Any

from gpudesk.i18n_marks import QT_TRANSLATE_NOOP
from gpudesk.services.storage.errors import StorageError
from gpudesk.services.storage.uri import CLOUD_SCHEMES
from gpudesk.services.storage.uri import StoreUri
from gpudesk.services.storage.uri import check_bucket
from gpudesk.services.storage.uri import parse_uri

if TYPE_CHECKING:
    from gpudesk.services.cloud.providers.base import Credentials

AWS_PROBE_REGION = "us-east-1"  # any S3 region answers HeadBucket with the bucket's region

MSG_NO_BUCKET = QT_TRANSLATE_NOOP(
    "Storage", "The bucket {bucket} does not exist ({cloud} answered 404). Create it first, "
    "or give another bucket as the store.")
MSG_REFUSED_KEYS = QT_TRANSLATE_NOOP(
    "Storage", "The bucket {bucket} refused the {cloud} account's keys ({code}). Allow "
    "{action} on it for these keys, or give a bucket this account may use.")
MSG_NOT_REACHED = QT_TRANSLATE_NOOP(
    "Storage", "The bucket {bucket} could not be reached at {endpoint} ({reason}). Check the "
    "network and the bucket's region, then try again.")
MSG_NO_ACCOUNT = QT_TRANSLATE_NOOP(
    "Storage", "No {cloud} account keys are in the keyring to check the bucket {bucket} and "
    "to give runs keys to it. Add them first: gpudesk accounts add {provider}.")
MSG_NEEDS_REGION = QT_TRANSLATE_NOOP(
    "Storage", "The bucket {bucket} is on {cloud}, whose address names the bucket's "
    "region: give its region too (e.g. {example}).")
MSG_OTHER_ANSWER = QT_TRANSLATE_NOOP(
    "Storage", "The bucket {bucket} could not be checked: {cloud} answered {code}.")

REGION_EXAMPLES = {"tencent": "ap-shanghai", "aliyun": "cn-hangzhou"}


class StoreRefused(StorageError):
    """The store was checked and refused: its words go next to the store field."""


def _title(cloud: str) -> str:
    return CLOUD_SCHEMES[cloud].upper()


def _keyring(cloud: str) -> Credentials | None:
    from gpudesk.services.cloud.credentials import load_credentials

    return load_credentials(cloud)  # type: ignore[arg-type]


def _answered_region(meta: dict[str, Any]) -> str:
    headers = {str(k).lower(): str(v) for k, v in (meta.get("HTTPHeaders") or {}).items()}
    return headers.get("x-amz-bucket-region", "")


def check_store(store: StoreUri, region: str = "", credentials: Credentials | None = None
                ) -> str:
    """The bucket's region once one HeadBucket with the account's keys answered; raises
    StoreRefused naming the bucket and the fix otherwise. ``region``: where the bucket is
    (needed for COS and OSS, whose addresses name it; AWS's answer says it)."""
    from botocore.exceptions import BotoCoreError
    from botocore.exceptions import ClientError

    from gpudesk.services.storage.clients import endpoint_for
    from gpudesk.services.storage.clients import make_client

    cloud, bucket = store.cloud, store.bucket
    if cloud != "aws" and not region:
        raise StoreRefused(MSG_NEEDS_REGION, bucket=bucket, cloud=_title(cloud),
                           example=REGION_EXAMPLES.get(cloud, ""))
    check_bucket(cloud, bucket, region=region if cloud == "tencent" else "")
    creds = credentials if credentials is not None else _keyring(cloud)
    if creds is None:
        raise StoreRefused(MSG_NO_ACCOUNT, bucket=bucket, cloud=_title(cloud), provider=cloud)
    asked = region or AWS_PROBE_REGION
    for _ in range(2):  # AWS: a second ask in the region the first answer named
        client = make_client(cloud, asked, creds, retries=1)
        try:
            answer = client.head_bucket(Bucket=bucket)
        except ClientError as err:
            response: dict[str, Any] = dict(err.response or {})
            meta = response.get("ResponseMetadata") or {}
            status = int(meta.get("HTTPStatusCode") or 0)
            code = str(response.get("Error", {}).get("Code", "")) or str(status)
            moved = _answered_region(meta)
            if cloud == "aws" and moved and moved != asked and status in (301, 400):
                asked = moved
                continue
            if status == 404 or code in ("404", "NoSuchBucket", "NotFound"):
                raise StoreRefused(MSG_NO_BUCKET, bucket=bucket, cloud=_title(cloud)) from None
            if status == 403 or code in ("403", "AccessDenied", "Forbidden"):
                from gpudesk.services.storage.errors import action_for

                raise StoreRefused(MSG_REFUSED_KEYS, bucket=bucket, cloud=_title(cloud),
                                   code=code, action=action_for(cloud, "HeadBucket")) from None
            raise StoreRefused(MSG_OTHER_ANSWER, bucket=bucket, cloud=_title(cloud),
                               code=code) from None
        except BotoCoreError as err:
            endpoint = endpoint_for(cloud, asked).url or f"s3.{asked}.amazonaws.com"
            raise StoreRefused(MSG_NOT_REACHED, bucket=bucket, endpoint=endpoint,
                               reason=type(err).__name__) from None
        meta = answer.get("ResponseMetadata") or {}
        return str(answer.get("BucketRegion") or _answered_region(meta) or asked)
    return asked


def checked_store(uri_text: str, region: str) -> tuple[str, str]:
    """(the store URI as kept, its region) once the bucket answered; ("", "") for none.
    Raises StorageError (StoreRefused) naming the bucket and the fix."""
    if not uri_text.strip():
        return "", ""
    uri = parse_uri(uri_text)
    return str(uri), check_store(uri, region.strip())


def check_launch_store(store: str, region: str) -> None:
    """The launcher's store check (``Launcher(store_check=...)``): "auto" and "none" need
    none; any other URI must name a bucket that answers, before anything bills."""
    if store.strip().lower() in ("", "auto", "none", "off", "no"):
        return
    check_store(parse_uri(store.strip()), region)
