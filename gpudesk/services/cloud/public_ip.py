"""The user's own public address, so the security group opens SSH to it alone (/32)."""

from __future__ import annotations

import ipaddress
import os

from gpudesk.i18n_marks import QT_TRANSLATE_NOOP
from gpudesk.services.cloud.providers.base import ProviderError
from gpudesk.services.cloud.providers.base import single_address

# Echo services that answer with the caller's address as plain text. Tests point
# GPUDESK_IP_ECHO_URL at a local server.
ECHO_URLS = ("https://checkip.amazonaws.com", "https://api.ipify.org")
ECHO_ENV = "GPUDESK_IP_ECHO_URL"
# Addresses that cannot be what a cloud firewall sees (a LAN, carrier NAT, loopback).
_NOT_PUBLIC = tuple(ipaddress.ip_network(n) for n in (
    "10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16", "100.64.0.0/10", "127.0.0.0/8",
    "169.254.0.0/16", "0.0.0.0/8", "::1/128", "fc00::/7", "fe80::/10", "::/128"))

MSG_NO_ADDRESS = QT_TRANSLATE_NOOP(
    "ProviderError", "Could not find this computer's public address ({detail}), so SSH cannot "
    "be limited to it. Pass --allow-from YOUR.ADDRESS/32 (the Launch dialog has a field).")


def detect_public_address(timeout: float = 5.0) -> str:
    """``"203.0.113.7/32"`` for this computer as the internet sees it."""
    override = os.environ.get(ECHO_ENV, "").strip()
    urls = (override,) if override else ECHO_URLS
    import urllib.request  # here, not at start-up: it pulls in http, ssl and email

    problems = []
    for url in urls:
        try:
            with urllib.request.urlopen(url, timeout=timeout) as response:  # noqa: S310
                text = response.read(64).decode("ascii", "replace").strip()
            address = ipaddress.ip_address(text)
        except (OSError, ValueError) as exc:
            problems.append(f"{url}: {type(exc).__name__}")
            continue
        if any(address in net for net in _NOT_PUBLIC if net.version == address.version):
            problems.append(f"{url}: private address {address}")
            continue
        return single_address(str(address))
    raise ProviderError("network", MSG_NO_ADDRESS, detail="; ".join(problems) or "no service")
