"""Records put from a worker thread reach the GUI thread in order, in few batches."""

from __future__ import annotations

import threading

import pytest

pytest.importorskip("PySide6")

from gpudesk.ui.watch.record_batcher import RecordBatcher  # noqa: E402


def test_a_burst_from_a_thread_arrives_whole_in_order_in_few_batches(qtbot) -> None:  # type: ignore[no-untyped-def]
    got: list[int] = []
    threads: set[int] = set()

    def sink(batch: list[int]) -> None:
        threads.add(threading.get_ident())
        got.extend(batch)

    batcher = RecordBatcher(sink)
    n = 5000  # a reconnect's backfill
    worker = threading.Thread(target=lambda: [batcher.put(k) for k in range(n)])
    worker.start()
    worker.join()
    qtbot.waitUntil(lambda: len(got) == n, timeout=5000)
    assert got == list(range(n))
    assert threads == {threading.get_ident()}  # delivered on the GUI thread
    assert batcher.batches <= 10  # not 5 000 queued calls

    # A live sample alone comes through on the next turn, by itself.
    before = batcher.batches
    batcher.put(n)
    qtbot.waitUntil(lambda: got[-1] == n, timeout=2000)
    assert batcher.batches == before + 1
