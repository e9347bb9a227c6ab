import time

from compilebench import timing


def test_loop_needs_both_count_and_time():
    clock = timing.Clock("cpu")
    samples = timing.timed_loop(lambda: time.sleep(0.002), clock, iterations=3, min_time_s=0.03, max_iterations=1000)
    assert len(samples) >= 3 and sum(samples) >= 30
    assert all(s >= 2.0 for s in samples)
    capped = timing.timed_loop(lambda: None, clock, iterations=5, min_time_s=100, max_iterations=50)
    assert len(capped) == 50


def test_interleaving_alternates_blocks():
    order = []
    clock = timing.Clock("cpu")
    eager, mode = timing.interleaved(
        lambda: order.append("e"),
        lambda: order.append("m"),
        clock,
        block=2,
        iterations=6,
        min_time_s=0,
        max_iterations=100,
    )
    assert len(eager) == len(mode) == 6
    assert "".join(order) == "mmeeeemmmmee"
