"""Post-processing on hand-set logits: the n-best list, validity rules, max_answer_length, get_final_text,
the v2.0 null rule and threshold, the all-null case, multi-window examples, and the written files."""

import json
import math
import os

import numpy as np
import pytest

from keras_bert_impl.data.squad_data import squad_examples_from_json
from keras_bert_impl.data.squad_features import convert_examples_to_features
from keras_bert_impl.data.squad_postprocessing import (
    RawResult,
    compute_predictions,
    get_final_text,
    raw_results,
    write_predictions,
)
from keras_bert_impl.tokenizers.bert_tokenizer import BertTokenizer

CONTEXT = "The leader was John Smith (1895-1943). Steve Smith's dog ran."
NUMBERS = ("one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen "
           "seventeen eighteen nineteen twenty")
SEQ = 32


@pytest.fixture(scope="module")
def tokenizer(minilm_vocab_file):
    return BertTokenizer(minilm_vocab_file, do_lower_case=True)


def _setup(tokenizer, context, max_seq_length=SEQ, doc_stride=128):
    data = {"data": [{"paragraphs": [{"context": context, "qas": [{"id": "q", "question": "Who?", "answers": []}]}]}]}
    examples, _ = squad_examples_from_json(data, is_training=False)
    features = convert_examples_to_features(examples, tokenizer, max_seq_length, doc_stride, 64, is_training=False)
    return examples, features


@pytest.fixture(scope="module")
def leader(tokenizer):
    examples, features = _setup(tokenizer, CONTEXT)
    (feature,) = features
    assert feature.tokens == ["[CLS]", "who", "?", "[SEP]", "the", "leader", "was", "john", "smith", "(", "1895", "-",
                              "1943", ")", ".", "steve", "smith", "'", "s", "dog", "ran", ".", "[SEP]"]
    return examples, features


def _logits(**values):
    """[SEQ] logits, -5 everywhere except the given positions (p<index>=value)."""
    logits = np.full(SEQ, -5.0, "float32")
    for key, value in values.items():
        logits[int(key[1:])] = value
    return logits


def _predict(examples, features, start, end, **kwargs):
    return compute_predictions(examples, features, raw_results(features, [start], [end]), **kwargs)


def test_best_span_nbest_probabilities_and_validity(leader):
    examples, features = leader
    # Invalid starts with high logits: [CLS] (v1.1), the question ("?" at 2), padding (30), and an end
    # before its start (end 5 with start 7 would total 5 + 9 = 14).
    start = _logits(p0=20, p2=25, p30=30, p7=5, p10=3)
    end = _logits(p0=20, p2=25, p31=30, p8=4, p10=3, p5=9)
    result = _predict(examples, features, start, end)
    nbest = result.nbest["q"]
    assert result.predictions == {"q": "John Smith"}
    # 5 + 4, then the cross pair (john, 1895) 5 + 3, then 3 + 3, then "the leader" (-5 + 9, end 5 with start 4).
    assert [e["text"] for e in nbest[:4]] == ["John Smith", "John Smith (1895", "1895", "The leader"]
    assert (nbest[0]["start_logit"], nbest[0]["end_logit"]) == (5.0, 4.0)
    assert (nbest[1]["start_logit"], nbest[1]["end_logit"]) == (5.0, 3.0)
    assert (nbest[2]["start_logit"], nbest[2]["end_logit"]) == (3.0, 3.0)
    assert (nbest[3]["start_logit"], nbest[3]["end_logit"]) == (-5.0, 9.0)
    assert len(nbest) == 20 and len({e["text"] for e in nbest}) == 20  # n_best_size distinct texts
    assert all(e["start_logit"] not in (20.0, 25.0, 30.0) and e["end_logit"] not in (20.0, 25.0, 30.0) for e in nbest)
    totals = np.array([e["start_logit"] + e["end_logit"] for e in nbest])
    assert np.all(np.diff(totals) <= 0)
    np.testing.assert_allclose([e["probability"] for e in nbest], np.exp(totals - totals.max()) / np.exp(totals - totals.max()).sum(), rtol=1e-9)
    assert math.isclose(sum(e["probability"] for e in nbest), 1.0)
    # Character spans in the context, for serving.
    assert result.answer_char_spans["q"] == (CONTEXT.index("John Smith"), CONTEXT.index("John Smith") + 10)
    assert (nbest[2]["start_char"], nbest[2]["end_char"]) == (CONTEXT.index("1895"), CONTEXT.index("1895") + 4)
    # n_best_size limits both the indexes tried and the list.
    assert len(_predict(examples, features, start, end, n_best_size=3).nbest["q"]) <= 3


