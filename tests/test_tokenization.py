"""BertTokenizer: the original BERT tokenization rules, offsets, packing/truncation and bad input."""

import json
import os
import sys

import numpy as np
import pytest

pytestmark = pytest.mark.backend_independent

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # tokenization_reference.py

from keras_bert_impl.tokenizers import basic_tokenizer as tokenization
from keras_bert_impl.tokenizers import fast_wordpiece, packing
from keras_bert_impl.tokenizers.basic_tokenizer import basic_tokenize
from keras_bert_impl.tokenizers.bert_tokenizer import BertTokenizer
from keras_bert_impl.tokenizers.packing import truncated_pair_lengths
from keras_bert_impl.utils.errors import UserInputError
from tokenization_reference import (  # noqa: E402
    OriginalBasicTokenizer,
    OriginalFullTokenizer,
    mixed_corpus,
    original_truncate_seq_pair,
)

ORIGINAL_TEST_VOCAB = ["[UNK]", "[CLS]", "[SEP]", "want", "##want", "##ed", "wa", "un", "runn", "##ing", ","]


def _write_vocab(path, tokens):
    path.write_text("\n".join(tokens) + "\n", encoding="utf-8")
    return str(path)


@pytest.fixture
def small_tokenizer(tmp_path):
    return BertTokenizer(_write_vocab(tmp_path / "vocab.txt", ORIGINAL_TEST_VOCAB))


@pytest.fixture(scope="module")
def minilm_tokenizer(minilm_path):
    return BertTokenizer.from_pretrained(minilm_path)


@pytest.fixture(scope="module")
def corpus():
    return mixed_corpus()


# --- The original tokenization_test.py cases -----------------------------------------------------------


def test_original_wordpiece_cases(small_tokenizer):
    tokens = small_tokenizer.tokenize("UNwant\u00E9d,running")
    assert tokens == ["un", "##want", "##ed", ",", "runn", "##ing"]
    assert small_tokenizer.convert_tokens_to_ids(tokens) == [7, 4, 5, 10, 8, 9]
    assert small_tokenizer.tokenize("unwantedX running") == ["[UNK]", "runn", "##ing"]
    assert small_tokenizer.tokenize("") == []
    assert small_tokenizer.convert_ids_to_tokens([7, 4, 5, 10, 8, 9]) == tokens


def test_original_basic_tokenizer_cases():
    assert basic_tokenize("ah\u535A\u63A8zz") == ["ah", "\u535A", "\u63A8", "zz"]
    assert basic_tokenize(" \tHeLLo!how  \n Are yoU?  ") == ["hello", "!", "how", "are", "you", "?"]
    assert basic_tokenize(" \tHeLLo!how  \n Are yoU?  ", do_lower_case=False) == ["HeLLo", "!", "how", "Are", "yoU", "?"]
    assert basic_tokenize("H\u00E9llo") == ["hello"]


def test_original_predicates():
    for char in (" ", "\t", "\r", "\n", "\u00A0"):
        assert tokenization._is_whitespace(char), repr(char)
    for char in ("A", "-"):
        assert not tokenization._is_whitespace(char), repr(char)
    assert tokenization._is_control("\u0005")
    for char in ("A", " ", "\t", "\r", "\U0001F4A9"):
        assert not tokenization._is_control(char), repr(char)
    for char in ("-", "$", "`", "."):
        assert tokenization._is_punctuation(char), repr(char)
    for char in ("A", " "):
        assert not tokenization._is_punctuation(char), repr(char)


def test_special_token_strings_are_plain_text(minilm_tokenizer, minilm_path):
    assert minilm_tokenizer.tokenize("[CLS]") == ["[", "cl", "##s", "]"]
    matching = BertTokenizer.from_pretrained(minilm_path, split_special_tokens=False)
    assert matching.tokenize("a [CLS] b[SEP]") == ["a", "[CLS]", "b", "[SEP]"]
    tokens, offsets = matching.tokenize_with_offsets("a [CLS] b")
    assert offsets[1] == (2, 7)


# --- The real uncased vocabulary on a mixed corpus -------------------------------------------------------


