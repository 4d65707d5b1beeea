"""The account's gpudesk bucket on S3 (moto), COS and OSS (stand-ins that check SigV4)."""

from __future__ import annotations

from datetime import UTC
from datetime import datetime

import pytest
from fixtures_aws import aws  # noqa: F401
from fixtures_aws import moto_server  # noqa: F401
from fixtures_storage import StoreEnv  # noqa: F401
from fixtures_storage import cos_server  # noqa: F401
from fixtures_storage import oss_server  # noqa: F401
from fixtures_storage import store_env  # noqa: F401

from gpudesk.services.storage import buckets
from gpudesk.services.storage.errors import AccessDenied


def test_bucket_is_created_once_in_the_region_with_tag_and_rules(store_env: StoreEnv) -> None:  # noqa: F811
    env = store_env
    client = env.client()
    first = buckets.ensure_bucket(client, env.target(), env.memory)
    again = buckets.ensure_bucket(client, env.target(), env.memory)
    assert first.created and not again.created
    assert first.store == again.store and first.note == ""
    name = first.store.bucket
    assert env.bucket_names() == [name]
    assert env.bucket_region(name) == env.region
    assert env.bucket_tags(name) == {"gpudesk": "1"}
    assert [(r["ID"], r["Prefix"], r["AbortDays"]) for r in env.bucket_rules(name)] == [
        (buckets.ABORT_RULE_ID, "runs/", buckets.ABORT_AFTER_DAYS)]
    assert env.memory.get(env.target().key) == name
    if env.cloud == "tencent":
        assert name.endswith("-" + env.appid)


def test_run_expiry_is_a_dated_rule_on_the_runs_folder(store_env: StoreEnv) -> None:  # noqa: F811
    env = store_env
    client = env.client()
    store = buckets.ensure_bucket(client, env.target(), env.memory).store
    ended = datetime(2030, 1, 10, 15, 30, tzinfo=UTC)
    when = buckets.expire_run(client, store, "r1", ended, 30)
    assert when == datetime(2030, 2, 10, tzinfo=UTC)  # the midnight after end + 30 days
    buckets.expire_run(client, store, "r2", ended, 5)
    rules = {r["ID"]: r for r in env.bucket_rules(store.bucket)}
    assert set(rules) == {buckets.ABORT_RULE_ID, "gpudesk-run-r1", "gpudesk-run-r2"}
    assert rules["gpudesk-run-r1"]["Prefix"] == "runs/r1/"
    assert rules["gpudesk-run-r1"]["Date"].replace(tzinfo=UTC) == when
    # 0 = keep: the run's rule goes, the others stay
    assert buckets.expire_run(client, store, "r1", ended, 0) is None
    assert {r["ID"] for r in env.bucket_rules(store.bucket)} == {
        buckets.ABORT_RULE_ID, "gpudesk-run-r2"}


def test_a_taken_name_gives_a_clear_note_and_a_new_remembered_name(store_env: StoreEnv) -> None:  # noqa: F811
    env = store_env
    taken = buckets.default_name(env.target())
    env.other_account_takes(taken)
    client = env.client()
    info = buckets.ensure_bucket(client, env.target(), env.memory)
    assert info.created and info.store.bucket != taken
    assert taken in info.note and info.store.bucket in info.note and "taken" in info.note
    assert env.memory.get(env.target().key) == info.store.bucket
    assert env.bucket_region(info.store.bucket) == env.region
    again = buckets.ensure_bucket(client, env.target(), env.memory)
    assert again.store == info.store and not again.created and again.note == ""


DENIED = {"aws": "s3:CreateBucket", "tencent": "cos:PutBucket", "aliyun": "oss:PutBucket"}


def test_access_denied_names_the_action(store_env: StoreEnv) -> None:  # noqa: F811
    env = store_env
    creds, enforce = env.denied(DENIED[env.cloud])
    with enforce(), pytest.raises(AccessDenied) as caught:
        buckets.ensure_bucket(env.client(creds), env.target(), env.memory)
    assert caught.value.action == DENIED[env.cloud]
    assert f"{DENIED[env.cloud]} was denied" in caught.value.message()
    assert env.bucket_names() == []


def test_default_names_follow_each_clouds_rules() -> None:
    from gpudesk.services.storage.uri import check_bucket

    for cloud, region in (("aws", "ap-southeast-1"), ("aliyun", "cn-hangzhou"),
                          ("tencent", "na-siliconvalley"), ("tencent", "ap-guangzhou")):
        target = buckets.BucketTarget(cloud, region, "123456789012", "1250000000")
        for suffix in ("", "ab12"):
            name = buckets.default_name(target, suffix)
            check_bucket(cloud, name, region=region if cloud == "tencent" else "")
        assert buckets.default_name(target) == buckets.default_name(target)
    other = buckets.BucketTarget("aws", "eu-west-1", "999999999999")
    assert buckets.default_name(other) != buckets.default_name(
        buckets.BucketTarget("aws", "eu-west-1", "123456789012"))
