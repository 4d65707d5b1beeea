"""Argument types the verb modules share, so that a bad number reads the same everywhere."""

from __future__ import annotations

import argparse
from collections.abc import Callable


def number_of(unit: str, *, zero_ok: bool = False) -> Callable[[str], float]:
    """An argparse ``type=`` that accepts a positive (or, with ``zero_ok``, non-negative)
    number of ``unit`` and says which one it wanted."""

    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            value = float("nan")
        if not (value >= 0 if zero_ok else value > 0):
            kind = "a" if zero_ok else "a positive"
            raise argparse.ArgumentTypeError(f"'{text}' is not {kind} number of {unit}")
        return value

    parse.__name__ = unit  # argparse names the type in its messages
    return parse
