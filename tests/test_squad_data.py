"""SQuAD examples and features, hand-checked against the rules of the original run_squad.py; the
generated data/qa set."""

import importlib.util
import json
import os

import numpy as np
import pytest

from keras_bert_impl.data import squad_data
from keras_bert_impl.data.squad_data import SquadFormatError, squad_examples_from_json
from keras_bert_impl.data.squad_features import convert_examples_to_features, features_to_arrays, features_to_lists
from keras_bert_impl.tokenizers.packing import check_is_max_context, doc_spans_for
from keras_bert_impl.tokenizers.bert_tokenizer import BertTokenizer

pytestmark = pytest.mark.backend_independent

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
NUMBERS = ("one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen "
           "seventeen eighteen nineteen twenty")


@pytest.fixture(scope="module")
def tokenizer(minilm_vocab_file):
    return BertTokenizer(minilm_vocab_file, do_lower_case=True)


def _squad(context, qas):
    return {"version": "v2.0", "data": [{"title": "t", "paragraphs": [{"context": context, "qas": qas}]}]}


def _qa(qid, question, text=None, start=None, impossible=False):
    answers = [] if text is None else [{"text": text, "answer_start": start}]
    return {"id": qid, "question": question, "answers": answers, "is_impossible": impossible}


def test_whitespace_split_and_char_to_word_offset():
    doc_tokens, char_to_word, starts = squad_data.split_context(" Hi  there,\tyou\u202fall")
    assert doc_tokens == ["Hi", "there,", "you", "all"]  # U+202F is whitespace for the original
    assert starts == [1, 5, 12, 16]
    assert char_to_word == [-1, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3]


def test_tightest_answer_span_the_originals_1895_example(tokenizer):
    context = "The leader was John Smith (1895-1943)."
    data = _squad(context, [_qa("q1", "What year was John Smith born?", "1895", context.index("1895"))])
    examples, stats = squad_examples_from_json(data, is_training=True, version_2_with_negative=True)
    assert stats["num_misaligned_answers"] == 0
    (example,) = examples
    assert (example.start_position, example.end_position) == (5, 5)  # the doc token "(1895-1943)."
    (feature,) = convert_examples_to_features(examples, tokenizer, max_seq_length=32, doc_stride=8,
                                              max_query_length=16, is_training=True)
    # [CLS] what year was john smith born ? [SEP] the leader was john smith ( 1895 - 1943 ) . [SEP]
    assert feature.tokens[:10] == ["[CLS]", "what", "year", "was", "john", "smith", "born", "?", "[SEP]", "the"]
    assert feature.tokens[14:21] == ["(", "1895", "-", "1943", ")", ".", "[SEP]"]
    assert (feature.start_position, feature.end_position) == (15, 15)  # just "1895", not "( 1895 - 1943 ) ."
    assert feature.token_to_orig_map[15] == 5 and feature.token_to_orig_map[9] == 0
    assert feature.segment_ids[:9] == [0] * 9 and feature.segment_ids[9:21] == [1] * 12
    assert feature.segment_ids[21:] == [0] * 11 and feature.input_mask == [1] * 21 + [0] * 11
    assert feature.input_ids[21:] == [tokenizer.pad_token_id] * 11 and len(feature.input_ids) == 32
    assert feature.input_ids[0] == tokenizer.cls_token_id and feature.input_ids[8] == tokenizer.sep_token_id


def test_multi_piece_words_map_to_their_doc_token(tokenizer):
    context = "An unaffable Tiatraishur lived here."
    data = _squad(context, [_qa("q", "Who lived here?", "unaffable Tiatraishur", 3)])
    examples, _ = squad_examples_from_json(data, is_training=True)
    (feature,) = convert_examples_to_features(examples, tokenizer, 32, 8, 16, is_training=True)
    doc = feature.tokens[6:-1]  # after [CLS] who lived here ? [SEP]
    assert doc == ["an", "una", "##ffa", "##ble", "tia", "##tra", "##ish", "##ur", "lived", "here", "."]
    assert [feature.token_to_orig_map[6 + i] for i in range(len(doc))] == [0, 1, 1, 1, 2, 2, 2, 2, 3, 4, 4]
    assert (feature.start_position, feature.end_position) == (7, 13)


