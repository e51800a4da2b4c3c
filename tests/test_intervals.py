"""Paired bootstrap intervals on known cases, and the items-needed formula."""

from __future__ import annotations

import math

import pytest

from kbake.eval.intervals import items_to_see, paired_bootstrap, paired_bootstrap_ppl


def test_no_change_gives_a_zero_width_interval():
    c = paired_bootstrap([1, 0, 1, 1, 0], [1, 0, 1, 1, 0])
    assert c == {"diff": 0.0, "lo": 0.0, "hi": 0.0, "n": 5, "gained": 0, "lost": 0}


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