def test_mixed_corpus_equals_original_algorithm(minilm_tokenizer, corpus):
    original = OriginalFullTokenizer(minilm_tokenizer.vocab, do_lower_case=True)
    for line in corpus:
        expected = original.convert_tokens_to_ids(original.tokenize(line))
        ids = minilm_tokenizer(line, max_length=10_000)["token_ids"][0, 1:-1].tolist()
        assert minilm_tokenizer.tokenize(line) == original.tokenize(line), repr(line)
        assert ids == expected, repr(line)


def test_mixed_corpus_equals_tokenizers_library(minilm_tokenizer, corpus):
    tokenizers = pytest.importorskip("tokenizers")
    reference = tokenizers.Tokenizer(
        tokenizers.models.WordPiece(minilm_tokenizer.vocab, unk_token="[UNK]", max_input_chars_per_word=200)
    )
    reference.normalizer = tokenizers.normalizers.BertNormalizer(lowercase=True)
    reference.pre_tokenizer = tokenizers.pre_tokenizers.BertPreTokenizer()
    original = OriginalBasicTokenizer(do_lower_case=True)
    final_sigma_lines = 0
    for line in corpus:
        ours = minilm_tokenizer.convert_tokens_to_ids(minilm_tokenizer.tokenize(line))
        theirs = reference.encode(line, add_special_tokens=False).ids
        if ours != theirs:
            # The one known difference: Python lower-cases a word-final capital sigma to "ς" (in
            # context), the tokenizers library always to "σ". With no capital sigma they must agree.
            assert "\u03c2" in "".join(original.tokenize(line)), repr(line)
            no_sigma = line.replace("\u03a3", "\u03c3")
            assert minilm_tokenizer.tokenize(no_sigma) == reference.encode(no_sigma, add_special_tokens=False).tokens
            final_sigma_lines += 1
    assert final_sigma_lines > 0  # The corpus does exercise the difference.


def _normalize_span(text, do_lower_case):
    cleaned = "".join(c for c in text if not tokenization._is_removed(c))
    return tokenization.normalize_word(cleaned, do_lower_case).replace("\u03c2", "\u03c3")


def test_offsets_point_at_the_tokens(minilm_tokenizer, corpus):
    original = OriginalBasicTokenizer(do_lower_case=True)
    checked = 0
    for line in corpus:
        tokens, offsets = minilm_tokenizer.tokenize_with_offsets(line)
        words = set(original.tokenize(line))
        assert len(tokens) == len(offsets)
        # Consecutive tokens with the same span come from one character (e.g. Hangul -> jamo pieces).
        i = 0
        while i < len(tokens):
            j = i
            while j + 1 < len(tokens) and offsets[j + 1] == offsets[i]:
                j += 1
            start, end = offsets[i]
            assert 0 <= start < end <= len(line), (line, tokens[i], offsets[i])
            span = _normalize_span(line[start:end], True)
            if tokens[i] == "[UNK]":
                assert i == j and span in {w.replace("\u03c2", "\u03c3") for w in words}, (line, span)
            else:
                text = "".join(t[2:] if t.startswith("##") else t for t in tokens[i : j + 1])
                assert span == text.replace("\u03c2", "\u03c3"), (line, tokens[i : j + 1], offsets[i])
            checked += j - i + 1
            i = j + 1
    assert checked > 3000


def test_offsets_in_batch_output(minilm_tokenizer):
    out = minilm_tokenizer(["Héllo, wörld!", "x"], ["ΟΔΟΣ", "y"], max_length=16, return_offsets=True)
    assert out["offsets"].dtype == np.int32 and out["offsets"].shape == out["token_ids"].shape + (2,)
    tokens = minilm_tokenizer.convert_ids_to_tokens(out["token_ids"][0])
    assert tokens[:5] == ["[CLS]", "hello", ",", "world", "!"]
    assert out["offsets"][0, :5].tolist() == [[0, 0], [0, 5], [5, 6], [7, 12], [12, 13]]
    assert out["offsets"][0, 5].tolist() == [0, 0]  # [SEP]
    assert out["offsets"][1, -1].tolist() == [0, 0]  # Padding.


# --- The fast path (tokenizers/fast_wordpiece.py) ---------------------------------------------------------

