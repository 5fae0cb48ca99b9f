"""The CMRC 2018 evaluation (the official cmrc2018_evaluate.py of ymcui/cmrc2018): character-level F1 and
exact match for Chinese extractive QA in the SQuAD format (CMRC2018, DRCD), as functions.

The official script's rules:

* A text is lower-cased and stripped, then cut into segments (`mixed_segmentation`): every CJK ideograph
  (U+4E00 to U+9FA5) and every character of `PUNCTUATION` is a segment of its own; the runs of other
  characters between them are cut into words. For F1 the `PUNCTUATION` characters are left out.
* F1 (`f1_score`): the longest common *contiguous* run of segments of the answer and the prediction;
  precision = its length / the prediction's segments, recall = its length / the answer's segments, F1 their
  harmonic mean (0 without a common segment); the maximum over the gold answers.
* Exact match (`exact_match_score`): the two texts lower-cased, stripped and without `PUNCTUATION`
  characters are equal, for some gold answer.
* Over a dataset (`cmrc2018_evaluate`): F1 and EM in percent over every question (a question without a
  prediction scores 0 and is counted in `skip`), and their mean `average`.

Where this code differs from the official script:

* The runs of non-CJK characters are cut by `_split_run` (words of letters, digits and underscores,
  numbers with their decimal points kept whole, every other non-space character alone), the official
  script by NLTK's `word_tokenize`: they agree on Chinese text, numbers and plain words, and may differ
  on English contractions and abbreviations ("don't", "U.S.").
* A question without gold answers (SQuAD v2.0 data; the official script fails on one) scores 1 for an
  empty prediction and 0 otherwise, as SQuAD v2.0's evaluation scores it.
* "……" is listed among the official punctuation but the script compares one character at a time, so it
  never matches: "…" is not punctuation here either.

Examples:

>>> round(f1_score("杭州", "杭州市"), 4), exact_match_score("杭州", "杭州市")
(0.8, 0)
>>> exact_match_score("《红楼梦》", "红楼梦")
1
"""

import re

# The official script's punctuation (`sp_char`), without its "……", which never matches one character.
PUNCTUATION = frozenset("-:_*^/\\~`+=，。：？！“”；’《》·、「」（）－～『』")

_WORDS = re.compile(r"\d+(?:[.,]\d+)+|\w+|[^\w\s]")


def _is_cjk(char):
    """The official script's CJK test: U+4E00 to U+9FA5."""
    return "\u4e00" <= char <= "\u9fa5"


def _split_run(text):
    """The words of a run of non-CJK, non-punctuation characters (see the module docstring).

    >>> _split_run(" iPhone 6s costs 3.5 dollars!")
    ['iPhone', '6s', 'costs', '3.5', 'dollars', '!']
    """
    return _WORDS.findall(text)


def mixed_segmentation(text, remove_punctuation=False):
    """The segments of a text: lower-cased and stripped, each CJK ideograph and each `PUNCTUATION`
    character alone (left out with `remove_punctuation`), the runs between them cut into words.

    >>> mixed_segmentation("2019年 iPhone，杭州", remove_punctuation=True)
    ['2019', '年', 'iphone', '杭', '州']
    """
    segments, run = [], []
    for char in text.lower().strip():
        if remove_punctuation and char in PUNCTUATION:
            continue
        if _is_cjk(char) or char in PUNCTUATION:
            segments.extend(_split_run("".join(run)))
            run = []
            segments.append(char)
        else:
            run.append(char)
    segments.extend(_split_run("".join(run)))
    return segments


def strip_punctuation(text):
    """The text lower-cased and stripped, without its `PUNCTUATION` characters (what exact match compares).

    >>> strip_punctuation(" 《红楼梦》 ")
    '红楼梦'
    """
    return "".join(char for char in text.lower().strip() if char not in PUNCTUATION)


