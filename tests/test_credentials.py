"""Keys live in the keyring only; no usable keyring means a refusal, never a file."""

from __future__ import annotations

from pathlib import Path

import keyring
import pytest
from fixtures_keyring import FailKeyring  # noqa: F401
from fixtures_keyring import memory_keyring  # noqa: F401
from fixtures_keyring import secret_service  # noqa: F401

from gpudesk.services.cloud import credentials
from gpudesk.services.cloud.providers.base import Credentials

SECRET = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"


def test_round_trip_in_memory(memory_keyring) -> None:  # type: ignore[no-untyped-def]  # noqa: F811
    creds = Credentials("aws", "AKIAIOSFODNN7EXAMPLE", SECRET, "tok")
    credentials.save_credentials(creds)
    assert credentials.load_credentials("aws") == creds
    assert credentials.load_credentials("tencent") is None
    credentials.delete_credentials("aws")
    assert credentials.load_credentials("aws") is None
    credentials.delete_credentials("aws")  # deleting twice is fine


def test_repr_never_shows_the_secret() -> None:
    creds = Credentials("aws", "AKIAIOSFODNN7EXAMPLE", SECRET)
    for text in (repr(creds), str(creds), f"{creds}", repr([creds])):
        assert SECRET not in text
        assert "AKIAIOSFODNN7EXAMPLE" not in text
        assert "AKIA…MPLE" in text


def test_empty_secret_is_refused(memory_keyring) -> None:  # type: ignore[no-untyped-def]  # noqa: F811
    with pytest.raises(credentials.CredentialError, match="secret is empty"):
        credentials.save_credentials(Credentials("aws", "AKIAIOSFODNN7EXAMPLE", "  "))
    assert memory_keyring.items == {}


def test_no_keyring_refuses_and_writes_no_file(gpudesk_home: Path) -> None:
    before = keyring.get_keyring()
    keyring.set_keyring(FailKeyring())
    try:
        with pytest.raises(credentials.KeyringUnavailable) as info:
            credentials.save_credentials(Credentials("aws", "AKIAIOSFODNN7EXAMPLE", SECRET))
        assert "never stores keys in a file" in str(info.value)
        assert "gnome-keyring" in str(info.value)
        with pytest.raises(credentials.KeyringUnavailable):
            credentials.ensure_ssh_key()
    finally:
        keyring.set_keyring(before)
    written = [p for p in gpudesk_home.rglob("*") if p.is_file()] if gpudesk_home.exists() else []
    assert all(SECRET not in p.read_text(errors="replace") for p in written)


def test_ssh_key_is_generated_once_and_parses(memory_keyring) -> None:  # type: ignore[no-untyped-def]  # noqa: F811
    first = credentials.ensure_ssh_key("test")
    second = credentials.ensure_ssh_key("test")
    assert first == second
    assert first.public_openssh.startswith("ssh-ed25519 AAAA")
    pem = memory_keyring.items[("gpudesk", "ssh-key:test")]
    assert "OPENSSH PRIVATE KEY" in pem
    key = credentials.private_key_from_pem(pem)
    assert first.public_openssh.split()[1] == key.get_base64()


def test_damaged_ssh_key_is_replaced(memory_keyring) -> None:  # type: ignore[no-untyped-def]  # noqa: F811
    memory_keyring.items[("gpudesk", "ssh-key:test")] = "garbage"
    pair = credentials.ensure_ssh_key("test")
    assert pair.public_openssh.startswith("ssh-ed25519 ")


def test_aws_profile_import(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    aws = tmp_path / ".aws"
    aws.mkdir()
    (aws / "credentials").write_text(
        f"[default]\naws_access_key_id = AKIAIOSFODNN7EXAMPLE\naws_secret_access_key = {SECRET}\n")
    (aws / "config").write_text(
        "[profile lab]\naws_access_key_id = AKIALAB0000000000000\n"
        "aws_secret_access_key = labsecret\naws_session_token = tok\n")
    monkeypatch.delenv("AWS_SHARED_CREDENTIALS_FILE", raising=False)
    monkeypatch.delenv("AWS_CONFIG_FILE", raising=False)
    assert credentials.aws_profile("default", tmp_path) == Credentials(
        "aws", "AKIAIOSFODNN7EXAMPLE", SECRET)
    assert credentials.aws_profile("lab", tmp_path).session_token == "tok"
    with pytest.raises(credentials.CredentialError, match="No AWS profile 'nope'"):
        credentials.aws_profile("nope", tmp_path)


def test_real_secret_service_round_trip(secret_service) -> None:  # type: ignore[no-untyped-def]  # noqa: F811
    creds = Credentials("tencent", "AKIDz8krbsJ5yKBZQpn74WFkmLPx3EXAMPLE",
                        "Gu5t9xGARNpq86cd98joQYCN3EXAMPLE")
    credentials.save_credentials(creds)
    assert credentials.load_credentials("tencent") == creds
    credentials.delete_credentials("tencent")
    assert credentials.load_credentials("tencent") is None


def test_tencent_gets_an_rsa_key(memory_keyring) -> None:  # type: ignore[no-untyped-def]  # noqa: F811
    kind = credentials.key_kind_for("tencent")
    pair = credentials.ensure_ssh_key(credentials.KEY_KINDS[kind], kind)
    assert pair.public_openssh.startswith("ssh-rsa AAAA")
    pem = memory_keyring.items[("gpudesk", "ssh-key:gpudesk-rsa")]
    assert credentials.private_key_from_pem(pem).get_bits() == 3072
    assert credentials.key_kind_for("aws") == "ed25519"
