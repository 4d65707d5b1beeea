"""Tencent COS behind its S3-compatible endpoint ``cos.<region>.myqcloud.com``.

Rules from COS's references (URLs in docs/storage.md): a bucket is ``<BucketName>-<APPID>``
where APPID is the creating account's; BucketName has lowercase letters, digits and
hyphens, neither starting nor ending with '-'; the whole domain
``<bucket>.cos.<region>.myqcloud.com`` is at most 60 characters.
"""

from __future__ import annotations

import re

from s3compat_standin import Account
from s3compat_standin import CloudRules
from s3compat_standin import S3CompatStandin
from s3compat_standin import S3Error

REGIONS = frozenset({"ap-guangzhou", "ap-shanghai", "ap-beijing", "ap-singapore"})
ACTIONS = {
    "HeadBucket": "cos:HeadBucket", "ListObjectsV2": "cos:GetBucket",
    "CreateBucket": "cos:PutBucket", "PutBucketTagging": "cos:PutBucketTagging",
    "GetBucketTagging": "cos:GetBucketTagging",
    "PutBucketLifecycleConfiguration": "cos:PutBucketLifecycle",
    "GetBucketLifecycleConfiguration": "cos:GetBucketLifecycle",
    "PutObject": "cos:PutObject", "GetObject": "cos:GetObject", "HeadObject": "cos:HeadObject",
    "DeleteObject": "cos:DeleteObject", "DeleteObjects": "cos:DeleteMultipleObjects",
}
_NAME = re.compile(r"^[a-z0-9](?:[a-z0-9-]*[a-z0-9])?$")


def check_bucket(name: str, account: Account, region: str) -> None:
    base, _, appid = name.rpartition("-")
    if not base or not appid.isdigit():
        raise S3Error(400, "InvalidBucketName", "The bucket name must be <BucketName>-<APPID>")
    if appid != account.appid:
        raise S3Error(400, "InvalidBucketName", f"The APPID {appid} in the bucket name is not "
                      "this account's")
    if not _NAME.match(base):
        raise S3Error(400, "InvalidBucketName", "Only lowercase letters, digits and '-' are "
                      "allowed, not at the start or end")
    if len(f"{name}.cos.{region}.myqcloud.com") > 60:
        raise S3Error(400, "InvalidBucketName", "The bucket's domain name is longer than 60 "
                      "characters")


RULES = CloudRules(name="tencent", host_template="cos.{region}.myqcloud.com", regions=REGIONS,
                   check_bucket=check_bucket, path_style_error=None, action_names=ACTIONS)


def cos_standin() -> S3CompatStandin:
    return S3CompatStandin(RULES)
