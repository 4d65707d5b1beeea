"""Cloud keys and generated SSH private keys, kept only in the OS keyring.

There is deliberately no file fallback: when no usable keyring backend exists
(a headless Linux without Secret Service, say), :class:`KeyringUnavailable`
says how to get one. What gpudesk remembers *about* an account (provider, a
masked key id, when it was verified) is not secret and lives in the state
database; the keys themselves are read from the keyring when a call needs them.
"""

from __future__ import annotations

import configparser
import json
import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING
from typing import Any

if TYPE_CHECKING:  # imported on first use (ensure_backend): 0.1 s of every window start
    import keyring
    import keyring.backend
    import keyring.errors

from gpudesk.i18n_marks import QT_TRANSLATE_NOOP
from gpudesk.services.cloud.providers.base import Credentials
from gpudesk.services.cloud.providers.base import ProviderName
from gpudesk.services.core.errors import TemplatedError

SERVICE = "gpudesk"
CLOUD_PROVIDERS: tuple[ProviderName, ...] = ("aws", "tencent", "aliyun")

MSG_NO_KEYRING = QT_TRANSLATE_NOOP(
    "Credentials", "No usable system keyring was found, and gpudesk never stores keys in a "
    "file. {how}")
HOW_LINUX = QT_TRANSLATE_NOOP(
    "Credentials", "Install and start a Secret Service keyring (GNOME Keyring or KWallet), "
    "for example: sudo apt install gnome-keyring, then log in to a desktop session again.")
HOW_OTHER = QT_TRANSLATE_NOOP(
    "Credentials", "Make sure the system keychain (Windows Credential Manager or the macOS "
    "Keychain) is available to your user.")
MSG_KEYRING_FAILED = QT_TRANSLATE_NOOP(
    "Credentials", "The system keyring refused the request ({reason}). Unlock it and try "
    "again.")
MSG_EMPTY = QT_TRANSLATE_NOOP(
    "Credentials", "The {what} is empty.")
MSG_PROFILE = QT_TRANSLATE_NOOP(
    "Credentials", "No AWS profile '{profile}' with an access key was found in {files}.")
MSG_ALIYUN_PROFILE = QT_TRANSLATE_NOOP(
    "Credentials", "No Alibaba Cloud profile '{profile}' with an AccessKey (mode AK or "
    "StsToken) was found in {file}.")


class CredentialError(TemplatedError):
    """A keyring problem or bad input, with a translatable template (context Credentials)."""

    translation_context = "Credentials"


class KeyringUnavailable(CredentialError):
    pass


def _usable(backend: keyring.backend.KeyringBackend) -> bool:
    # The fail and null backends have priority 0 or below; chainer wraps real ones.
    try:
        return float(backend.priority) > 0
    except Exception:
        return False


def ensure_backend() -> keyring.backend.KeyringBackend:
    """The active keyring backend, or :class:`KeyringUnavailable` with what to do."""
    global keyring  # every keyring call here comes after this one
    import keyring.backend
    import keyring.errors

    backend = keyring.get_keyring()
    if not _usable(backend):
        how = HOW_LINUX if sys.platform.startswith("linux") else HOW_OTHER
        raise KeyringUnavailable(MSG_NO_KEYRING, how=how)
    return backend


def _get(entry: str) -> str | None:
    ensure_backend()
    try:
        return keyring.get_password(SERVICE, entry)
    except keyring.errors.KeyringError as exc:
        raise CredentialError(MSG_KEYRING_FAILED, reason=type(exc).__name__) from None


def _set(entry: str, value: str) -> None:
    ensure_backend()
    try:
        keyring.set_password(SERVICE, entry, value)
    except keyring.errors.KeyringError as exc:
        raise CredentialError(MSG_KEYRING_FAILED, reason=type(exc).__name__) from None


