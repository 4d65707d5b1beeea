"""Accounts: add (verify, then keyring + ledger), list, remove; and the provider for each.

The provider classes are imported lazily: boto3 and the Tencent SDK cost
start-up time and the Plan page needs neither.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from urllib.parse import urlsplit

from gpudesk.i18n_marks import QT_TRANSLATE_NOOP
from gpudesk.services.cloud import catalog
from gpudesk.services.cloud import credentials
from gpudesk.services.cloud.providers.base import Credentials
from gpudesk.services.cloud.providers.base import Identity
from gpudesk.services.cloud.providers.base import Provider
from gpudesk.services.cloud.providers.base import ProviderError
from gpudesk.services.cloud.providers.base import ProviderName
from gpudesk.services.cloud.providers.base import mask
from gpudesk.services.money.ledger import Account
from gpudesk.services.money.ledger import Ledger

# Tests (and private clouds) point the Tencent SDK elsewhere: "http://127.0.0.1:PORT".
TENCENT_ENDPOINT_ENV = "GPUDESK_TENCENT_ENDPOINT"
ALIYUN_ENDPOINT_ENV = "GPUDESK_ALIYUN_ENDPOINT"  # every Alibaba Cloud ECS and VPC call

MSG_NO_ACCOUNT = QT_TRANSLATE_NOOP(
    "ProviderError", "No {provider} account is set up yet. Add your keys on the Accounts page "
    "(or: gpudesk accounts add {provider_id} ...).")
MSG_UNKNOWN_PROVIDER = QT_TRANSLATE_NOOP(
    "ProviderError", "'{provider}' is not a cloud gpudesk can rent from; choose aws, tencent or "
    "aliyun.")

PROVIDER_TITLES = {**catalog.PROVIDER_TITLES, "own": "SSH"}

ProviderFactory = Callable[[ProviderName], Provider]


def title(provider: str) -> str:
    """A cloud's title (in the window's language: :func:`catalog.provider_title`), "SSH"
    for an own machine, or the key itself."""
    return PROVIDER_TITLES["own"] if provider == "own" else catalog.provider_title(provider)


def build_provider(creds: Credentials) -> Provider:
    """A provider for ``creds``, honouring the test/private endpoints in the environment."""
    if creds.provider == "aws":
        from gpudesk.services.cloud.providers.aws import AwsProvider  # noqa: PLC0415

        return AwsProvider(creds)  # boto3 itself honours AWS_ENDPOINT_URL
    if creds.provider == "tencent":
        from gpudesk.services.cloud.providers.tencent import STOP_CHARGING  # noqa: PLC0415
        from gpudesk.services.cloud.providers.tencent import TencentProvider  # noqa: PLC0415

        # Stopping releases the CPU/GPU and stops the bill (the ledger counts a stopped
        # machine as free); the price is that a restart may find no GPU free.
        endpoint = os.environ.get(TENCENT_ENDPOINT_ENV, "").strip()
        if endpoint:
            parts = urlsplit(endpoint if "://" in endpoint else f"https://{endpoint}")
            return TencentProvider(creds, endpoint=parts.netloc, protocol=parts.scheme,
                                   stopped_mode=STOP_CHARGING)
        return TencentProvider(creds, stopped_mode=STOP_CHARGING)
    if creds.provider == "aliyun":
        from gpudesk.services.cloud.providers.aliyun import AliyunProvider  # noqa: PLC0415

        endpoint = os.environ.get(ALIYUN_ENDPOINT_ENV, "").strip()
        if endpoint:
            parts = urlsplit(endpoint if "://" in endpoint else f"https://{endpoint}")
            return AliyunProvider(creds, endpoint=parts.netloc, protocol=parts.scheme)
        return AliyunProvider(creds)
    raise ProviderError("invalid", MSG_UNKNOWN_PROVIDER, provider=creds.provider)


def provider_from_keyring(name: ProviderName) -> Provider:
    """The provider for the stored account, or a ProviderError saying to add one."""
    if name not in credentials.CLOUD_PROVIDERS:
        raise ProviderError("invalid", MSG_UNKNOWN_PROVIDER, provider=name)
    creds = credentials.load_credentials(name)
    if creds is None:
        raise ProviderError("auth", MSG_NO_ACCOUNT, provider=title(name), provider_id=name)
    return build_provider(creds)


def verify(creds: Credentials,
           build: Callable[[Credentials], Provider] = build_provider) -> Identity:
    """Ask the provider whether ``creds`` work; raises ProviderError (auth, clock, ...)."""
    return build(creds).verify()


def add_account(ledger: Ledger, creds: Credentials, *, check: bool = True,
                build: Callable[[Credentials], Provider] = build_provider) -> Account:
    """Verify (unless ``check`` is False), then store the keys in the keyring.

    Nothing is stored when verification fails, so a typo never replaces working keys.
    """
    credentials.ensure_backend()  # refuse before a network call if there is nowhere to keep it
    identity = verify(creds, build) if check else None
    credentials.save_credentials(creds)
    account = Account(
        provider=creds.provider, key_id_masked=mask(creds.key_id),
        account=identity.account if identity else "",
        principal=identity.principal if identity else "",
        can_launch=identity.can_launch if identity else False,
        verified_at=time.time() if identity else None, added_at=time.time(),
        launch_checked=identity.launch_check != "unknown" if identity else True)
    ledger.save_account(account)
    return account


def reverify(ledger: Ledger, provider: ProviderName,
             build: Callable[[Credentials], Provider] = build_provider) -> Account:
    creds = credentials.load_credentials(provider)
    if creds is None:
        raise ProviderError("auth", MSG_NO_ACCOUNT, provider=title(provider), provider_id=provider)
    identity = verify(creds, build)
    old = ledger.account(provider)
    account = Account(provider, mask(creds.key_id), identity.account, identity.principal,
                      identity.can_launch, time.time(), old.added_at if old else time.time(),
                      identity.launch_check != "unknown")
    ledger.save_account(account)
    return account


def remove_account(ledger: Ledger, provider: ProviderName) -> None:
    credentials.delete_credentials(provider)
    ledger.delete_account(provider)