# Held-out cases beyond the corpus: the original's test cases, NFKC's texts read without NFKC, "[CLS]" as text,
# control, format and zero-width characters, words at the 200-character cap, final and inner capital sigmas.
EDGE_TEXTS = ["UNwant\u00E9d,running", "unwantedX running", "", "ah\u535A\u63A8zz", " \tHeLLo!how  \n Are yoU?  ",
              "H\u00E9llo", "ＢＥＲＴ　１２３", "ﬁsh ＢＥＲＴ", "㍿a", "a㍿(東京)", "a¨a", "[CLS] text [SEP] [MASK]",
              "a\u00ADb\u200bc\u200dd\ufeffe\x00f\ufffdg\x1bh", "a\u3000b\u2028c\u2029d\u00a0e", "a" * 200,
              "a" * 201, "b" + "a" * 199 + "!", "ΟΔΟΣ", "ΣΑΣ ΟΔΟΣ.", "Σ", "ΣΣ", "aΣ\u0301b", "İstanbul ǅ ß ﬀ"]


def test_the_fast_path_gives_the_python_paths_ids_and_offsets(minilm_tokenizer, corpus, tmp_path):
    pytest.importorskip("tokenizers")
    texts = corpus + EDGE_TEXTS
    cased = BertTokenizer(minilm_tokenizer.vocabulary, do_lower_case=False)
    for tokenizer in (minilm_tokenizer, cased):
        fast = tokenizer(texts, max_length=10_000, return_offsets=True)
        assert isinstance(tokenizer._fast, fast_wordpiece.FastWordPiece)  # batch encoding took the fast path
        python = packing.pack_batch([(tokenizer._encode_text(text, True), None) for text in texts], 10_000,
                                    tokenizer.cls_token_id, tokenizer.sep_token_id, tokenizer.pad_token_id,
                                    return_offsets=True)
        for name in ("token_ids", "offsets", "padding_mask"):
            for i, text in enumerate(texts):
                np.testing.assert_array_equal(fast[name][i], python[name][i], err_msg=f"{name} of {text!r}")
    # A lower-cased final capital sigma goes the Python way; the others the fast way.
    routed = minilm_tokenizer._fast.encode_batch(["ΟΔΟΣ", "ΣΑ", "x"], with_offsets=False)
    assert [r is None for r in routed] == [True, False, False]


def test_without_the_tokenizers_package_the_python_path_encodes(minilm_tokenizer, corpus, monkeypatch):
    monkeypatch.setattr(fast_wordpiece, "available", lambda: False)
    tokenizer = BertTokenizer(minilm_tokenizer.vocabulary)
    out = tokenizer(corpus[:50], max_length=64, return_offsets=True)
    assert tokenizer._fast is False
    python = BertTokenizer(minilm_tokenizer.vocabulary, fast_path=False)  # the Python path, chosen
    np.testing.assert_array_equal(python(corpus[:50], max_length=64)["token_ids"], out["token_ids"])
    assert python._fast is False
    original = OriginalFullTokenizer(tokenizer.vocab, do_lower_case=True)
    for row, line in zip(out["token_ids"], corpus[:50]):
        expected = original.convert_tokens_to_ids(original.tokenize(line))[:62]
        assert row[1:1 + len(expected)].tolist() == expected, repr(line)


# --- Cased ------------------------------------------------------------------------------------------------


def test_cased_tokenizer(tmp_path):
    vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "Hello", "hello", "H", "##é", "##llo", "How", "##dy", "!", "Σ", "ΟΔΟ", "##Σ"]
    tokenizer = BertTokenizer(_write_vocab(tmp_path / "vocab.txt", vocab), do_lower_case=False)
    assert tokenizer.tokenize("Héllo HOWdy Howdy! hello ΟΔΟΣ") == ["H", "##é", "##llo", "[UNK]", "How", "##dy", "!", "hello", "ΟΔΟ", "##Σ"]
    original = OriginalFullTokenizer(tokenizer.vocab, do_lower_case=False)
    for line in mixed_corpus(60):
        assert tokenizer.tokenize(line) == original.tokenize(line), repr(line)
    tokens, offsets = tokenizer.tokenize_with_offsets("Héllo!")
    assert offsets == [(0, 1), (1, 2), (2, 5), (5, 6)]


