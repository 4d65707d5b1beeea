"""Byte counts as people read them (binary units), one spelling for the CLI and the window."""

from __future__ import annotations

UNITS = ("B", "KiB", "MiB", "GiB", "TiB")


def size_text(n: float) -> str:
    """``1,536`` → ``1.5 KiB``: whole bytes below 1 KiB, one decimal above, TiB at most."""
    for unit in UNITS:
        if n < 1024 or unit == UNITS[-1]:
            return f"{n:,.0f} {unit}" if unit == "B" else f"{n:,.1f} {unit}"
        n /= 1024
    raise AssertionError("unreachable: the last unit always returns")  # pragma: no cover
