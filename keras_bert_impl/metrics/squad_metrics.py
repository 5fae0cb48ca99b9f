"""The official SQuAD v1.1 and v2.0 evaluation scripts' logic, as functions.

`squad_v1_evaluate` reproduces `evaluate-v1.1.py` and `squad_v2_evaluate` reproduces
`evaluate-v2.0.py` (including the no-answer threshold and the best-threshold search).

Both take the standard SQuAD JSON structure:
`{"data": [{"paragraphs": [{"context": ..., "qas": [{"id", "question", "answers": [{"text",
"answer_start"}], "is_impossible"}]}]}]}`, or directly its `"data"` list, and a dict of
predictions `{question_id: answer_text}` (`""` means "no answer" in v2.0).
"""

import collections
import re
import string

# The metrics a span QA run scores its answers by (run_squad.py --eval_metric): "auto" is CMRC 2018's for a
# mostly Chinese dev set (`cmrc2018_metrics.mostly_chinese`), else SQuAD's.
EVAL_METRICS = ("auto", "squad", "cmrc2018")
_PUNCTUATION = set(string.punctuation)
_ARTICLES = re.compile(r"\b(a|an|the)\b", re.UNICODE)


def normalize_answer(s):
    """Lower-case, remove punctuation, remove the articles a/an/the, and collapse whitespace.

    Args:
        s: Answer text.

    Returns:
        The normalised string.

    Examples:

    >>> normalize_answer("The  Quick, brown fox!")
    'quick brown fox'
    """
    text = s.lower()
    text = "".join(ch for ch in text if ch not in _PUNCTUATION)
    text = _ARTICLES.sub(" ", text)
    return " ".join(text.split())


def get_tokens(s):
    """Tokens of the normalised answer (`[]` for an empty answer).

    Args:
        s: Answer text.

    Returns:
        list of str.

    Examples:

    >>> get_tokens("An apple, a day.")
    ['apple', 'day']
    """
    if not s:
        return []
    return normalize_answer(s).split()


def compute_exact(a_gold, a_pred):
    """1 if the normalised answers are equal, else 0 (v2.0 `compute_exact`).

    Args:
        a_gold: Gold answer text.
        a_pred: Predicted answer text.

    Returns:
        int 0 or 1.

    Examples:

    >>> compute_exact("the Eiffel Tower", "Eiffel tower.")
    1
    """
    return int(normalize_answer(a_gold) == normalize_answer(a_pred))


def compute_f1(a_gold, a_pred):
    """Token-overlap F1 of two answers (v2.0 `compute_f1`).

    If either answer normalises to no tokens, the F1 is 1 when both are empty and 0 otherwise.

    Args:
        a_gold: Gold answer text.
        a_pred: Predicted answer text.

    Returns:
        float in [0, 1].

    Examples:

    >>> round(compute_f1("Denver Broncos", "the Broncos of Denver"), 4)
    0.8
    >>> compute_f1("", ""), compute_f1("", "Denver")
    (1, 0)
    """
    gold_toks = get_tokens(a_gold)
    pred_toks = get_tokens(a_pred)
    if len(gold_toks) == 0 or len(pred_toks) == 0:
        # If either is no-answer, then F1 is 1 if they agree, 0 otherwise.
        return int(gold_toks == pred_toks)
    return _token_f1(pred_toks, gold_toks)


def _token_f1(prediction_tokens, ground_truth_tokens):
    """F1 of the common tokens (a multiset intersection) of two token lists; 0 when there is none."""
    common = collections.Counter(prediction_tokens) & collections.Counter(ground_truth_tokens)
    num_same = sum(common.values())
    if num_same == 0:
        return 0
    precision = 1.0 * num_same / len(prediction_tokens)
    recall = 1.0 * num_same / len(ground_truth_tokens)
    return (2 * precision * recall) / (precision + recall)


