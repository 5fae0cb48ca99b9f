"""The CMRC 2018 evaluation against hand-computed character-level values: the longest common contiguous run of
segments (CJK ideographs one by one, other runs as words), its punctuation removed for F1 and exact match,
lower-casing, the maximum over gold answers, and the dataset's percentages with unanswered questions."""

import pytest

from keras_bert_impl.metrics.cmrc2018_metrics import (
    cmrc2018_evaluate,
    exact_match_score,
    f1_score,
    mixed_segmentation,
    mostly_chinese,
    question_scores,
)

pytestmark = pytest.mark.backend_independent

# (gold answer, prediction, F1 computed by hand, EM)
CASES = [
    # partial overlap: 2 common characters, precision 2/2, recall 2/3
    ("杭州市", "杭州", 2 * 1 * (2 / 3) / (1 + 2 / 3), 0),
    # punctuation (the official list: 《》，。“” ...) is removed for both scores
    ("《红楼梦》", "红楼梦。", 1.0, 1),
    ("“张三”，", "张三", 1.0, 1),
    # the common run must be contiguous: 北大学 shares only 大学 with 北京大学 (precision 2/3, recall 2/4)
    ("北京大学", "北大学", 2 * (2 / 3) * (2 / 4) / (2 / 3 + 2 / 4), 0),
    ("张三和李四", "张三李四", 2 * (2 / 4) * (2 / 5) / (2 / 4 + 2 / 5), 0),
    # non-CJK runs are words: 1949 is one segment of two
    ("1949年", "1949", 2 * 1 * (1 / 2) / (1 + 1 / 2), 0),
    ("iPhone 6s手机", "iphone 6s", 2 * 1 * (2 / 4) / (1 + 2 / 4), 0),
    # lower-cased and stripped
    (" NBA", "nba ", 1.0, 1),
    # nothing in common
    ("南京", "上海", 0.0, 0),
    # one common character: precision 1/4, recall 1/2
    ("南京", "北京大学", 2 * (1 / 4) * (1 / 2) / (1 / 4 + 1 / 2), 0),
    # ASCII punctuation of the official list (- : / ...) is removed; "…" is not on it
    ("1949-10-01", "19491001", 1.0, 1),
    ("好…", "好", 2 * 1 * (1 / 2) / (1 + 1 / 2), 0),
]


@pytest.mark.parametrize("answer,prediction,f1,em", CASES)
def test_character_f1_and_exact_match_equal_the_hand_computed_values(answer, prediction, f1, em):
    assert f1_score(answer, prediction) == pytest.approx(f1)
    assert exact_match_score(answer, prediction) == em


def test_segments_are_cjk_characters_and_words_of_the_runs_between_them():
    assert mixed_segmentation("他在2019年买了iPhone 6s，价格3.5万。") == [
        "他", "在", "2019", "年", "买", "了", "iphone", "6s", "，", "价", "格", "3.5", "万", "。"]
    assert mixed_segmentation("他在2019年买了iPhone 6s，价格3.5万。", remove_punctuation=True)[-4:] == [
        "价", "格", "3.5", "万"]


def test_a_question_scores_its_best_answer_and_the_dataset_counts_unanswered_questions():
    assert question_scores(["杭州市", "杭州"], "杭州") == (1.0, 1)
    assert question_scores(["杭州市", "浙江杭州"], "杭州") == (pytest.approx(0.8), 0)
    assert question_scores([], "") == (1.0, 1) and question_scores([], "杭州") == (0.0, 0)
    data = {"data": [{"paragraphs": [{"context": "...", "qas": [
        {"id": "a", "answers": [{"text": "杭州市", "answer_start": 0}, {"text": "杭州", "answer_start": 0}]},
        {"id": "b", "answers": [{"text": "北京大学", "answer_start": 0}]},
        {"id": "c", "answers": [{"text": "《红楼梦》", "answer_start": 0}]},
        {"id": "d", "answers": [{"text": "张三", "answer_start": 0}]},
    ]}]}]}
    results = cmrc2018_evaluate(data, {"a": "杭州", "b": "北大学", "c": "红楼梦"})
    f1 = 100 * (1 + 4 / 7 + 1 + 0) / 4
    em = 100 * (1 + 0 + 1 + 0) / 4
    assert results == {"f1": pytest.approx(f1), "em": em, "average": pytest.approx((f1 + em) / 2), "total": 4,
                       "skip": 1}


def test_chinese_contexts_are_told_from_english_ones():
    assert mostly_chinese(["陈伟于1949年出生在杭州。", "张三认识李四。"])
    assert not mostly_chinese(["Ann was born in Hangzhou (杭州) in 1949."])
    assert not mostly_chinese([])