# --- Packing and truncation -------------------------------------------------------------------------------


def _original_features(tokenizer, text_a, text_b, max_length):
    """Layout of the original run_classifier.convert_single_example (a B without tokens, or cut to none,
    packs as no B)."""
    tokens_a = tokenizer.tokenize(text_a)
    tokens_b = tokenizer.tokenize(text_b) if text_b else None
    if tokens_b:
        original_truncate_seq_pair(tokens_a, tokens_b, max_length - 3)
    elif len(tokens_a) > max_length - 2:
        tokens_a = tokens_a[: max_length - 2]
    tokens = ["[CLS]"] + tokens_a + ["[SEP]"]
    segments = [0] * len(tokens)
    if tokens_b:
        tokens += tokens_b + ["[SEP]"]
        segments += [1] * (len(tokens_b) + 1)
    return tokenizer.convert_tokens_to_ids(tokens), segments


@pytest.mark.parametrize("padding", ["longest", "max_length"])
@pytest.mark.parametrize("max_length", [4, 5, 8, 13, 64])
def test_packing_and_truncation_match_original(minilm_tokenizer, corpus, padding, max_length):
    texts_a, texts_b = corpus[:40], corpus[40:80]
    for pairs in (None, texts_b):
        out = minilm_tokenizer(texts_a, pairs, max_length=max_length, padding=padding)
        seq = out["token_ids"].shape[1]
        for key in ("token_ids", "segment_ids", "padding_mask"):
            assert out[key].dtype == np.int32 and out[key].shape == (len(texts_a), seq)
        expected_rows = [
            _original_features(minilm_tokenizer, a, None if pairs is None else pairs[i], max_length)
            for i, a in enumerate(texts_a)
        ]
        longest = max(len(ids) for ids, _ in expected_rows)
        assert seq == (max_length if padding == "max_length" else longest)
        for row, (ids, segments) in enumerate(expected_rows):
            pad = [minilm_tokenizer.pad_token_id] * (seq - len(ids))
            assert out["token_ids"][row].tolist() == ids + pad
            assert out["segment_ids"][row].tolist() == segments + [0] * len(pad)
            assert out["padding_mask"][row].tolist() == [1] * len(ids) + [0] * len(pad)


def test_truncation_closed_form_equals_original_loop():
    for len_a in range(0, 14):
        for len_b in range(0, 14):
            for budget in range(1, 20):
                a, b = list(range(len_a)), list(range(len_b))
                original_truncate_seq_pair(a, b, budget)
                assert truncated_pair_lengths(len_a, len_b, budget) == (len(a), len(b)), (len_a, len_b, budget)


def test_single_string_and_empty_string(minilm_tokenizer):
    out = minilm_tokenizer("", max_length=8, padding="max_length")
    assert out["token_ids"].tolist() == [[minilm_tokenizer.cls_token_id, minilm_tokenizer.sep_token_id] + [0] * 6]
    assert minilm_tokenizer("hello")["token_ids"].shape == (1, 3)


def test_decode_and_vocab(minilm_tokenizer):
    ids = minilm_tokenizer(["Unaffable play!"], max_length=16, padding="max_length")["token_ids"][0]
    assert minilm_tokenizer.decode(ids) == "[CLS] unaffable play ! [SEP]"
    assert minilm_tokenizer.decode(ids, skip_special_tokens=True) == "unaffable play !"
    assert minilm_tokenizer.vocab_size == 30522 == len(minilm_tokenizer.vocab)
    assert (minilm_tokenizer.pad_token_id, minilm_tokenizer.unk_token_id) == (0, 100)
    assert (minilm_tokenizer.cls_token_id, minilm_tokenizer.sep_token_id, minilm_tokenizer.mask_token_id) == (101, 102, 103)


