"""CLI verb ``outputs``: a run's checkpoints and outputs in its bucket, and their download.

``gpudesk outputs RUN [--download DIR] [--json] [--store URI --region REGION]``.
The run record names its store; ``--store``/``--region`` reach a bucket without one
(a run started elsewhere). Keys come from the keyring, as for every cloud call.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from gpudesk.cli.errors import said_error
from gpudesk.services.core.sizes import size_text

VERBS = frozenset({"outputs"})
CLOUD_CURRENCY = {"aws": "USD"}


def _say(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def _store(a: argparse.Namespace) -> tuple[str, str]:
    if a.store:
        if not a.region:
            raise SystemExit("gpudesk: error: --store needs --region")
        return a.store, a.region
    from gpudesk.services.runs.detached import RunRecord

    record = RunRecord.load(a.run)
    if not record.store_uri:
        raise SystemExit(f"gpudesk: error: run {a.run} has no bucket (it keeps its "
                         "checkpoints on the machine and this computer only)")
    return record.store_uri, record.store_region


def _cmd_outputs(a: argparse.Namespace) -> int:
    from gpudesk.services.cloud.credentials import load_credentials
    from gpudesk.services.storage import outputs
    from gpudesk.services.storage import pricing
    from gpudesk.services.storage import s3_price_list
    from gpudesk.services.storage.clients import make_client
    from gpudesk.services.storage.uri import parse_uri

    text, region = _store(a)
    store = parse_uri(text)
    creds = load_credentials(store.cloud)  # type: ignore[arg-type]
    if creds is None:
        raise SystemExit(f"gpudesk: error: no {store.cloud} account in the keyring "
                         "(gpudesk accounts add)")
    client = make_client(store.cloud, region, creds)
    listing = outputs.list_run(client, store, a.run)
    if store.cloud == "aws":  # S3's prices from AWS's public price list, unless read today
        s3_price_list.ensure_fresh([region])
    price = pricing.storage_price(store.cloud, region)
    monthly = pricing.monthly_cost(listing.total_bytes, price.price)
    if a.json and not a.download:
        out: dict[str, Any] = {
            "run": listing.run, "uri": listing.uri,
            "checkpoints": [{"name": c.name, "bytes": c.bytes, "complete": c.complete}
                            for c in listing.checkpoints],
            "outputs": [{"path": o.path, "bytes": o.bytes} for o in listing.outputs],
            "monthly_cost": monthly,
            "currency": price.price.currency if price.price else None,
        }
        print(json.dumps(out, indent=2))
        return 0
    if not a.download:
        _print_listing(listing, monthly, price)
        data = _dataset_line(a.run)
        if data:  # which dataset at which version the run used (issue 32; the Run page too)
            print(f"  {data}")
        return 0
    return _download(a, client, store, listing, region)


def _dataset_line(run: str) -> str:
    """Which dataset at which version the run used, from its record; "" without one."""
    from gpudesk.services.runs.detached import RunError
    from gpudesk.services.runs.detached import RunRecord
    from gpudesk.services.runs.run_data import dataset_line

    try:
        data = RunRecord.load(run).data
    except RunError:  # a run started elsewhere (--store): no record here
        return ""
    return dataset_line(data) or ""


def _print_listing(listing: Any, monthly: float | None, price: Any) -> None:
    print(f"{listing.uri}")
    for c in listing.checkpoints:
        flag = "latest" if c.latest else ("complete" if c.complete else "incomplete")
        print(f"  checkpoint {c.name:<40} {size_text(c.bytes):>12}  {flag}")
    for o in listing.outputs:
        print(f"  output     {o.path:<40} {size_text(o.bytes):>12}")
    if listing.warning:
        print(f"  note: {listing.warning}")
    if monthly is None:
        print(f"  storage: {size_text(listing.total_bytes)}; {price.reason}")
    else:
        print(f"  storage: {size_text(listing.total_bytes)}, {monthly:,.4f} "
              f"{price.price.currency}/month ({price.price.source}, {price.price.as_of})")


def _download(a: argparse.Namespace, client: Any, store: Any, listing: Any,
              region: str) -> int:
    from gpudesk.services.storage import outputs
    from gpudesk.services.storage import pricing

    out_price = pricing.data_out_price(store.cloud, region)
    cost = pricing.data_out_cost(listing.outputs_bytes, out_price.price)
    if cost is None:
        _say(f"{size_text(listing.outputs_bytes)} to download; {out_price.reason}")
    else:
        _say(f"{size_text(listing.outputs_bytes)} to download, data out about {cost:,.4f} "
             f"{out_price.price.currency} ({out_price.price.source}, "  # type: ignore[union-attr]
             f"{out_price.price.as_of})")  # type: ignore[union-attr]
    shown = [-1]

    def progress(done: int, total: int) -> None:
        percent = 100 if total == 0 else done * 100 // total
        if percent != shown[0] and not a.json:
            shown[0] = percent
            _say(f"  {percent:3d}% {size_text(done)} of {size_text(total)}")

    written = outputs.download_outputs(client, store, listing, Path(a.download), progress)
    if a.json:
        print(json.dumps({"run": listing.run, "uri": listing.uri,
                          "downloaded": [str(p) for p in written],
                          "bytes": listing.outputs_bytes}, indent=2))
    else:
        print(f"{len(written)} file(s) in {a.download}")
    return 0


def add_parsers(sub: Any) -> None:
    p = sub.add_parser("outputs", help="a run's checkpoints and outputs in its bucket")
    p.add_argument("run", metavar="RUN")
    p.add_argument("--download", metavar="DIR", help="fetch the outputs into DIR")
    p.add_argument("--json", action="store_true")
    p.add_argument("--store", metavar="URI",
                   help="s3://, cos:// or oss:// bucket/prefix (default: the run's)")
    p.add_argument("--region", help="the bucket's region (with --store)")
    p.set_defaults(func=_cmd_outputs)


def handle_error(err: BaseException) -> int | None:
    """Exit status for a storage error, after printing it; None if not ours."""
    return said_error(err, "gpudesk.services.storage.errors:StorageError")
