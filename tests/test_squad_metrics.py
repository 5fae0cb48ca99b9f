"""SQuAD v1.1 / v2.0 evaluation on hand-checked cases (expected numbers from the official formulas)."""

import pytest

from keras_bert_impl.metrics import (
    apply_no_ans_threshold,
    compute_exact,
    compute_f1,
    find_best_thresh,
    get_raw_scores,
    make_qid_to_has_ans,
    normalize_answer,
    squad_v1_evaluate,
    squad_v2_evaluate,
)
from keras_bert_impl.metrics.squad_metrics import f1_score_v1

pytestmark = pytest.mark.backend_independent


def _dataset(questions):
    """SQuAD JSON with one article; `questions` = [(id, [gold texts])]."""
    qas = [
        {
            "id": qid,
            "question": "?",
            "answers": [{"text": t, "answer_start": 0} for t in golds],
            "is_impossible": not golds,
        }
        for qid, golds in questions
    ]
    return {"version": "test", "data": [{"title": "t", "paragraphs": [{"context": "ctx", "qas": qas}]}]}


@pytest.mark.parametrize(
    "text, expected",
    [
        ("The Cat", "cat"),
        ("an apple", "apple"),
        ("theater", "theater"),  # articles only as whole words
        ("Banana and the band", "banana and band"),
        ("A-B", "ab"),  # punctuation removed before articles: "a-b" -> "ab"
        ("a, b", "b"),  # "a b" -> article "a" removed
        ("Hello,  world!\n", "hello world"),
        ("A.I.", "ai"),
        ("  ", ""),
        ("“quoted”", "“quoted”"),  # only string.punctuation (ASCII) is removed
    ],
)
def test_normalize_answer(text, expected):
    assert normalize_answer(text) == expected


def test_v1_per_answer_scores():
    assert f1_score_v1("Santa Clara", "Santa Clara, California") == pytest.approx(0.8)
    assert f1_score_v1("", "") == 0  # v1.1: no common token -> 0, even for two empty answers
    assert compute_f1("", "") == 1  # v2.0: both empty -> 1
    assert compute_f1("the", "") == 1  # "the" normalises to no token
    assert compute_f1("Broncos", "") == 0
    assert compute_exact("the Broncos", "Broncos!") == 1
    # Repeated tokens count with multiplicity: common = min counts.
    assert compute_f1("a b b c", "b b b") == pytest.approx(2 * (2 / 3) * (2 / 3) / (4 / 3))


def test_squad_v1_evaluate_hand_checked():
    data = _dataset(
        [
            ("q1", ["The Eiffel Tower"]),
            ("q2", ["Denver Broncos", "Broncos"]),  # max over golds comes from the 2nd
            ("q3", ["Santa Clara, California"]),
            ("q4", ["1990"]),
            ("q5", ["Paris"]),  # unanswered: 0, still counted
            ("q6", ["a theater"]),
            ("q7", ["the theatre district"]),
        ]
    )
    predictions = {
        "q1": "eiffel tower.",
        "q2": "the Broncos",
        "q3": "Santa Clara",
        "q4": "",
        "q6": "Theater",
        "q7": "theater district",
    }
    # EM: 1 + 1 + 0 + 0 + 0 + 1 + 0 = 3; F1: 1 + 1 + 0.8 + 0 + 0 + 1 + 0.5 = 4.3 (of 7).
    result = squad_v1_evaluate(data, predictions)
    assert result == {"exact_match": pytest.approx(300 / 7), "f1": pytest.approx(430 / 7)}
    # Taking the "data" list directly gives the same.
    assert squad_v1_evaluate(data["data"], predictions) == result


# v2.0 case. h4's gold answers all normalise to "" so its only gold is "" while it still counts
# as has-answer (the official script uses bool(qa["answers"])).
V2_QUESTIONS = [
    ("h1", ["Denver Broncos", "the Denver Broncos"]),
    ("h2", ["Carolina Panthers"]),
    ("h3", ["Santa Clara, California"]),
    ("h4", ["The", "a"]),
    ("n1", []),
    ("n2", []),
]
V2_PREDICTIONS = {"h1": "Denver Broncos", "h2": "Panthers", "h3": "", "h4": "", "n1": "", "n2": "Levi's Stadium"}
# raw exact: h1 1, h2 0, h3 0, h4 1, n1 1, n2 0; raw f1: h1 1, h2 2/3, h3 0, h4 1, n1 1, n2 0.
V2_NA_PROBS = {"h1": 0.1, "h4": 0.2, "h2": 0.25, "n2": 0.7, "n1": 0.8, "h3": 0.9}