def test_max_answer_length(leader):
    examples, features = leader
    # Totals: (4, 21) = 12, 18 tokens; (7, 21) = 11, 15 tokens; (4, 8) = 10, 5 tokens; (7, 8) = 9, 2 tokens.
    start, end = _logits(p4=6, p7=5), _logits(p21=6, p8=4)
    whole = _predict(examples, features, start, end, max_answer_length=18)
    assert whole.predictions["q"] == CONTEXT and whole.answer_char_spans["q"] == (0, len(CONTEXT))
    assert _predict(examples, features, start, end, max_answer_length=17).predictions["q"] == CONTEXT[CONTEXT.index("John"):]
    assert _predict(examples, features, start, end, max_answer_length=14).predictions["q"] == "The leader was John Smith"
    assert _predict(examples, features, start, end, max_answer_length=4).predictions["q"] == "John Smith"


def test_get_final_text_cases():
    assert get_final_text("steve smith", "Steve Smith's", do_lower_case=True) == "Steve Smith"
    assert get_final_text("1895", "(1895-1943).", do_lower_case=True) == "1895"
    assert get_final_text("1895 - 1943", "(1895-1943).", do_lower_case=True) == "1895-1943"
    assert get_final_text("jose", "José,", do_lower_case=True) == "José"  # accents stripped, same length
    assert get_final_text("Smith", "Mr. Smith's", do_lower_case=False) == "Smith"
    # Failures return the whole original text: not found (case-sensitive when cased) ...
    assert get_final_text("smith", "Mr. Smith's", do_lower_case=False) == "Mr. Smith's"
    # ... and no character alignment (the zero-width space is dropped by the BasicTokenizer).
    assert get_final_text("ab", "a\u200bb!", do_lower_case=True) == "a\u200bb!"


def test_version_2_null_score_and_threshold(leader):
    examples, features = leader
    start, end = _logits(p0=2, p7=5), _logits(p0=1, p8=4)
    answered = _predict(examples, features, start, end, version_2_with_negative=True)
    assert answered.predictions["q"] == "John Smith"
    assert answered.null_odds["q"] == pytest.approx(3 - 9)  # score_null - best non-null
    assert "" in [e["text"] for e in answered.nbest["q"]]  # the null answer is always in the v2.0 n-best
    null_entry = next(e for e in answered.nbest["q"] if e["text"] == "")
    assert (null_entry["start_logit"], null_entry["end_logit"]) == (2.0, 1.0)

    start, end = _logits(p0=8, p7=5), _logits(p0=7, p8=4)
    result = _predict(examples, features, start, end, version_2_with_negative=True)
    assert result.null_odds["q"] == pytest.approx(6.0)
    assert result.predictions["q"] == "" and result.answer_char_spans["q"] is None
    assert result.nbest["q"][0]["text"] == ""  # the null answer tops the n-best list
    raised = _predict(examples, features, start, end, version_2_with_negative=True, null_score_diff_threshold=6.5)
    assert raised.predictions["q"] == "John Smith"
    equal = _predict(examples, features, start, end, version_2_with_negative=True, null_score_diff_threshold=6.0)
    assert equal.predictions["q"] == "John Smith"  # only a difference strictly above the threshold means null


