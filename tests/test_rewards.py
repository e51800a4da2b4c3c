"""GRPO rewards on hand-written cases, adversarial ones included."""

import pytest

from kbake.train.rewards import exact_match_reward, f1_reward, format_reward, length_penalty, numeric_reward, parse_numbers, trl_reward

NUMERIC = [
    ("$1.21 billion", "$1.21 billion", 1.0),
    ("1,210 million dollars", "$1.21 billion", 1.0),         # same value, other scale word
    ("It was $1.21bn.", "$1.21 billion", 1.0),
    ("15.2%", "15.2%", 1.0),
    ("15.2 percent", "15.2%", 1.0),
    ("about 15.3%", "15.2%", 0.0),                           # off by more than 0.5%
    ("$15.2", "15.2%", 0.0),                                  # a currency is not a percentage
    ("6,140 employees", "6,140", 1.0),
    ("6140", "6,140", 1.0),
    ("none", "6,140", 0.0),
    ("Muncie, Indiana", "Muncie, Indiana", 0.0),              # no number in the reference: not this reward's job
    ("The backlog was 1.21 billion, up from 1.04 billion", "$1.21 billion", 0.5),  # one of two numbers
    # adversarial: every number of the document listed
    ("1971 2004 64 1842.6 1684.3 9.4 58 31 11 23 812.4 790.1 2.8 1.21 billion", "$1.21 billion", 1 / 14),
    ("1971", "1971", 1.0),
    ("In 1971.", "founded in 1971", 1.0),
]


@pytest.mark.parametrize("completion,reference,expected", NUMERIC)
def test_numeric(completion, reference, expected):
    assert numeric_reward(completion, reference) == pytest.approx(expected)


def test_parse_numbers_scales_and_kinds():
    assert parse_numbers("$1.21 billion and 15.2% of 47 centers") == [(1.21e9, "$"), (15.2, "%"), (47.0, "")]


EM = [
    ("Aarhus", "Aarhus", 1.0),
    ("aarhus.", "Aarhus", 1.0),
    ("The Tidewell pump", "Tidewell pump", 1.0),
    ("Aarhus, Denmark", "Aarhus", 0.0),
    ("Osaka", "Aarhus", 0.0),
]


@pytest.mark.parametrize("completion,reference,expected", EM)
def test_exact_match(completion, reference, expected):
    assert exact_match_reward(completion, reference) == expected


def test_f1_partial_credit_and_padding_punished():
    assert f1_reward("Muncie, Indiana", "Muncie, Indiana") == 1.0
    assert f1_reward("Muncie", "Muncie, Indiana") == pytest.approx(2 / 3)
    # adversarial: the whole document's vocabulary in one answer scores far below the plain answer
    padded = "Muncie Indiana Aarhus Denmark Osaka Japan Chennai India Bellingham Washington Monterrey Mexico"
    assert f1_reward(padded, "Muncie, Indiana") < 0.3


FORMAT = [
    ("Aarhus, Denmark", 1.0),
    ("", 0.0),
    ("Q: where are the membranes made?", 0.0),          # echoes a question instead of answering
    ("Aarhus.\nAlso Osaka.\nAlso Chennai.", 0.0),        # not one line
    (" ".join(["word"] * 30), 0.0),                      # rambling
]


@pytest.mark.parametrize("completion,expected", FORMAT)
def test_format(completion, expected):
    assert format_reward(completion) == expected


def test_length_penalty():
    assert length_penalty("Aarhus, Denmark", "Aarhus") == 0.0
    assert length_penalty("one two three four", "one two") == 0.0
    assert length_penalty("one two three four five six", "one two") == pytest.approx(-0.5)
    assert length_penalty(" ".join(["w"] * 100), "one two") == -1.0


def test_trl_signature_reads_conversational_completions():
    f = trl_reward("exact_match")
    comps = [[{"role": "assistant", "content": "Aarhus"}], [{"role": "assistant", "content": "Osaka"}]]
    assert f(prompts=[None, None], completions=comps, reference=["Aarhus", "Aarhus"]) == [1.0, 0.0]
