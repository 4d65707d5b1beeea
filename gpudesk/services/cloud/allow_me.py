""""Allow my new address": move a machine's one-address SSH rule to this computer.

A laptop's public address changes (another network, a new lease) and the /32
that the security group opens port 22 to no longer matches: SSH times out.
:func:`allow_me` replaces gpudesk's rule in the machine's group (authorise the
new /32, revoke the old one gpudesk made); rules the user added are left alone.
:func:`address_mismatch` says whether that is the likely cause of a failed SSH,
so the window can offer the fix instead of a bare timeout.

Blocking; call through ``asyncio.to_thread``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from gpudesk.i18n_marks import QT_TRANSLATE_NOOP
from gpudesk.services.cloud.accounts import ProviderFactory
from gpudesk.services.cloud.accounts import provider_from_keyring
from gpudesk.services.cloud.accounts import title
from gpudesk.services.cloud.machines import resolve
from gpudesk.services.cloud.providers.base import Provider
from gpudesk.services.cloud.providers.base import ProviderError
from gpudesk.services.cloud.providers.base import single_address
from gpudesk.services.cloud.public_ip import detect_public_address
from gpudesk.services.money.ledger import Ledger
from gpudesk.services.money.ledger import Machine

MSG_NO_GROUP = QT_TRANSLATE_NOOP(
    "ProviderError", "{name} has no gpudesk security group to change (it is your own machine, "
    "or it was adopted without one).")
MSG_CANNOT = QT_TRANSLATE_NOOP(
    "ProviderError", "gpudesk cannot change the SSH rule on {provider} machines.")


@dataclass(frozen=True)
class AllowResult:
    machine: Machine
    address: str  # the /32 (/128) SSH is open to now
    replaced: list[str]  # the addresses gpudesk's rule named before


def _machine(ledger: Ledger, ref: str) -> Machine:
    machine = resolve(ledger, ref)  # refused in the same words as every verb on a machine
    if machine.provider == "own" or not machine.security_group:
        raise ProviderError("invalid", MSG_NO_GROUP, name=machine.name or machine.id)
    return machine


def _method(provider: Provider, name: str, machine: Machine) -> Callable[..., list[str]]:
    method = getattr(provider, name, None)
    if method is None:
        raise ProviderError("invalid", MSG_CANNOT, provider=title(machine.provider))
    return method  # type: ignore[no-any-return]


def allow_me(ledger: Ledger, ref: str, address: str = "",
             providers: ProviderFactory = provider_from_keyring) -> AllowResult:
    """Open SSH on machine ``ref`` to ``address`` (default: this computer's public one)."""
    machine = _machine(ledger, ref)
    new = single_address(address) if address else detect_public_address()
    provider = providers(machine.provider)  # type: ignore[arg-type]
    replace = _method(provider, "set_ssh_address", machine)
    ledger.log(machine.id, "allow-me-requested", f"{machine.security_group} {new}")
    replaced = replace(machine.region, machine.security_group, new)
    ledger.log(machine.id, "allow-me", f"{', '.join(replaced) or '-'} -> {new}")
    return AllowResult(machine, new, replaced)


def address_mismatch(ledger: Ledger, ref: str, current: str = "",
                     providers: ProviderFactory = provider_from_keyring
                     ) -> tuple[str, list[str]] | None:
    """(this computer's address, the rule's) when they differ; None when they agree.

    Asked after SSH to a gpudesk machine failed: a mismatch is the likely cause and
    :func:`allow_me` its fix.
    """
    machine = _machine(ledger, ref)
    here = single_address(current) if current else detect_public_address()
    provider = providers(machine.provider)  # type: ignore[arg-type]
    rules = _method(provider, "ssh_addresses", machine)(machine.region, machine.security_group)
    return None if here in rules else (here, list(rules))


def allow_me_if_moved(ledger: Ledger, ref: str,
                      providers: ProviderFactory = provider_from_keyring
                      ) -> tuple[str, AllowResult | None]:
    """After a failed SSH: replace the rule only when this computer's address moved.

    Returns this computer's address and the change made (None: the rule already
    names it, so the address is not why SSH failed).
    """
    here = detect_public_address()
    if address_mismatch(ledger, ref, here, providers) is None:
        return here, None
    return here, allow_me(ledger, ref, here, providers)
