"""Run every ``benchmarks/bench_*.py`` module's ``main()``: ``python -m benchmarks.run_all``.

Exits non-zero if a benchmark crashed; a missed goal is reported, not fatal.
"""

from __future__ import annotations

import importlib
import json
import sys
import traceback
from pathlib import Path


def main() -> int:
    here = Path(__file__).resolve().parent
    results: dict[str, object] = {}
    failed: list[str] = []
    for path in sorted(here.glob("bench_*.py")):
        name = f"benchmarks.{path.stem}"
        print(f"== {name}", flush=True)
        try:
            results[path.stem] = importlib.import_module(name).main()
        except Exception:
            traceback.print_exc()
            failed.append(path.stem)
        print(flush=True)
    print("== summary")
    print(json.dumps(results, indent=2, default=str))
    if failed:
        print(f"crashed: {', '.join(failed)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