def f1_score_v1(prediction, ground_truth):
    """v1.1 `f1_score`: token F1, 0 when there is no common token (also for empty answers).

    Args:
        prediction: Predicted answer text.
        ground_truth: Gold answer text.

    Returns:
        float in [0, 1].

    Examples:

    >>> f1_score_v1("", "")
    0
    >>> round(f1_score_v1("a cat sat", "the cat"), 4)
    0.6667
    """
    return _token_f1(normalize_answer(prediction).split(), normalize_answer(ground_truth).split())


def exact_match_score_v1(prediction, ground_truth):
    """v1.1 `exact_match_score`: whether the normalised `prediction` and `ground_truth` texts are equal (bool).

    >>> exact_match_score_v1("An Apple", "apple")
    True
    """
    return normalize_answer(prediction) == normalize_answer(ground_truth)


def _articles(dataset):
    if isinstance(dataset, dict):
        if "data" not in dataset:
            raise ValueError('A SQuAD dataset dict needs a "data" key.')
        return dataset["data"]
    return dataset


def _questions(dataset):
    for article in _articles(dataset):
        for paragraph in article["paragraphs"]:
            for qa in paragraph["qas"]:
                yield qa


def squad_v1_evaluate(dataset_json_data, predictions):
    """SQuAD v1.1 exact match and F1 (percentages), as `evaluate-v1.1.py`.

    For each question the score is the maximum over its gold answers; an unanswered question
    (id missing from `predictions`) scores 0 and still counts in the total.

    Args:
        dataset_json_data: The SQuAD JSON dict, or its `"data"` list.
        predictions: dict `{question_id: predicted_text}`.

    Returns:
        `{"exact_match": float, "f1": float}` in percent.

    Examples:

    >>> data = {"data": [{"paragraphs": [{"context": "x", "qas": [
    ...     {"id": "q1", "question": "?", "answers": [{"text": "the cat", "answer_start": 0}]},
    ...     {"id": "q2", "question": "?", "answers": [{"text": "a big dog", "answer_start": 0}]}]}]}]}
    >>> squad_v1_evaluate(data, {"q1": "Cat!", "q2": "dog"})
    {'exact_match': 50.0, 'f1': 83.33333333333333}
    """
    f1 = exact_match = total = 0
    for qa in _questions(dataset_json_data):
        total += 1
        if qa["id"] not in predictions:
            continue
        ground_truths = [answer["text"] for answer in qa["answers"]]
        prediction = predictions[qa["id"]]
        exact_match += max(exact_match_score_v1(prediction, gt) for gt in ground_truths)
        f1 += max(f1_score_v1(prediction, gt) for gt in ground_truths)
    if total == 0:
        raise ValueError("The dataset has no questions.")
    return {"exact_match": 100.0 * exact_match / total, "f1": 100.0 * f1 / total}


def make_qid_to_has_ans(dataset):
    """Map each question id to whether it has gold answers (`bool(qa["answers"])`).

    Args:
        dataset: The SQuAD JSON dict, or its `"data"` list.

    Returns:
        dict `{question_id: bool}`.

    Examples:

    >>> make_qid_to_has_ans([{"paragraphs": [{"qas": [{"id": "q", "answers": []}]}]}])
    {'q': False}
    """
    return {qa["id"]: bool(qa["answers"]) for qa in _questions(dataset)}


def get_raw_scores(dataset, preds):
    """Per-question exact and F1 scores before any no-answer threshold (v2.0).

    Gold answers that normalise to "" are dropped; a question without gold answers has the
    single gold answer "". Questions missing from `preds` are skipped.

    Args:
        dataset: The SQuAD JSON dict, or its `"data"` list.
        preds: dict `{question_id: predicted_text}`.

    Returns:
        `(exact_scores, f1_scores)`: dicts `{question_id: score}`.

    Examples:

    >>> data = [{"paragraphs": [{"qas": [{"id": "q", "answers": []}]}]}]
    >>> get_raw_scores(data, {"q": ""})
    ({'q': 1}, {'q': 1})
    """
    exact_scores = {}
    f1_scores = {}
    for qa in _questions(dataset):
        qid = qa["id"]
        gold_answers = [a["text"] for a in qa["answers"] if normalize_answer(a["text"])]
        if not gold_answers:
            # For unanswerable questions, only correct answer is empty string.
            gold_answers = [""]
        if qid not in preds:
            continue
        a_pred = preds[qid]
        exact_scores[qid] = max(compute_exact(a, a_pred) for a in gold_answers)
        f1_scores[qid] = max(compute_f1(a, a_pred) for a in gold_answers)
    return exact_scores, f1_scores