def test_doc_spans_with_stride_max_context_and_positions(tokenizer):
    assert len(tokenizer.tokenize(NUMBERS)) == 20  # one WordPiece per word
    answer_start = NUMBERS.index("eleven")  # doc token 10
    data = _squad(NUMBERS, [_qa("q", "q?", "eleven", answer_start)])
    examples, _ = squad_examples_from_json(data, is_training=True)
    # Query "q ?" = 2 tokens, so max_seq_length 14 leaves 14 - 2 - 3 = 9 document tokens per window.
    assert doc_spans_for(20, 9, 4) == [(0, 9), (4, 9), (8, 9), (12, 8)]
    features = convert_examples_to_features(examples, tokenizer, max_seq_length=14, doc_stride=4,
                                            max_query_length=64, is_training=True)
    assert [f.doc_span_index for f in features] == [0, 1, 2, 3]
    assert [f.unique_id for f in features] == [1000000000, 1000000001, 1000000002, 1000000003]
    assert features[1].tokens == ["[CLS]", "q", "?", "[SEP]"] + NUMBERS.split()[4:13] + ["[SEP]"]
    assert features[3].tokens[-2:] == ["twenty", "[SEP]"] and len(features[3].tokens) == 13
    # "eleven" (doc token 10) is inside windows 1 and 2 only: position 10 - 4 + 4 = 10, and 10 - 8 + 4 = 6.
    assert [(f.start_position, f.end_position) for f in features] == [(0, 0), (10, 10), (6, 6), (0, 0)]

    spans = doc_spans_for(20, 9, 4)
    # Token 5: window 0 scores min(5, 3) + 0.09, window 1 min(1, 7) + 0.09 -> window 0.
    assert check_is_max_context(spans, 0, 5) and not check_is_max_context(spans, 1, 5)
    # Token 6: a tie (2.09 both) goes to the first window. Token 7: window 1 (min(3, 5)) beats window 0 (min(7, 1)).
    assert check_is_max_context(spans, 0, 6) and not check_is_max_context(spans, 1, 6)
    assert check_is_max_context(spans, 1, 7) and not check_is_max_context(spans, 0, 7)
    # Token 19 is only in the last window; the last window (length 8) vs window 2 for token 14:
    # window 2 [8, 16]: min(6, 2) + 0.09 = 2.09; window 3 [12, 19]: min(2, 5) + 0.08 = 2.08 -> window 2.
    assert check_is_max_context(spans, 3, 19)
    assert check_is_max_context(spans, 2, 14) and not check_is_max_context(spans, 3, 14)
    # Each document token is the max context of exactly one feature.
    owners = {}
    for f in features:
        for position, is_max in f.token_is_max_context.items():
            if is_max:
                owners.setdefault(f.token_to_orig_map[position], []).append(f.doc_span_index)
    assert sorted(owners) == list(range(20)) and all(len(v) == 1 for v in owners.values())
    assert features[0].token_is_max_context[4 + 6] is True and features[1].token_is_max_context[4 + 2] is False


def test_query_is_truncated_to_max_query_length(tokenizer):
    data = _squad("a b c", [_qa("q", "one two three four five six", "b", 2)])
    examples, _ = squad_examples_from_json(data, is_training=True)
    (feature,) = convert_examples_to_features(examples, tokenizer, 16, 8, max_query_length=3, is_training=True)
    assert feature.tokens == ["[CLS]", "one", "two", "three", "[SEP]", "a", "b", "c", "[SEP]"]
    assert (feature.start_position, feature.end_position) == (6, 6)


def test_impossible_questions_point_at_cls(tokenizer):
    data = _squad(NUMBERS, [_qa("imp", "who?", impossible=True)])
    examples, stats = squad_examples_from_json(data, is_training=True, version_2_with_negative=True)
    assert stats["num_impossible"] == 1 and examples[0].is_impossible
    assert (examples[0].start_position, examples[0].end_position, examples[0].orig_answer_text) == (-1, -1, "")
    features = convert_examples_to_features(examples, tokenizer, 14, 4, 64, is_training=True)
    assert len(features) == 4
    assert all(f.start_position == 0 and f.end_position == 0 and f.is_impossible for f in features)
    # Without version_2_with_negative, is_impossible is not read: the missing answer is an error.
    with pytest.raises(SquadFormatError, match="imp.*needs an answer; it has none"):
        squad_examples_from_json(data, is_training=True, version_2_with_negative=False)


