"""Storage errors: an English template plus values, translated where shown (context Storage)."""

from __future__ import annotations

from typing import Any

from gpudesk.i18n_marks import QT_TRANSLATE_NOOP
from gpudesk.services.core.errors import TemplatedError

MSG_DENIED = QT_TRANSLATE_NOOP(
    "Storage", "The cloud refused the request: {action} was denied for this account on "
    "{target}. Allow {action} in the account's policy and try again.")
MSG_CLOUD = QT_TRANSLATE_NOOP("Storage", "The storage service answered {code}: {detail}")
MSG_UNREACHABLE = QT_TRANSLATE_NOOP(
    "Storage", "The storage service at {endpoint} could not be reached ({reason}).")


class StorageError(TemplatedError):
    """Bad input or a cloud refusal, with a translatable template (context Storage)."""

    translation_context = "Storage"


class AccessDenied(StorageError):
    """A missing permission; ``action`` names it as the cloud's policy language does."""

    def __init__(self, template: str, **values: Any) -> None:
        super().__init__(template, **values)
        self.action = str(values.get("action", ""))


# The permission each S3 operation needs, in each cloud's policy language: a denied
# request then names what to allow (AWS IAM, Tencent CAM, Aliyun RAM action names).
_AWS_ACTIONS = {
    "HeadBucket": "s3:ListBucket", "ListObjectsV2": "s3:ListBucket",
    "CreateBucket": "s3:CreateBucket", "PutBucketTagging": "s3:PutBucketTagging",
    "PutBucketLifecycleConfiguration": "s3:PutLifecycleConfiguration",
    "GetBucketLifecycleConfiguration": "s3:GetLifecycleConfiguration",
    "PutObject": "s3:PutObject", "GetObject": "s3:GetObject", "HeadObject": "s3:GetObject",
    "DeleteObject": "s3:DeleteObject", "DeleteObjects": "s3:DeleteObject",
}
_COS_ACTIONS = {
    "HeadBucket": "cos:HeadBucket", "ListObjectsV2": "cos:GetBucket",
    "CreateBucket": "cos:PutBucket", "PutBucketTagging": "cos:PutBucketTagging",
    "PutBucketLifecycleConfiguration": "cos:PutBucketLifecycle",
    "GetBucketLifecycleConfiguration": "cos:GetBucketLifecycle",
    "PutObject": "cos:PutObject", "GetObject": "cos:GetObject", "HeadObject": "cos:HeadObject",
    "DeleteObject": "cos:DeleteObject", "DeleteObjects": "cos:DeleteMultipleObjects",
}
_OSS_ACTIONS = {
    "HeadBucket": "oss:GetBucketInfo", "ListObjectsV2": "oss:ListObjects",
    "CreateBucket": "oss:PutBucket", "PutBucketTagging": "oss:PutBucketTagging",
    "PutBucketLifecycleConfiguration": "oss:PutBucketLifecycle",
    "GetBucketLifecycleConfiguration": "oss:GetBucketLifecycle",
    "PutObject": "oss:PutObject", "GetObject": "oss:GetObject", "HeadObject": "oss:GetObject",
    "DeleteObject": "oss:DeleteObject", "DeleteObjects": "oss:DeleteObject",
}
ACTIONS = {"aws": _AWS_ACTIONS, "tencent": _COS_ACTIONS, "aliyun": _OSS_ACTIONS}
DENIED_CODES = frozenset({"AccessDenied", "Forbidden", "403", "AllAccessDisabled"})


def action_for(cloud: str, operation: str) -> str:
    prefix = {"aws": "s3", "tencent": "cos", "aliyun": "oss"}.get(cloud, "s3")
    return ACTIONS.get(cloud, _AWS_ACTIONS).get(operation, f"{prefix}:{operation}")


def from_client_error(err: Exception, cloud: str, target: str) -> StorageError:
    """A botocore error as a StorageError; AccessDenied names the denied action."""
    response: dict[str, Any] = getattr(err, "response", {}) or {}
    error = response.get("Error", {})
    code = str(error.get("Code", "")) or type(err).__name__
    operation = str(getattr(err, "operation_name", ""))
    if code in DENIED_CODES:
        return AccessDenied(MSG_DENIED, action=action_for(cloud, operation), target=target)
    detail = str(error.get("Message", "")) or operation
    return StorageError(MSG_CLOUD, code=code, detail=detail)
