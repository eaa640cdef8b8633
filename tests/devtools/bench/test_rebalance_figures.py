"""The scale-out figures of `rekey bench rebalance`, from output CreateTimes and latencies (no stack)."""

from kafka_rekey_dev.bench.rebalance import max_latency, scale_out, windows


def test_windows_count_outputs_per_window_not_per_burst() -> None:
    # one burst of 300 outputs every 1.5 s: single seconds alternate between 300 and 0, 3 s windows do not
    created = sorted(1_000_000 + burst * 1_500 + i % 5 for burst in range(6) for i in range(300))

    assert windows(created, 1_000.0, 1_009.0) == [200.0, 200.0, 200.0]


def test_a_stall_shows_as_windows_below_half_and_in_the_latency() -> None:
    # 100 events/s sent and re-keyed at once, except those sent in [1010, 1016): re-keyed at 1016
    latencies = [(t, 5) if not 1_010_000 <= t < 1_016_000 else (t, 1_016_000 - t)
                 for t in range(1_000_000, 1_030_000, 10)]
    created = sorted(sent + latency for sent, latency in latencies)

    figures = scale_out(2, started=1_010.0, ready=1_014.0, created_ms=created, latencies=latencies,
                        paced_rate=100.0, phase=12.0)

    assert figures.before_events_per_s == 100
    assert figures.during_events_per_s == 0
    assert figures.seconds_below_half == 6.0  # both windows of the stall; the catch-up at 1016 s is in the third
    assert figures.lowest_window_events_per_s == 0
    assert figures.max_latency_ms == 6_000
    assert figures.ready_seconds == 4.0
    assert max_latency(latencies, 1_000.0, 1_010.0) == 5
