"""Alibaba Cloud OSS behind its S3-compatible endpoint ``s3.oss-<region>.aliyuncs.com``.

Rules from OSS's references (URLs in docs/storage.md): bucket names are 3-63 characters of
lowercase letters, digits and hyphens, starting and ending with a letter or digit; only
virtual-hosted addressing is accepted (path-style gets 403 SecondLevelDomainForbidden,
"Please use virtual hosted style to access.").
"""

from __future__ import annotations

import re

from s3compat_standin import Account
from s3compat_standin import CloudRules
from s3compat_standin import S3CompatStandin
from s3compat_standin import S3Error

REGIONS = frozenset({"cn-hangzhou", "cn-beijing", "cn-shanghai", "ap-southeast-1"})
ACTIONS = {
    "HeadBucket": "oss:GetBucketInfo", "ListObjectsV2": "oss:ListObjects",
    "CreateBucket": "oss:PutBucket", "PutBucketTagging": "oss:PutBucketTagging",
    "GetBucketTagging": "oss:GetBucketTagging",
    "PutBucketLifecycleConfiguration": "oss:PutBucketLifecycle",
    "GetBucketLifecycleConfiguration": "oss:GetBucketLifecycle",
    "PutObject": "oss:PutObject", "GetObject": "oss:GetObject", "HeadObject": "oss:GetObject",
    "DeleteObject": "oss:DeleteObject", "DeleteObjects": "oss:DeleteObject",
}
_NAME = re.compile(r"^[a-z0-9](?:[a-z0-9-]{1,61}[a-z0-9])$")


def check_bucket(name: str, _account: Account, _region: str) -> None:
    if not _NAME.match(name):
        raise S3Error(400, "InvalidBucketName", "The specified bucket is not valid.")


RULES = CloudRules(name="aliyun", host_template="s3.oss-{region}.aliyuncs.com",
                   regions=REGIONS, check_bucket=check_bucket,
                   path_style_error=("SecondLevelDomainForbidden",
                                     "Please use virtual hosted style to access."),
                   action_names=ACTIONS)


def oss_standin() -> S3CompatStandin:
    return S3CompatStandin(RULES)