def _delete(entry: str) -> None:
    ensure_backend()
    try:
        keyring.delete_password(SERVICE, entry)
    except keyring.errors.PasswordDeleteError:
        pass
    except keyring.errors.KeyringError as exc:
        raise CredentialError(MSG_KEYRING_FAILED, reason=type(exc).__name__) from None


# --------------------------------------------------------------------------- cloud keys

def save_credentials(creds: Credentials) -> None:
    """Store ``creds`` as the account for its provider (one per provider)."""
    if not creds.key_id.strip():
        raise CredentialError(MSG_EMPTY, what="key id")
    if not creds.secret.strip():
        raise CredentialError(MSG_EMPTY, what="secret")
    value = json.dumps({"key_id": creds.key_id.strip(), "secret": creds.secret.strip(),
                        "session_token": creds.session_token.strip()})
    _set(f"cloud:{creds.provider}", value)


def load_credentials(provider: ProviderName) -> Credentials | None:
    raw = _get(f"cloud:{provider}")
    if not raw:
        return None
    try:
        data = json.loads(raw)
        return Credentials(provider, str(data["key_id"]), str(data["secret"]),
                           str(data.get("session_token", "")))
    except (ValueError, KeyError, TypeError):
        return None  # damaged entry: treat as absent; adding the keys again overwrites it


def configured_providers() -> list[ProviderName]:
    """The clouds whose keys are in the keyring (one the keyring cannot read is left out)."""
    out: list[ProviderName] = []
    for name in CLOUD_PROVIDERS:
        try:
            if load_credentials(name) is not None:
                out.append(name)
        except CredentialError:
            continue
    return out


def delete_credentials(provider: ProviderName) -> None:
    _delete(f"cloud:{provider}")


# --------------------------------------------------------------------------- Hugging Face

HF_TOKEN_ENTRY = "huggingface:token"


def save_hf_token(token: str) -> None:
    """The user's Hugging Face token, for gated datasets a run fetches (issue 32): it
    reaches a machine only as a short-lived file that the agent deletes once read."""
    if not token.strip():
        raise CredentialError(MSG_EMPTY, what="token")
    _set(HF_TOKEN_ENTRY, token.strip())


def load_hf_token() -> str:
    """The saved token, or "" (a public dataset needs none)."""
    return (_get(HF_TOKEN_ENTRY) or "").strip()


def delete_hf_token() -> None:
    _delete(HF_TOKEN_ENTRY)


# --------------------------------------------------------------------------- SSH keys

def save_private_key(name: str, pem: str) -> None:
    _set(f"ssh-key:{name}", pem)


def load_private_key(name: str) -> str | None:
    return _get(f"ssh-key:{name}")


def delete_private_key(name: str) -> None:
    _delete(f"ssh-key:{name}")


@dataclass(frozen=True)
class KeyPair:
    name: str
    public_openssh: str  # "ssh-ed25519 AAAA... gpudesk"


# AWS takes ed25519; Tencent documents ImportKeyPair for "OpenSSH RSA" keys only.
KEY_KINDS = {"ed25519": "gpudesk", "rsa": "gpudesk-rsa"}


def key_kind_for(provider: str) -> str:
    return "rsa" if provider in ("tencent", "aliyun") else "ed25519"


def ensure_ssh_key(name: str = "gpudesk", kind: str = "ed25519") -> KeyPair:
    """The key gpudesk logs in with, generated on first use; private half in the keyring."""
    import paramiko  # noqa: PLC0415 - heavy; only when a key is needed

    pem = load_private_key(name)
    key: paramiko.PKey | None = None
    if pem:
        try:
            key = private_key_from_pem(pem)
        except (paramiko.SSHException, ValueError):
            key = None  # damaged: make a new one below
    if key is None:
        pem, key = _generate(kind)
        save_private_key(name, pem)
    return KeyPair(name, f"{key.get_name()} {key.get_base64()} gpudesk")