def test_misaligned_answers_are_reported_counted_and_skipped():
    context = "Paris is in France. London is in England."
    data = _squad(context, [
        _qa("good", "Where is Paris?", "France", context.index("France")),
        _qa("shifted", "Where is London?", "England", context.index("France")),  # points at "France."
        _qa("outside", "Where?", "England", len(context) - 2),
    ])
    with pytest.warns(UserWarning) as record:
        examples, stats = squad_examples_from_json(data, is_training=True, source="mine.json")
    messages = " ".join(str(w.message) for w in record)
    assert "'shifted'" in messages and "'outside'" in messages and "mine.json" in messages
    assert [e.qas_id for e in examples] == ["good"]
    assert stats["num_misaligned_answers"] == 2 and stats["misaligned_qids"] == ["shifted", "outside"]
    assert stats["num_questions"] == 3 and stats["num_examples"] == 1
    # For prediction, answers are not read: every question is kept.
    examples, stats = squad_examples_from_json(data, is_training=False)
    assert len(examples) == 3 and stats["num_misaligned_answers"] == 0 and examples[1].start_position is None


def test_malformed_json_names_the_file_and_the_question(tmp_path):
    good = _squad("a b", [_qa("q0", "x?", "a", 0)])
    cases = [
        ({"version": "1"}, "missing key 'data'"),
        ({"data": [{"paragraphs": [{"qas": []}]}]}, r"missing key 'context' at data\[0\]\.paragraphs\[0\]"),
        (_squad("a b", [{"id": "q7", "answers": []}]), r"missing key 'question' .*question id 'q7'"),
        (_squad("a b", [{"id": "q8", "question": "x?", "answers": [{"text": "a"}]}]),
         r"missing key 'answer_start' at .*'q8'.*answers\[0\]"),
        (_squad("a b", [{"question": "x?", "answers": []}]), r"missing key 'id' at data\[0\]\.paragraphs\[0\]\.qas\[0\]"),
    ]
    for data, pattern in cases:
        path = tmp_path / "bad.json"
        path.write_text(json.dumps(data))
        with pytest.raises(SquadFormatError, match=pattern) as info:
            squad_data.read_squad_examples(str(path), is_training=True, version_2_with_negative=True)
        assert str(path) in str(info.value)
    path = tmp_path / "good.json"
    path.write_text(json.dumps(good))
    examples, _ = squad_data.read_squad_examples(str(path), is_training=True)
    assert examples[0].orig_answer_text == "a"


def test_features_to_arrays_and_lists(tokenizer):
    data = _squad(NUMBERS, [_qa("q", "q?", "eleven", NUMBERS.index("eleven"))])
    examples, _ = squad_examples_from_json(data, is_training=True)
    features = convert_examples_to_features(examples, tokenizer, 14, 4, 64, is_training=True)
    x, y = features_to_arrays(features)
    assert x["token_ids"].shape == (4, 14) and x["token_ids"].dtype == np.int32
    np.testing.assert_array_equal(y["start_positions"], [0, 10, 6, 0])
    lists, y2 = features_to_lists(features)
    assert [len(row) for row in lists["token_ids"]] == [14, 14, 14, 13]
    np.testing.assert_array_equal(y2["end_positions"], y["end_positions"])
    predict_features = convert_examples_to_features(examples, tokenizer, 14, 4, 64, is_training=False)
    assert features_to_arrays(predict_features)[1] is None


def test_generated_qa_data_is_deterministic_small_and_held_out(tmp_path, tokenizer):
    spec = importlib.util.spec_from_file_location("make_qa_data", os.path.join(REPO, "data", "make_qa_data.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    module.main(out_dir=str(tmp_path))
    total = 0
    for name in ("train.json", "dev.json"):
        committed = os.path.join(REPO, "data", "qa", name)
        with open(committed, "rb") as f, open(tmp_path / name, "rb") as g:
            content = f.read()
            assert content == g.read(), f"data/qa/{name} differs from what data/make_qa_data.py writes"
        total += len(content)
    assert total < 600_000  # 400 training paragraphs (1,600 questions) + 25 dev paragraphs ship in ~0.5 MB
    train, train_stats = squad_data.read_squad_examples(os.path.join(REPO, "data/qa/train.json"), True, True)
    dev, dev_stats = squad_data.read_squad_examples(os.path.join(REPO, "data/qa/dev.json"), True, True)
    assert train_stats["num_misaligned_answers"] == dev_stats["num_misaligned_answers"] == 0
    assert 0.15 < train_stats["num_impossible"] / len(train) < 0.35 and dev_stats["num_impossible"] > 10
    with open(os.path.join(REPO, "data/qa/train.json"), encoding="utf-8") as f:
        train_text = f.read()
    dev_answers = [e.orig_answer_text for e in dev if not e.is_impossible]
    assert len(dev_answers) >= 50 and not [a for a in dev_answers if a in train_text]
