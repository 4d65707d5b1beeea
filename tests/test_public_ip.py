"""The address SSH is opened to comes from an echo service; LAN answers are refused."""

from __future__ import annotations

import pytest

from gpudesk.services.cloud.providers.base import ProviderError
from gpudesk.services.cloud.providers.base import single_address
from gpudesk.services.cloud.public_ip import ECHO_ENV
from gpudesk.services.cloud.public_ip import detect_public_address


def test_detects_the_public_address_as_a_single_host(echo: list[str]) -> None:
    assert detect_public_address() == "203.0.113.7/32"
    echo[0] = "2001:db8::7"
    assert detect_public_address() == "2001:db8::7/128"


@pytest.mark.parametrize("answer", ["192.168.1.20", "10.1.2.3", "127.0.0.1", "<html>", ""])
def test_lan_or_garbage_answers_are_refused(echo: list[str], answer: str) -> None:
    echo[0] = answer
    with pytest.raises(ProviderError) as info:
        detect_public_address()
    assert info.value.kind == "network" and "--allow-from" in str(info.value)


def test_unreachable_service_says_what_to_do(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(ECHO_ENV, "http://127.0.0.1:9/")  # discard port: connection refused
    with pytest.raises(ProviderError, match="Pass --allow-from"):
        detect_public_address(timeout=2)


@pytest.mark.parametrize("cidr", ["0.0.0.0/0", "203.0.113.0/24", "::/0", "nonsense", "0.0.0.0"])
def test_only_single_addresses_may_reach_ssh(cidr: str) -> None:
    with pytest.raises(ProviderError) as info:
        single_address(cidr)
    assert info.value.kind == "invalid"


def test_single_address_normalises() -> None:
    assert single_address(" 198.51.100.4 ") == "198.51.100.4/32"
    assert single_address("198.51.100.4/32") == "198.51.100.4/32"
