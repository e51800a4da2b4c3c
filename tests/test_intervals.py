"""Paired bootstrap intervals on known cases, and the items-needed formula."""

from __future__ import annotations

import math

import pytest

from kbake.eval.intervals import detectable_change, items_to_see, paired_bootstrap, paired_bootstrap_ppl


def test_no_change_gives_a_zero_width_interval():
    c = paired_bootstrap([1, 0, 1, 1, 0], [1, 0, 1, 1, 0])
    assert c == {"diff": 0.0, "lo": 0.0, "hi": 0.0, "n": 5, "gained": 0, "lost": 0, "detectable": None}


def test_known_case_matches_the_normal_approximation():
    """10 of 400 items flip to right and none to wrong: the change is 2.5 points and the paired
    difference is a 0/1 variable with p = 0.025, so the 95% interval is about
    0.025 ± 1.96·sqrt(p(1-p)/n) = [0.0097, 0.0403]."""
    base = [0] * 400
    new = [1] * 10 + [0] * 390
    c = paired_bootstrap(base, new, n_boot=4000, seed=1)
    half = 1.96 * math.sqrt(0.025 * 0.975 / 400)
    assert c["diff"] == pytest.approx(0.025)
    assert c["lo"] == pytest.approx(0.025 - half, abs=0.004) and c["hi"] == pytest.approx(0.025 + half, abs=0.004)
    assert (c["gained"], c["lost"]) == (10, 0)


def test_pairing_narrows_the_interval():
    """The same two accuracies (50% vs 52.5%) when the models disagree on few items are
    tighter than when they disagree on many: the interval depends on the disagreements."""
    base = [1] * 200 + [0] * 200
    few = [1] * 210 + [0] * 190                      # 10 gained, 0 lost
    many = [0] * 95 + [1] * 105 + [1] * 105 + [0] * 95  # 105 gained, 95 lost
    a, b = paired_bootstrap(base, few), paired_bootstrap(base, many)
    assert a["diff"] == pytest.approx(b["diff"]) == pytest.approx(0.025)
    assert (a["hi"] - a["lo"]) < (b["hi"] - b["lo"]) / 2
    assert a["lo"] > 0 and b["lo"] < 0


def test_perplexity_change_and_length_mismatch():
    nll_base, tokens = [10.0, 20.0, 30.0], [10, 10, 10]
    c = paired_bootstrap_ppl(nll_base, [11.0, 22.0, 33.0], tokens)
    assert c["diff"] == pytest.approx(math.exp(66 / 30 - 2.0) - 1)
    assert c["lo"] > 0 and c["lost"] == 3
    with pytest.raises(ValueError, match="differ in length"):
        paired_bootstrap([1, 0], [1])
    assert paired_bootstrap([], []) is None


def test_items_to_see():
    # 10% of items disagree; a 2-point drop clears a 95% interval at n >= 0.1 * (1.96/0.02)^2 = 961
    assert items_to_see(0.10, 0.02) == 961
    assert items_to_see(0.0, 0.02) is None


def test_pooled_bootstrap_known_values_and_seed_spread():
    from kbake.eval.intervals import pooled_bootstrap

    base = [0.0] * 100
    same = pooled_bootstrap(base, [[1.0] * 30 + [0.0] * 70] * 3)
    assert same["diff"] == pytest.approx(0.30) and same["seeds"] == 3 and same["per_seed"] == pytest.approx([0.3] * 3)
    assert same["lo"] < 0.30 < same["hi"] and same["gained"] == 30 and same["lost"] == 0
    # the same mean from seeds that disagree: a wider interval
    spread = pooled_bootstrap(base, [[1.0] * 10 + [0.0] * 90, [1.0] * 30 + [0.0] * 70, [1.0] * 50 + [0.0] * 50])
    assert spread["diff"] == pytest.approx(0.30)
    assert spread["hi"] - spread["lo"] > same["hi"] - same["lo"]
    with pytest.raises(ValueError, match="one row of 100"):
        pooled_bootstrap(base, [[1.0] * 99])


def test_pooled_difference_between_two_settings_widens_with_seed_spread():
    from kbake.eval.intervals import pooled_difference

    a = [[1.0] * 40 + [0.0] * 60] * 3
    b = [[1.0] * 20 + [0.0] * 80] * 3
    same = pooled_difference(a, b)
    assert same["diff"] == pytest.approx(0.20) and same["seeds"] == [3, 3]
    assert 0 < same["lo"] < 0.20 < same["hi"] and same["gained"] == 20 and same["lost"] == 0
    # b's seeds disagree around the same mean: the interval widens, the estimate does not move
    spread = pooled_difference(a, [[1.0] * 0 + [0.0] * 100, [1.0] * 20 + [0.0] * 80, [1.0] * 40 + [0.0] * 60])
    assert spread["diff"] == pytest.approx(0.20)
    assert spread["hi"] - spread["lo"] > same["hi"] - same["lo"]
    assert pooled_difference(b, a)["diff"] == pytest.approx(-0.20)
    with pytest.raises(ValueError, match="same items"):
        pooled_difference(a, [[1.0] * 99])


def test_the_detectable_change_is_found_four_times_in_five():
    """42 probes on which the models disagree on 30%: the smallest change they detect is
    2.80 * sqrt(0.3 / 42) = 23.7 points (the +-16 interval is 1.96 of the same root). A true change
    of that size, simulated, clears a two-sided 5% test about 80% of the time, as its definition says."""
    import numpy as np

    d = [1] * 7 + [-1] * 6 + [0] * 29  # 13 of 42 disagree (31%)
    assert detectable_change(d) == pytest.approx(2.8016 * math.sqrt(13 / 42 / 42), rel=1e-3)
    assert paired_bootstrap([0] * 42, [max(x, 0) for x in d])["detectable"] == pytest.approx(2.8016 * math.sqrt(7 / 42 / 42), rel=1e-3)
    n, p = 400, 0.3
    mde = 2.8016 * math.sqrt(p / n)
    rng = np.random.default_rng(0)
    u = rng.random((4000, n))
    sims = np.where(u < (p + mde) / 2, 1.0, np.where(u < p, -1.0, 0.0))  # gained (p+mde)/2, lost (p-mde)/2
    z = sims.mean(1) / np.sqrt((sims ** 2).mean(1) / n)
    assert 0.75 < float((np.abs(z) > 1.96).mean()) < 0.87
    assert detectable_change([0, 0, 0]) is None
