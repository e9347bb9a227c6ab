import numpy as np
import pytest

from compilebench.analysis import stats


def test_summary_matches_numpy():
    rng = np.random.default_rng(1)
    x = rng.lognormal(mean=2.0, sigma=0.3, size=257)
    s = stats.summarize(list(x), resamples=500)
    assert s["n"] == 257
    assert s["median_ms"] == pytest.approx(np.median(x))
    assert s["mean_ms"] == pytest.approx(np.mean(x))
    assert s["p90_ms"] == pytest.approx(np.percentile(x, 90))
    assert s["p99_ms"] == pytest.approx(np.percentile(x, 99))
    assert s["std_ms"] == pytest.approx(np.std(x, ddof=1))
    assert s["cv"] == pytest.approx(np.std(x, ddof=1) / np.mean(x))
    assert (s["min_ms"], s["max_ms"]) == (x.min(), x.max())
    low, high = s["ci95_ms"]
    assert low < np.median(x) < high
    assert high - low < 0.2 * np.median(x)


def test_median_interval_matches_a_numpy_bootstrap():
    rng = np.random.default_rng(2)
    x = rng.normal(10, 1, size=200)
    low, high = stats.summarize(list(x), resamples=4000)["ci95_ms"]
    boot = np.median(rng.choice(x, size=(4000, x.size)), axis=1)
    assert low == pytest.approx(np.percentile(boot, 2.5), rel=0.02)
    assert high == pytest.approx(np.percentile(boot, 97.5), rel=0.02)


def test_single_sample_has_degenerate_interval():
    s = stats.summarize([5.0])
    assert s["ci95_ms"] == [5.0, 5.0] and s["std_ms"] == 0.0


def test_median_interval_stays_within_the_samples_on_a_coarse_clock():
    # A coarse timer gives many equal samples; the interval must not round past the extremes.
    rng = np.random.default_rng(1)
    for _ in range(40):
        ticks_ns = 568441 + 3 * rng.integers(0, 3, size=58)
        s = stats.summarize(list(ticks_ns / 1e6))
        assert s["min_ms"] <= s["ci95_ms"][0] <= s["median_ms"] <= s["ci95_ms"][1] <= s["max_ms"]


def test_a_result_whose_interleaved_median_left_its_steady_state_is_flagged():
    rng = np.random.default_rng(2)
    alone = list(rng.normal(10.0, 0.2, 60))
    perturbed = stats.steady_state([list(rng.normal(11.0, 0.2, 200))], [alone])
    assert perturbed["flagged"] and perturbed["ratio"] == pytest.approx(1.1, rel=0.02)
    assert perturbed["ci95"][0] > 1 and perturbed["median_ms"] == pytest.approx(10.0, rel=0.02)
    # A real but small difference (2%) and a null one are both within tolerance.
    assert not stats.steady_state([list(rng.normal(10.2, 0.2, 200))], [alone])["flagged"]
    assert not stats.steady_state([list(rng.normal(10.0, 0.2, 200))], [alone])["flagged"]


def test_eager_alone_is_one_moment_of_the_machine_and_flagged_only_beyond_how_its_moments_differ():
    rng = np.random.default_rng(3)
    alone = list(rng.normal(10.0, 0.1, 30))  # one stretch of 0.3 s, at one level of the machine
    levels = rng.choice([9.4, 10.0, 10.6], size=10)  # the machine moving between the interleaved blocks' moments
    drifting = np.concatenate([rng.normal(level * 1.05, 0.1, 20) for level in levels])
    said = stats.eager_alone([stats.Timed(drifting, 20)], [alone], seed=4)
    assert said["ratio"] == pytest.approx(1.05, abs=0.04) and said["ci95"][0] < 1 < said["ci95"][1]
    assert not said["flagged"] and "against one moment" in said["interval"]
    assert stats.steady_state([list(drifting)], [alone])["flagged"]  # as if 30 calls in a row were 30 moments
    steady = np.concatenate([rng.normal(level * 1.12, 0.1, 20) for level in rng.normal(1.0, 0.005, 10) * 10])
    slowed = stats.eager_alone([stats.Timed(steady, 20)], [alone], seed=4)
    assert slowed["flagged"] and slowed["ci95"][0] > 1.05  # the mode's presence slowed eager at every moment
