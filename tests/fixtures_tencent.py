"""Fixtures for the Tencent Cloud stand-in: one server per session, fresh state per test.

Use from a test module with
``from fixtures_tencent import tencent, tencent_creds, tencent_server  # noqa: F401``
(not ``pytest_plugins``: once another test module has imported this one, registering it as
a plugin warns, and warnings are errors).
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from standin_http import fresh_standin
from tencent_standin import SECRET_ID
from tencent_standin import SECRET_KEY
from tencent_standin import TencentStandin

from gpudesk.services.cloud.providers.base import Credentials


@pytest.fixture(scope="session")
def tencent_server() -> Iterator[TencentStandin]:
    server = TencentStandin().start()
    yield server
    server.stop()


@pytest.fixture
def tencent(tencent_server: TencentStandin, monkeypatch: pytest.MonkeyPatch) -> TencentStandin:
    """The stand-in, reset, knowing SECRET_ID/SECRET_KEY; no proxy between it and the SDK."""
    return fresh_standin(tencent_server, SECRET_ID, SECRET_KEY, monkeypatch)


@pytest.fixture
def tencent_creds() -> Credentials:
    return Credentials(provider="tencent", key_id=SECRET_ID, secret=SECRET_KEY)