def test_v2_raw_scores_and_has_ans():
    data = _dataset(V2_QUESTIONS)
    exact, f1 = get_raw_scores(data["data"], V2_PREDICTIONS)
    assert exact == {"h1": 1, "h2": 0, "h3": 0, "h4": 1, "n1": 1, "n2": 0}
    assert f1 == {"h1": 1, "h2": pytest.approx(2 / 3), "h3": 0, "h4": 1, "n1": 1, "n2": 0}
    assert make_qid_to_has_ans(data) == {"h1": True, "h2": True, "h3": True, "h4": True, "n1": False, "n2": False}


def test_squad_v2_without_na_probs():
    result = squad_v2_evaluate(_dataset(V2_QUESTIONS), V2_PREDICTIONS)
    assert result == {
        "exact": pytest.approx(300 / 6),
        "f1": pytest.approx(100 * (11 / 3) / 6),
        "total": 6,
        "HasAns_exact": pytest.approx(50.0),
        "HasAns_f1": pytest.approx(100 * (8 / 3) / 4),
        "HasAns_total": 4,
        "NoAns_exact": pytest.approx(50.0),
        "NoAns_f1": pytest.approx(50.0),
        "NoAns_total": 2,
    }


def test_squad_v2_with_threshold_and_best_threshold_search():
    result = squad_v2_evaluate(_dataset(V2_QUESTIONS), V2_PREDICTIONS, na_probs=V2_NA_PROBS, na_prob_thresh=0.5)
    # na_prob > 0.5: n2 (no answer -> 1.0), n1 (-> 1.0), h3 (has answer -> 0.0).
    # exact: 1, 0, 0, 1, 1, 1 -> 4/6; f1: 1, 2/3, 0, 1, 1, 1 -> (14/3)/6.
    # Best threshold (start at 2 no-answer questions, ascending na_prob):
    #   exact: h1 +1 -> 3, h4 +1 -> 4 (best, 0.2), h2 +0, n2 -1 (non-empty pred), n1 0, h3 0.
    #   f1:    h1 -> 3, h4 -> 4, h2 +2/3 -> 14/3 (best, 0.25), n2 -> 11/3, n1, h3 unchanged.
    assert result == {
        "exact": pytest.approx(400 / 6),
        "f1": pytest.approx(100 * (14 / 3) / 6),
        "total": 6,
        "HasAns_exact": pytest.approx(50.0),
        "HasAns_f1": pytest.approx(100 * (8 / 3) / 4),
        "HasAns_total": 4,
        "NoAns_exact": pytest.approx(100.0),
        "NoAns_f1": pytest.approx(100.0),
        "NoAns_total": 2,
        "best_exact": pytest.approx(400 / 6),
        "best_exact_thresh": 0.2,
        "best_f1": pytest.approx(100 * (14 / 3) / 6),
        "best_f1_thresh": 0.25,
    }
    # Default na_prob_thresh = 1.0: no probability exceeds it, so the raw scores are averaged,
    # while the best-threshold search is unchanged.
    default = squad_v2_evaluate(_dataset(V2_QUESTIONS), V2_PREDICTIONS, na_probs=V2_NA_PROBS)
    assert default["exact"] == pytest.approx(50.0) and default["f1"] == pytest.approx(100 * (11 / 3) / 6)
    assert default["best_f1_thresh"] == 0.25


def test_threshold_helpers_directly():
    has_ans = {"a": True, "b": False, "c": True}
    scores = {"a": 0.5, "b": 0, "c": 1}
    assert apply_no_ans_threshold(scores, {"a": 2.0, "b": 3.0, "c": -1.0}, has_ans, 1.0) == {
        "a": 0.0,
        "b": 1.0,
        "c": 1,
    }
    # Null odds (unbounded) work as na_probs; no improvement over "all no-answer" keeps 0.0.
    preds = {"a": "x", "b": "y", "c": "z"}
    assert find_best_thresh(preds, {"a": 0, "b": 0, "c": 0}, {"a": -2.0, "b": -1.0, "c": 5.0}, has_ans) == (
        pytest.approx(100 / 3),
        0.0,
    )
    # Start 1 (b); a: +0.5 -> 1.5 (best, -2.0); b: non-empty pred -> 0.5; c: +1 -> 1.5, which
    # only ties: the strict ">" keeps the first threshold.
    assert find_best_thresh(preds, scores, {"a": -2.0, "b": -1.0, "c": 5.0}, has_ans) == (
        pytest.approx(100 * 1.5 / 3),
        -2.0,
    )


def test_missing_predictions():
    data = _dataset([("h1", ["Paris"]), ("n1", []), ("h2", ["Rome"])])
    # v2.0 skips questions without prediction in every total.
    result = squad_v2_evaluate(data, {"h1": "paris", "n1": "Lyon"})
    assert (result["total"], result["exact"], result["HasAns_total"], result["NoAns_exact"]) == (2, 50.0, 1, 0.0)
    # v1.1 counts them as 0.
    assert squad_v1_evaluate(_dataset([("h1", ["Paris"]), ("h2", ["Rome"])]), {"h1": "Paris"})["exact_match"] == 50.0