def test_from_pretrained_reads_do_lower_case(tmp_path):
    _write_vocab(tmp_path / "vocab.txt", ORIGINAL_TEST_VOCAB + ["UN"])
    (tmp_path / "tokenizer_config.json").write_text(json.dumps({"do_lower_case": False}))
    assert BertTokenizer.from_pretrained(str(tmp_path)).tokenize("UN") == ["UN"]
    os.remove(tmp_path / "tokenizer_config.json")
    assert BertTokenizer.from_pretrained(str(tmp_path)).tokenize("UN") == ["un"]


# --- Bad input --------------------------------------------------------------------------------------------


def test_bad_vocab_files(tmp_path):
    with pytest.raises(ValueError, match="not found.*missing.txt"):
        BertTokenizer(str(tmp_path / "missing.txt"))
    (tmp_path / "empty.txt").write_bytes(b"")
    with pytest.raises(ValueError, match="empty.txt.*empty"):
        BertTokenizer(str(tmp_path / "empty.txt"))
    _write_vocab(tmp_path / "nosep.txt", ["[UNK]", "[CLS]", "a"])
    with pytest.raises(ValueError, match=r"nosep.txt.*\[SEP\]"):
        BertTokenizer(str(tmp_path / "nosep.txt"))
    (tmp_path / "latin1.txt").write_bytes(b"[UNK]\n[CLS]\ncaf\xe9\n[SEP]\n")
    with pytest.raises(ValueError, match="latin1.txt.*line 3.*UTF-8"):
        BertTokenizer(str(tmp_path / "latin1.txt"))
    with pytest.raises(ValueError, match="^No checkpoint at .*missing_dir$"):
        BertTokenizer.from_pretrained(str(tmp_path / "missing_dir"))
    (tmp_path / "a_file").write_text("x")
    with pytest.raises(ValueError, match="a_file' is not a directory"):
        BertTokenizer.from_pretrained(str(tmp_path / "a_file"))
    (tmp_path / "no_vocab").mkdir()
    with pytest.raises(ValueError, match="no_vocab: no vocab.txt or tokenizer.json in this directory"):
        BertTokenizer.from_pretrained(str(tmp_path / "no_vocab"))
    (tmp_path / "bad_config").mkdir()
    _write_vocab(tmp_path / "bad_config" / "vocab.txt", ["[UNK]", "[CLS]", "[SEP]"])
    (tmp_path / "bad_config" / "tokenizer_config.json").write_text("[1]")
    with pytest.raises(ValueError, match="tokenizer_config.json: expected a JSON object"):
        BertTokenizer.from_pretrained(str(tmp_path / "bad_config"))


def test_bad_call_arguments(small_tokenizer):
    with pytest.raises(ValueError, match="max_length must be at least 3"):
        small_tokenizer(["a"], max_length=2)
    # As run_classifier.py: a pair cut to max_length 3 keeps no tokens of either text, [CLS] [SEP] only.
    np.testing.assert_array_equal(small_tokenizer(["a"], ["b"], max_length=3)["token_ids"],
                                  small_tokenizer([""], max_length=3)["token_ids"])
    small_tokenizer(["a"], ["b"], max_length=4)
    with pytest.raises(ValueError, match=r"texts\[1\] is None"):
        small_tokenizer(["a", None])
    with pytest.raises(ValueError, match=r"pair_texts\[0\] is None"):
        small_tokenizer(["a"], [None])
    with pytest.raises(UserInputError, match=r"texts\[0\] must be a str"):
        small_tokenizer([3])
    with pytest.raises(ValueError, match="padding"):
        small_tokenizer(["a"], padding="left")
    with pytest.raises(ValueError, match="text is None"):
        small_tokenizer.tokenize(None)
    with pytest.raises(ValueError, match="more than max_length"):
        small_tokenizer(["want " * 10], max_length=5, padding="max_length", truncation=False)
    assert small_tokenizer(["want " * 10], max_length=5, truncation=False)["token_ids"].shape == (1, 12)
    with pytest.raises(ValueError, match="out of range"):
        small_tokenizer.convert_ids_to_tokens([11])


def test_the_docstring_example_tokenizes_as_the_real_uncased_vocabulary_does(minilm_tokenizer):
    assert minilm_tokenizer.tokenize("UNaff\u00e0ble,running") == ["una", "##ffa", "##ble", ",", "running"]