def private_key_from_pem(pem: str) -> Any:
    """A paramiko key from an OpenSSH private key (ed25519 or RSA)."""
    import io

    import paramiko  # noqa: PLC0415

    kinds: tuple[type[paramiko.PKey], ...] = (paramiko.Ed25519Key, paramiko.RSAKey)
    for kind in kinds:
        try:
            return kind.from_private_key(io.StringIO(pem))
        except (paramiko.SSHException, ValueError):
            continue
    raise paramiko.SSHException("not an ed25519 or RSA private key")


def _generate(kind: str) -> tuple[str, Any]:
    from cryptography.hazmat.primitives import serialization  # noqa: PLC0415
    from cryptography.hazmat.primitives.asymmetric import ed25519  # noqa: PLC0415
    from cryptography.hazmat.primitives.asymmetric import rsa  # noqa: PLC0415

    private: Any = (rsa.generate_private_key(public_exponent=65537, key_size=3072)
                    if kind == "rsa" else ed25519.Ed25519PrivateKey.generate())
    pem = private.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.OpenSSH,
                                serialization.NoEncryption()).decode("ascii")
    return pem, private_key_from_pem(pem)


# --------------------------------------------------------------------------- ~/.aws import

def aws_profile(profile: str = "default", home: Path | None = None) -> Credentials:
    """Keys from a named profile in ``~/.aws/credentials`` (or ``config``), for one-time import."""
    base = home if home is not None else Path(os.environ.get("HOME", str(Path.home())))
    files = [Path(os.environ.get("AWS_SHARED_CREDENTIALS_FILE", base / ".aws" / "credentials")),
             Path(os.environ.get("AWS_CONFIG_FILE", base / ".aws" / "config"))]
    for path, section in ((files[0], profile), (files[1], f"profile {profile}"),
                          (files[1], profile)):
        parser = configparser.RawConfigParser()
        try:
            parser.read(path, encoding="utf-8")
        except (OSError, configparser.Error):
            continue
        if parser.has_option(section, "aws_access_key_id") and parser.has_option(
                section, "aws_secret_access_key"):
            return Credentials("aws", parser.get(section, "aws_access_key_id").strip(),
                               parser.get(section, "aws_secret_access_key").strip(),
                               parser.get(section, "aws_session_token", fallback="").strip())
    raise CredentialError(MSG_PROFILE, profile=profile,
                          files=" / ".join(str(f) for f in files))


# --------------------------------------------------------------------------- ~/.aliyun import

def aliyun_profiles(home: Path | None = None) -> tuple[Path, str, list[dict[str, Any]]]:
    """(file, current profile name, profiles) of the aliyun CLI's ``~/.aliyun/config.json``."""
    base = home if home is not None else Path(os.environ.get("HOME", str(Path.home())))
    path = base / ".aliyun" / "config.json"
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return path, "", []
    if not isinstance(data, dict):
        return path, "", []
    profiles = [p for p in data.get("profiles") or [] if isinstance(p, dict)]
    return path, str(data.get("current") or ""), profiles


def aliyun_profile(profile: str = "", home: Path | None = None) -> Credentials:
    """Keys from a profile of ``~/.aliyun/config.json`` (the current one by default).

    Only profiles that hold an AccessKey (mode ``AK``, or ``StsToken`` with its
    token) can be imported; role and instance-role modes have no key to keep.
    """
    path, current, profiles = aliyun_profiles(home)
    name = profile or current or "default"
    for item in profiles:
        if str(item.get("name")) != name or str(item.get("mode") or "AK") not in (
                "AK", "StsToken"):
            continue
        key_id = str(item.get("access_key_id") or "").strip()
        secret = str(item.get("access_key_secret") or "").strip()
        if key_id and secret:
            token = str(item.get("sts_token") or "").strip() \
                if item.get("mode") == "StsToken" else ""
            return Credentials("aliyun", key_id, secret, token)
    raise CredentialError(MSG_ALIYUN_PROFILE, profile=name, file=str(path))
