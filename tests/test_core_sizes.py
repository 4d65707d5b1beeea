"""The one byte-count spelling the CLI's ``outputs`` and the window's run outputs share."""

from __future__ import annotations

import pytest

from gpudesk.services.core.sizes import size_text


@pytest.mark.parametrize(("n", "text"), [
    (0, "0 B"),
    (1023, "1,023 B"),
    (1024, "1.0 KiB"),
    (1536, "1.5 KiB"),
    (5 * 1024 ** 2 + 1024 ** 2 // 10, "5.1 MiB"),
    (3 * 1024 ** 3, "3.0 GiB"),
    (2048 * 1024 ** 4, "2,048.0 TiB"),  # TiB is the largest unit
])
def test_size_text(n: float, text: str) -> None:
    assert size_text(n) == text