def apply_no_ans_threshold(scores, na_probs, qid_to_has_ans, na_prob_thresh):
    """Replace scores of questions predicted as unanswerable (`na_prob > thresh`).

    Such a question scores 1.0 if it really has no answer, else 0.0.

    Args:
        scores: dict `{question_id: score}`.
        na_probs: dict `{question_id: no-answer probability / null odds}`.
        qid_to_has_ans: dict `{question_id: bool}`.
        na_prob_thresh: Threshold; a question is "no answer" when its na_prob is strictly above.

    Returns:
        dict `{question_id: score}`.

    Examples:

    >>> apply_no_ans_threshold({"a": 1, "b": 0}, {"a": 0.9, "b": 0.9}, {"a": True, "b": False}, 0.5)
    {'a': 0.0, 'b': 1.0}
    """
    new_scores = {}
    for qid, s in scores.items():
        pred_na = na_probs[qid] > na_prob_thresh
        new_scores[qid] = float(not qid_to_has_ans[qid]) if pred_na else s
    return new_scores


def make_eval_dict(exact_scores, f1_scores, qid_list=None):
    """Average exact / F1 (percentages) over `qid_list` (all scored questions if None/empty).

    Args:
        exact_scores: dict `{question_id: score}`.
        f1_scores: dict `{question_id: score}`.
        qid_list: Optional question ids to average over.

    Returns:
        OrderedDict `{"exact", "f1", "total"}`.

    Examples:

    >>> dict(make_eval_dict({"a": 1, "b": 0}, {"a": 1, "b": 0.5}))
    {'exact': 50.0, 'f1': 75.0, 'total': 2}
    """
    if not qid_list:
        total = len(exact_scores)
        return collections.OrderedDict(
            [
                ("exact", 100.0 * sum(exact_scores.values()) / total),
                ("f1", 100.0 * sum(f1_scores.values()) / total),
                ("total", total),
            ]
        )
    total = len(qid_list)
    return collections.OrderedDict(
        [
            ("exact", 100.0 * sum(exact_scores[k] for k in qid_list) / total),
            ("f1", 100.0 * sum(f1_scores[k] for k in qid_list) / total),
            ("total", total),
        ]
    )


def find_best_thresh(preds, scores, na_probs, qid_to_has_ans):
    """Best achievable score over no-answer thresholds (v2.0 `find_best_thresh`).

    Starting from "every question predicted unanswerable" (score = number of no-answer
    questions), questions are switched to "answered" in increasing na_prob order; the best
    running total and the na_prob where it is reached are returned.

    Args:
        preds: dict `{question_id: predicted_text}`.
        scores: dict `{question_id: raw score}`.
        na_probs: dict `{question_id: na_prob}`.
        qid_to_has_ans: dict `{question_id: bool}`.

    Returns:
        `(best_score_percent, best_threshold)`.

    Examples:

    >>> find_best_thresh({"a": "x", "b": "y"}, {"a": 1, "b": 0}, {"a": 0.1, "b": 0.8},
    ...                  {"a": True, "b": False})
    (100.0, 0.1)
    """
    num_no_ans = sum(1 for k in qid_to_has_ans if not qid_to_has_ans[k])
    cur_score = num_no_ans
    best_score = cur_score
    best_thresh = 0.0
    qid_list = sorted(na_probs, key=lambda k: na_probs[k])
    for qid in qid_list:
        if qid not in scores:
            continue
        if qid_to_has_ans[qid]:
            diff = scores[qid]
        else:
            diff = -1 if preds[qid] else 0
        cur_score += diff
        if cur_score > best_score:
            best_score = cur_score
            best_thresh = na_probs[qid]
    return 100.0 * best_score / len(scores), best_thresh


