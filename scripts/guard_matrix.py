"""Run the runaway-bill matrix (tests/guard_matrix_cases.py) and write docs/guard-matrix.md.

``python scripts/guard_matrix.py`` prints one row per case (cloud, action, fault, bill,
budget, outcome) and writes the same table into docs/guard-matrix.md; ``--json`` prints
``{"rows": [...]}`` instead of the table. ``--only aws`` (or ``aws:stop``,
``aws:stop:reboot``; ``aws+group`` for the keep-alive group rows of issue 23) runs some rows
and leaves the document alone. Exit status 1 when a row is not capped, refused or said.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tests"))
sys.path.insert(0, str(REPO))
DOC = REPO / "docs" / "guard-matrix.md"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="guard_matrix", description=__doc__)
    p.add_argument("--json", action="store_true", help="print the rows as JSON")
    p.add_argument("--only", default="", help="cloud[:action[:fault]] to run")
    p.add_argument("--why", action="store_true", help="also say what happened in each row")
    args = p.parse_args(argv)
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    import guard_matrix_cases as gm

    want = [w for w in args.only.split(":") if w]

    def only(case: tuple[str, str, str]) -> bool:
        return all(w == c for w, c in zip(want, case, strict=False))

    rows = gm.run_matrix(only)
    if args.json:
        print(gm.as_json(rows))
    else:
        print(gm.table(rows), end="")
    if args.why:
        for r in rows:
            print(f"{r.cloud}/{r.action}/{r.fault}: {r.outcome}: {r.why}", file=sys.stderr)
    if not want:
        DOC.write_text(gm.document(rows), encoding="utf-8")
    return 0 if all(r.outcome in gm.OUTCOMES for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
