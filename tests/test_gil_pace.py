"""The telemetry thread's pace: a backfill's burst pauses, a live sample never does."""

from __future__ import annotations

from gpudesk.services.core.gil_pace import GilPace


def test_a_burst_pauses_every_n_items_and_a_trickle_never() -> None:
    burst = GilPace(every=32, pause_s=0.0)
    for _ in range(100):
        burst.step()
    assert burst.pauses == 3  # after items 32, 64 and 96

    live = GilPace(every=32, pause_s=0.0)
    for _ in range(1000):  # one sample a second: the stream is caught up after each
        live.step()
        live.idle()
    assert live.pauses == 0