def squad_v2_evaluate(dataset, predictions, na_probs=None, na_prob_thresh=1.0):
    """SQuAD v2.0 evaluation, as `evaluate-v2.0.py`.

    Args:
        dataset: The SQuAD JSON dict, or its `"data"` list. A question is answerable when its
            `"answers"` list is non-empty (what the official script checks).
        predictions: dict `{question_id: predicted_text}`; `""` predicts "no answer".
            Questions missing here are skipped (not counted in totals), as in the official
            script.
        na_probs: Optional dict `{question_id: no-answer probability or null odds}`. Without
            it every na_prob is 0 (no threshold applied, no best-threshold search).
        na_prob_thresh: Questions with na_prob strictly above it are predicted unanswerable.

    Returns:
        dict with "exact", "f1", "total"; "HasAns_exact", "HasAns_f1", "HasAns_total" and
        "NoAns_exact", "NoAns_f1", "NoAns_total" when such questions exist; and, when
        `na_probs` is given, "best_exact", "best_exact_thresh", "best_f1", "best_f1_thresh".
        Scores are percentages.

    Examples:

    >>> data = {"data": [{"paragraphs": [{"context": "x", "qas": [
    ...     {"id": "q1", "question": "?", "answers": [{"text": "Paris", "answer_start": 0}]},
    ...     {"id": "q2", "question": "?", "answers": [], "is_impossible": True}]}]}]}
    >>> result = squad_v2_evaluate(data, {"q1": "paris", "q2": ""})
    >>> result["exact"], result["HasAns_exact"], result["NoAns_f1"]
    (100.0, 100.0, 100.0)
    """
    articles = _articles(dataset)
    has_na_probs = na_probs is not None
    if not has_na_probs:
        na_probs = {k: 0.0 for k in predictions}
    qid_to_has_ans = make_qid_to_has_ans(articles)
    exact_raw, f1_raw = get_raw_scores(articles, predictions)
    if not exact_raw:
        raise ValueError("No question of the dataset has a prediction.")
    exact_thresh = apply_no_ans_threshold(exact_raw, na_probs, qid_to_has_ans, na_prob_thresh)
    f1_thresh = apply_no_ans_threshold(f1_raw, na_probs, qid_to_has_ans, na_prob_thresh)
    out_eval = make_eval_dict(exact_thresh, f1_thresh)
    # The official script averages over all (has / no)-answer ids and fails with a KeyError
    # when one has no prediction; here the splits average over the predicted ones.
    has_ans_qids = [k for k, v in qid_to_has_ans.items() if v and k in exact_thresh]
    no_ans_qids = [k for k, v in qid_to_has_ans.items() if not v and k in exact_thresh]
    if has_ans_qids:
        for key, value in make_eval_dict(exact_thresh, f1_thresh, qid_list=has_ans_qids).items():
            out_eval[f"HasAns_{key}"] = value
    if no_ans_qids:
        for key, value in make_eval_dict(exact_thresh, f1_thresh, qid_list=no_ans_qids).items():
            out_eval[f"NoAns_{key}"] = value
    if has_na_probs:
        best_exact, exact_best_thresh = find_best_thresh(predictions, exact_raw, na_probs, qid_to_has_ans)
        best_f1, f1_best_thresh = find_best_thresh(predictions, f1_raw, na_probs, qid_to_has_ans)
        out_eval["best_exact"] = best_exact
        out_eval["best_exact_thresh"] = exact_best_thresh
        out_eval["best_f1"] = best_f1
        out_eval["best_f1_thresh"] = f1_best_thresh
    return dict(out_eval)