def test_all_null_candidates_do_not_crash(leader):
    examples, features = leader
    # With n_best_size 1 the only start and end index is 0 ([CLS]): no valid non-null span at all.
    start, end = _logits(p0=5), _logits(p0=5)
    result = _predict(examples, features, start, end, n_best_size=1, version_2_with_negative=True)
    assert [e["text"] for e in result.nbest["q"]] == ["empty", ""]
    assert result.predictions["q"] == "" and result.null_odds["q"] == pytest.approx(10.0)
    low = _predict(examples, features, _logits(p0=-1), _logits(p0=-1), n_best_size=1, version_2_with_negative=True)
    assert low.predictions["q"] == "empty" and low.null_odds["q"] == pytest.approx(-2.0)
    v1 = _predict(examples, features, start, end, n_best_size=1)
    assert v1.predictions["q"] == "empty" and len(v1.nbest["q"]) == 1


def test_multiple_windows_use_max_context_and_the_minimum_null_score(tokenizer):
    examples, features = _setup(tokenizer, NUMBERS, max_seq_length=14, doc_stride=4)  # 4 windows, see test_squad_data
    assert len(features) == 4
    starts = [np.full(14, -10.0, "float32") for _ in features]
    ends = [np.full(14, -10.0, "float32") for _ in features]
    for row, (cls_start, cls_end) in enumerate([(1, 1), (0.5, 0), (3, 3), (2, -1)]):
        starts[row][0], ends[row][0] = cls_start, cls_end
    # "eleven" (doc token 10) has its max context in window 1 (position 10), not window 2 (position 6):
    starts[1][10], ends[1][10] = 3, 3
    starts[2][6], ends[2][6] = 10, 10  # higher, but window 2 is not the max context of "eleven"
    starts[2][7], ends[2][7] = 2, 2  # "twelve": max context in window 2
    results = [RawResult(f.unique_id, s, e) for f, s, e in zip(features, starts, ends)]
    result = compute_predictions(examples, features, results[::-1], version_2_with_negative=True)  # any order
    nbest = result.nbest["q"]
    assert [e["text"] for e in nbest[:2]] == ["eleven", "twelve"]
    assert nbest[0]["start_logit"] == 3.0
    assert result.predictions["q"] == "eleven"
    null_entry = next(e for e in nbest if e["text"] == "")
    assert (null_entry["start_logit"], null_entry["end_logit"]) == (0.5, 0.0)  # min over windows of start+end at [CLS]
    assert result.null_odds["q"] == pytest.approx(0.5 - 6.0)
    assert result.answer_char_spans["q"] == (NUMBERS.index("eleven"), NUMBERS.index("eleven") + 6)


def test_written_files(leader, tmp_path):
    examples, features = leader
    start, end = _logits(p0=2, p7=5), _logits(p0=1, p8=4)
    result = _predict(examples, features, start, end, version_2_with_negative=True)
    paths = write_predictions(str(tmp_path), result)
    assert sorted(os.path.basename(p) for p in paths) == ["nbest_predictions.json", "null_odds.json", "predictions.json"]
    assert sorted(os.listdir(tmp_path)) == ["nbest_predictions.json", "null_odds.json", "predictions.json"]  # no .tmp
    with open(tmp_path / "predictions.json") as f:
        assert json.load(f) == {"q": "John Smith"}
    with open(tmp_path / "null_odds.json") as f:
        assert json.load(f) == {"q": pytest.approx(-6.0)}
    with open(tmp_path / "nbest_predictions.json") as f:
        nbest = json.load(f)["q"]
    assert nbest[0]["text"] == "John Smith" and set(nbest[0]) == {"text", "probability", "start_logit", "end_logit",
                                                                  "start_char", "end_char"}
    v1 = _predict(examples, features, start, end)
    assert [os.path.basename(p) for p in write_predictions(str(tmp_path / "v1"), v1)] == [
        "predictions.json", "nbest_predictions.json"]
