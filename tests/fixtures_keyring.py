"""Keyring fixtures: an in-memory backend for unit tests, the real Secret Service when present."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import keyring
import keyring.backend
import pytest


class MemoryKeyring(keyring.backend.KeyringBackend):
    priority = 1  # type: ignore[assignment]

    def __init__(self) -> None:
        super().__init__()
        self.items: dict[tuple[str, str], str] = {}

    def get_password(self, service: str, username: str) -> str | None:
        return self.items.get((service, username))

    def set_password(self, service: str, username: str, password: str) -> None:
        self.items[(service, username)] = password

    def delete_password(self, service: str, username: str) -> None:
        if self.items.pop((service, username), None) is None:
            import keyring.errors

            raise keyring.errors.PasswordDeleteError(username)


class FailKeyring(keyring.backend.KeyringBackend):
    """What keyring picks on a headless Linux without Secret Service."""

    priority = 0  # type: ignore[assignment]

    def get_password(self, service: str, username: str) -> str | None:
        raise keyring.errors.NoKeyringError("no backend")

    def set_password(self, service: str, username: str, password: str) -> None:
        raise keyring.errors.NoKeyringError("no backend")

    def delete_password(self, service: str, username: str) -> None:
        raise keyring.errors.NoKeyringError("no backend")


@pytest.fixture
def memory_keyring() -> Iterator[MemoryKeyring]:
    before = keyring.get_keyring()
    backend = MemoryKeyring()
    keyring.set_keyring(backend)
    yield backend
    keyring.set_keyring(before)


def secret_service_usable() -> bool:
    try:
        from keyring.backends import SecretService

        backend = SecretService.Keyring()
        return float(backend.priority) > 0
    except Exception:
        return False


@pytest.fixture
def secret_service() -> Iterator[keyring.backend.KeyringBackend]:
    """The real Secret Service (gnome-keyring in scripts/test.sh's dbus session)."""
    if not secret_service_usable():
        pytest.skip("no Secret Service here; scripts/test.sh starts gnome-keyring for this")
    from keyring.backends import SecretService

    before = keyring.get_keyring()
    backend = SecretService.Keyring()
    keyring.set_keyring(backend)
    yield backend
    for entry in ("cloud:aws", "cloud:tencent", "cloud:aliyun", "ssh-key:gpudesk",
                  "ssh-key:test"):
        with contextlib.suppress(keyring.errors.KeyringError):
            keyring.delete_password("gpudesk", entry)
    keyring.set_keyring(before)
