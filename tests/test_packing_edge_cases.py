"""Packing of sentence(-pair) examples on every edge case, against a port of google-research/bert
run_classifier.py's `convert_single_example` and `_truncate_seq_pair`: an empty, whitespace-only or
control-only second text packs one segment, over-long texts are truncated as the original, and
max_seq_length 3, 4 and 5 work."""

import itertools
import os

import numpy as np
import pytest

from keras_bert_impl.data import glue_data
from keras_bert_impl.tokenizers.bert_tokenizer import BertTokenizer

from tests.tokenization_reference import original_truncate_seq_pair  # run_classifier.py, verbatim

WORDS = ["the", "cat", "sat", "on", "a", "mat", "dog", "ran", "far", "away"]
VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *WORDS]


# ---------------------------------------------------------------- the reference: the original's code, ported
def convert_single_example(text_a, text_b, max_seq_length, tokenizer):
    """run_classifier.py `convert_single_example` (without the label): input_ids, input_mask, segment_ids,
    each padded with 0 to max_seq_length."""
    tokens_a = tokenizer.tokenize(text_a)
    tokens_b = None
    if text_b:
        tokens_b = tokenizer.tokenize(text_b)
    if tokens_b:
        original_truncate_seq_pair(tokens_a, tokens_b, max_seq_length - 3)
    else:
        if len(tokens_a) > max_seq_length - 2:
            tokens_a = tokens_a[0:(max_seq_length - 2)]
    tokens = []
    segment_ids = []
    tokens.append("[CLS]")
    segment_ids.append(0)
    for token in tokens_a:
        tokens.append(token)
        segment_ids.append(0)
    tokens.append("[SEP]")
    segment_ids.append(0)
    if tokens_b:
        for token in tokens_b:
            tokens.append(token)
            segment_ids.append(1)
        tokens.append("[SEP]")
        segment_ids.append(1)
    input_ids = tokenizer.convert_tokens_to_ids(tokens)
    input_mask = [1] * len(input_ids)
    while len(input_ids) < max_seq_length:
        input_ids.append(0)
        input_mask.append(0)
        segment_ids.append(0)
    return input_ids, input_mask, segment_ids


# ---------------------------------------------------------------- the generated cases
def _words(n, start=0):
    return " ".join(WORDS[(start + i) % len(WORDS)] for i in range(n))


TEXTS_A = ["", _words(1), _words(3), _words(12)]
TEXTS_B = [None, "", "   ", "\t\n", "\x07\x1b\u200b", " \x00 ", _words(1, 5), _words(2, 5), _words(3, 5), _words(15, 5)]
MAX_SEQ_LENGTHS = [3, 4, 5, 8, 16]
EMPTY_B = {"", "   ", "\t\n", "\x07\x1b\u200b", " \x00 "}
CASES = list(itertools.product(TEXTS_A, TEXTS_B, MAX_SEQ_LENGTHS))


@pytest.fixture(scope="module")
def tokenizer(tmp_path_factory):
    path = os.path.join(tmp_path_factory.mktemp("vocab"), "vocab.txt")
    with open(path, "w", encoding="utf-8") as f:
        f.write("\n".join(VOCAB) + "\n")
    return BertTokenizer(path)


def _padded(features, max_seq_length):
    out = {}
    for key in ("token_ids", "padding_mask", "segment_ids"):
        out[key] = [np.pad(row, (0, max_seq_length - len(row))).tolist() for row in features[key]]
    return out


def test_the_cases_cover_every_edge_the_original_distinguishes(tokenizer):
    """Empty / whitespace / control-only B tokenize to nothing; B cut to zero tokens and A cut to zero occur."""
    assert all(tokenizer.tokenize(b) == [] for b in EMPTY_B)
    kept = [convert_single_example(a, b, n, tokenizer) for a, b, n in CASES]
    lengths = {sum(mask) for _, mask, _ in kept}
    assert min(lengths) == 2 and max(lengths) == 16  # "[CLS] [SEP]" only, and a full sequence
    # B given (non-empty tokens) but truncated away: a long A and a one-token B at max_seq_length 4.
    ids, mask, segments = convert_single_example(_words(12), _words(1, 5), 4, tokenizer)
    assert sum(mask) == 3 and sum(segments) == 0


def test_glue_encoder_equals_the_original_convert_single_example_on_every_edge_case(tokenizer):
    for max_seq_length in MAX_SEQ_LENGTHS:
        cases = [(a, b) for a, b, n in CASES if n == max_seq_length]
        examples = [glue_data.InputExample(str(i), a, b, None) for i, (a, b) in enumerate(cases)]
        ours = _padded(glue_data.encode_examples(tokenizer, examples, max_seq_length), max_seq_length)
        for i, (a, b) in enumerate(cases):
            input_ids, input_mask, segment_ids = convert_single_example(a, b, max_seq_length, tokenizer)
            got = (ours["token_ids"][i], ours["padding_mask"][i], ours["segment_ids"][i])
            assert got == (input_ids, input_mask, segment_ids), (a, b, max_seq_length)


def test_an_empty_second_text_packs_one_segment_with_max_seq_length_minus_2_room(tokenizer):
    cls, sep = tokenizer.cls_token_id, tokenizer.sep_token_id
    for b in sorted(EMPTY_B):
        token_ids, segment_ids = glue_data.pack_example(tokenizer, _words(12), b, 8)
        assert token_ids == [cls, *tokenizer.convert_tokens_to_ids(WORDS[:6]), sep] and segment_ids == [0] * 8


def _in_graph_packer(tokenizer, max_seq_length):
    from keras_bert_impl.tokenizers.tf_text_packer import BertTextPacker

    return BertTextPacker(tokenizer, max_length=max_seq_length, padding="max_length")


def _in_graph(packer, cases):
    import tensorflow as tf

    out = packer((tf.constant([a for a, _ in cases]), tf.constant([b for _, b in cases])))
    return {k: np.asarray(v).tolist() for k, v in out.items()}


def _pair_cases(max_seq_length, empty_b):
    return [(a, b) for a, b, n in CASES if n == max_seq_length and b is not None and (b in EMPTY_B) == empty_b]


@pytest.mark.tensorflow
def test_in_graph_packer_equals_the_original_on_pairs_whose_second_text_has_tokens(tokenizer):
    """The serving packer (SavedModel signatures) on pairs with tokens in B, where no B is cut to nothing."""
    for max_seq_length in (5, 8, 16):
        cases = _pair_cases(max_seq_length, empty_b=False)
        got = _in_graph(_in_graph_packer(tokenizer, max_seq_length), cases)
        for i, (a, b) in enumerate(cases):
            input_ids, input_mask, segment_ids = convert_single_example(a, b, max_seq_length, tokenizer)
            assert (got["token_ids"][i], got["padding_mask"][i], got["segment_ids"][i]) == (
                input_ids, input_mask, segment_ids), (a, b, max_seq_length)


@pytest.mark.tensorflow
def test_in_graph_packer_packs_an_empty_second_text_as_one_segment(tokenizer):
    for max_seq_length in (4, 5, 8, 16):
        cases = _pair_cases(max_seq_length, empty_b=True)
        got = _in_graph(_in_graph_packer(tokenizer, max_seq_length), cases)
        for i, (a, b) in enumerate(cases):
            input_ids, input_mask, segment_ids = convert_single_example(a, b, max_seq_length, tokenizer)
            assert (got["token_ids"][i], got["padding_mask"][i], got["segment_ids"][i]) == (
                input_ids, input_mask, segment_ids), (a, b, max_seq_length)
