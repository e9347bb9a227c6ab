import time

from compilebench.configuration.schema import MEASURE_DEFAULTS
from compilebench.core.experiment import Measure
from compilebench.worker import timing


def test_loop_needs_both_count_and_time():
    clock = timing.Clock("cpu")
    samples = timing.timed_loop(lambda: time.sleep(0.002), clock, iterations=3, min_time_s=0.03, max_iterations=1000)
    assert len(samples) >= 3 and sum(samples) >= 30
    assert all(s >= 2.0 for s in samples)
    capped = timing.timed_loop(lambda: None, clock, iterations=5, min_time_s=100, max_iterations=50)
    assert len(capped) == 50


def test_interleaving_alternates_blocks_and_discards_each_blocks_first_calls():
    order = []
    clock = timing.Clock("cpu")
    plan = timing.BlockPlan(eager=2, mode=2, warmup=1, min_blocks=2)
    both = timing.interleaved(
        lambda: order.append("e"),
        lambda: order.append("m"),
        clock,
        plan=plan,
        iterations=6,
        min_time_s=0,
        max_iterations=100,
    )
    assert len(both.eager_ms) == len(both.mode_ms) == 6 and both.blocks == 3
    assert "".join(order) == "mmmeeeeeemmmmmmeee"
    assert [calls for _, calls in both.mode_faults] == [2, 2, 2]  # each block's faults over its kept calls


def test_blocks_are_sized_by_time_per_side_and_need_enough_of_them():
    defaults = {**MEASURE_DEFAULTS, "interleave_block": None, "interleave_block_s": 0.2, "block_warmup": 3}

    def measure(**settings) -> Measure:
        return Measure.from_json({**defaults, "min_blocks": 10, **settings})

    plan = timing.plan_blocks(measure(max_iterations=1000), eager_ms=[10.0, 11.0, 10.0], mode_ms=[5.0])
    assert (plan.eager, plan.mode, plan.warmup) == (20, 40, 3)
    capped = timing.plan_blocks(measure(max_iterations=100), eager_ms=[0.01], mode_ms=[0.01])
    assert capped.eager == capped.mode == 10  # ten blocks still fit under max_iterations
    record = capped.record(blocks=10, block_s=0.2)
    assert record["block_s"] == 0.2 and len(record["caps"]) == 2  # both sides: what was used instead, and why
    assert "hold 10 calls (max_iterations // min_blocks), about 0.0001 s, not the 0.2 s" in record["caps"][0]
    assert plan.record(blocks=10, block_s=0.2)["caps"] == []
    fixed = timing.plan_blocks(measure(interleave_block=5, max_iterations=1000), [10.0], [5.0])
    assert (fixed.eager, fixed.mode) == (5, 5)
    calls = []
    both = timing.interleaved(
        lambda: calls.append(1), lambda: None, timing.Clock("cpu"),
        plan=timing.BlockPlan(eager=3, mode=3, warmup=0, min_blocks=4), iterations=1, min_time_s=0, max_iterations=100,
    )  # fmt: skip
    assert both.blocks == 4 and len(both.mode_ms) == 12  # the count was reached in the first block; the blocks were not


def test_a_timed_phase_cut_short_by_max_iterations_says_so():
    settings = {**MEASURE_DEFAULTS, "min_time_s": 100000.0, "max_iterations": 20, "min_blocks": 2}
    short = timing.stopped_short([1.0] * 20, blocks=4, measure=Measure.from_json(settings))
    assert short.startswith("the timed phase stopped at max_iterations (20 calls, 0.02 s in 4 blocks per side)")
    assert "min_time_s (100000 s)" in short
    assert timing.stopped_short([1.0] * 20, 4, Measure.from_json({**settings, "min_time_s": 0.01})) is None
    assert timing.stopped_short([1.0] * 10, 4, Measure.from_json(settings)) is None  # it stopped for another reason


def test_the_kept_calls_of_a_side_skip_each_blocks_first_calls():
    assert timing.kept(list("wwkkkwwkkk"), warmup=2, block=3) == list("kkkkkk")


def test_each_block_counts_the_page_faults_its_kept_calls_took():
    import numpy as np

    mapped = 64 << 20  # above what glibc keeps in its heap: every call maps it afresh, and writing it faults it in

    def fresh():
        return np.ones(mapped // 8)

    both = timing.interleaved(
        lambda: None, fresh, timing.Clock("cpu"),
        plan=timing.BlockPlan(eager=3, mode=3, warmup=1, min_blocks=2), iterations=1, min_time_s=0, max_iterations=6,
    )  # fmt: skip
    at_least = 3 * mapped // (2 << 20)  # a fault maps at most a 2 MiB huge page: this many, whatever the kernel does
    assert [calls for _, calls in both.mode_faults] == [3, 3]
    assert all(faults >= at_least for faults, _ in both.mode_faults)
    assert all(faults < 3 for faults, _ in both.eager_faults)
    samples, (faults, calls) = timing.alone(fresh, timing.Clock("cpu"), warmup=1, iterations=2, min_time_s=0,
                                            max_iterations=2)  # fmt: skip
    assert len(samples) == calls == 2 and faults >= 2 * mapped // (2 << 20)