def longest_common_run(a, b):
    """The length of the longest common contiguous run of two sequences (the official `find_lcs`).

    >>> longest_common_run(list("北京大学"), list("北大学"))
    2
    """
    best = 0
    previous = [0] * (len(b) + 1)
    for x in a:
        current = [0] * (len(b) + 1)
        for j, y in enumerate(b):
            if x == y:
                current[j + 1] = previous[j] + 1
                best = max(best, current[j + 1])
        previous = current
    return best


def f1_score(answer, prediction):
    """Character-level F1 of one prediction against one gold answer (see the module docstring).

    >>> round(f1_score("北京大学", "北大学"), 4), round(f1_score("1949年", "1949"), 4)
    (0.5714, 0.6667)
    """
    answer_segments = mixed_segmentation(answer, remove_punctuation=True)
    prediction_segments = mixed_segmentation(prediction, remove_punctuation=True)
    common = longest_common_run(answer_segments, prediction_segments)
    if common == 0:
        return 0.0
    precision = common / len(prediction_segments)
    recall = common / len(answer_segments)
    return 2 * precision * recall / (precision + recall)


def exact_match_score(answer, prediction):
    """1 when the texts are equal once lower-cased, stripped and without punctuation, else 0."""
    return int(strip_punctuation(answer) == strip_punctuation(prediction))


def question_scores(answers, prediction):
    """(F1, EM) of a prediction against a question's gold answers (texts): the maximum over the answers;
    without answers, (1, 1) for an empty prediction and (0, 0) otherwise.

    >>> question_scores(["杭州市", "杭州"], "杭州"), question_scores([], "")
    ((1.0, 1), (1.0, 1))
    """
    if not answers:
        empty = int(not strip_punctuation(prediction))
        return float(empty), empty
    return (max(f1_score(answer, prediction) for answer in answers),
            max(exact_match_score(answer, prediction) for answer in answers))


def cmrc2018_evaluate(dataset, predictions):
    """The official CMRC 2018 evaluation of predictions on a SQuAD-format dataset.

    Args:
        dataset: the SQuAD JSON dict (`{"data": [{"paragraphs": [{"qas": [{"id", "answers"}]}]}]}`) or its
            "data" list.
        predictions: {question id: predicted text}.

    Returns:
        {"f1", "em", "average" (percentages), "total" (questions), "skip" (questions without a prediction,
        scored 0)}.

    Examples:

    >>> data = {"data": [{"paragraphs": [{"context": "陈伟出生在杭州市。", "qas": [
    ...     {"id": "q1", "answers": [{"text": "杭州市", "answer_start": 5}]},
    ...     {"id": "q2", "answers": [{"text": "陈伟", "answer_start": 0}]}]}]}]}
    >>> cmrc2018_evaluate(data, {"q1": "杭州"})
    {'f1': 40.0, 'em': 0.0, 'average': 20.0, 'total': 2, 'skip': 1}
    """
    articles = dataset["data"] if isinstance(dataset, dict) else dataset
    f1 = em = 0.0
    total = skip = 0
    for article in articles:
        for paragraph in article["paragraphs"]:
            for qa in paragraph["qas"]:
                total += 1
                if qa["id"] not in predictions:
                    skip += 1
                    continue
                f1_value, em_value = question_scores([a["text"] for a in qa.get("answers", [])],
                                                     predictions[qa["id"]])
                f1 += f1_value
                em += em_value
    if total == 0:
        raise ValueError("The dataset has no questions.")
    f1, em = 100.0 * f1 / total, 100.0 * em / total
    return {"f1": f1, "em": em, "average": (f1 + em) / 2, "total": total, "skip": skip}


def mostly_chinese(texts):
    """Whether CJK ideographs (U+4E00 to U+9FA5) are more than half of the non-whitespace characters of
    `texts` (CMRC2018 and DRCD contexts are; English ones are not).

    >>> mostly_chinese(["陈伟出生在杭州市。"]), mostly_chinese(["Ann was born in 杭州."])
    (True, False)
    """
    cjk = other = 0
    for text in texts:
        for char in text:
            if _is_cjk(char):
                cjk += 1
            elif not char.isspace():
                other += 1
    return cjk > other
