"""Fixtures for the Alibaba Cloud ECS stand-in: one server per session, fresh state per test.

Use from a test module with
``from fixtures_aliyun import aliyun, aliyun_creds, aliyun_server  # noqa: F401``.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from aliyun_standin import ACCESS_KEY_ID
from aliyun_standin import ACCESS_KEY_SECRET
from aliyun_standin import AliyunStandin
from standin_http import fresh_standin

from gpudesk.services.cloud.providers.base import Credentials


@pytest.fixture(scope="session")
def aliyun_server() -> Iterator[AliyunStandin]:
    server = AliyunStandin().start()
    yield server
    server.stop()


@pytest.fixture
def aliyun(aliyun_server: AliyunStandin, monkeypatch: pytest.MonkeyPatch) -> AliyunStandin:
    """The stand-in, reset, knowing ACCESS_KEY_ID/SECRET; no proxy between it and the SDK."""
    return fresh_standin(aliyun_server, ACCESS_KEY_ID, ACCESS_KEY_SECRET, monkeypatch)


@pytest.fixture
def aliyun_creds() -> Credentials:
    return Credentials(provider="aliyun", key_id=ACCESS_KEY_ID,  # type: ignore[arg-type]
                       secret=ACCESS_KEY_SECRET)
