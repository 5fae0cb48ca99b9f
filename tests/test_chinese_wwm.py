"""Whole-word masking of Chinese with a segmenter (jieba): the characters of a segmenter word are masked
together, in create_pretraining_data's static masking and in the dynamic-masking path; without a segmenter
nothing changes (the English parity with the original code is tests/test_create_pretraining_data.py's)."""

import os
import random

import numpy as np
import pytest

from keras_bert_impl.data import pretraining_documents, pretraining_instances
from keras_bert_impl.data.masked_lm_predictions import word_start_flags
from keras_bert_impl.data.word_segmentation import (
    ContinuingToken,
    continuation_offsets,
    continues_word,
    get_segmenter,
    mark_whole_words,
)
from keras_bert_impl.tokenizers.bert_tokenizer import BertTokenizer

pytestmark = pytest.mark.backend_independent

pytest.importorskip("jieba")  # a dev dependency (the `chinese` extra)

CORPUS = [
    "清华大学位于北京市海淀区。", "我们在自然语言处理实验室研究机器学习。", "北京大学和清华大学都是著名的高等学府。",
    "",
    "今天天气很好，我们去公园散步。", "中华人民共和国成立于一九四九年。", "人工智能改变了我们的生活方式。",
    "",
    "上海是中国最大的城市之一。", "长江是亚洲最长的河流。", "研究人员发表了新的论文。",
]


@pytest.fixture(scope="module")
def chinese(tmp_path_factory):
    """(tokenizer, corpus file, segmenter): a character vocabulary of the corpus."""
    root = tmp_path_factory.mktemp("wwm")
    corpus = root / "corpus.txt"
    corpus.write_text("\n".join(CORPUS) + "\n", encoding="utf-8")
    characters = sorted({c for line in CORPUS for c in line})
    tokenizer = BertTokenizer(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *characters])
    return tokenizer, str(corpus), get_segmenter("jieba")


def _words(tokens):
    """The whole-word groups of a token sequence: lists of positions, a continuing token joined to the one
    before it."""
    groups = []
    for i, token in enumerate(tokens):
        if groups and continues_word(token) and groups[-1][-1] == i - 1:
            groups[-1].append(i)
        else:
            groups.append([i])
    return groups


def test_the_marks_are_the_segmenters_multi_character_chinese_words(chinese):
    tokenizer, _, segmenter = chinese
    for line in (line for line in CORPUS if line):
        tokens = mark_whole_words(line, tokenizer, segmenter)
        assert tokens == tokenizer.tokenize(line)  # the same tokens: only their marks differ
        words = segmenter(line)
        expected = [[i for i in range(start, end)] for word, start, end in words]  # one token per character
        expected = [group for group in expected if group]
        got = _words(tokens)
        multi = [w for w in words if len(w[0]) > 1 and all("\u4e00" <= c <= "\u9fff" for c in w[0])]
        assert {tuple(g) for g in got if len(g) > 1} == {tuple(range(s, e)) for _, s, e in multi}, line
        assert sum(len(g) for g in got) == sum(len(g) for g in expected) == len(tokens)
    assert sorted(continuation_offsets(segmenter("清华大学"))) == [1, 2, 3]


def test_static_whole_word_masking_never_masks_part_of_a_segmenter_word(chinese):
    tokenizer, corpus, segmenter = chinese
    documents = list(pretraining_documents.read_documents([corpus], tokenizer, word_segmenter=segmenter))
    assert any(isinstance(t, ContinuingToken) for d in documents for s in d for t in s)
    words_seen = partial = 0
    for seed in range(20):
        instances = pretraining_instances.create_training_instances(
            documents, tokenizer.vocabulary, random.Random(seed), max_seq_length=48, dupe_factor=2,
            masked_lm_prob=0.3, max_predictions_per_seq=12, do_whole_word_mask=True)
        for instance in instances:
            masked = set(instance.masked_lm_positions)
            for group in _words(instance.tokens):
                if len(group) > 1:
                    words_seen += 1
                    partial += 0 < len(masked & set(group)) < len(group)
    assert words_seen > 100 and partial == 0


def test_without_a_segmenter_chinese_characters_are_single_words(chinese):
    tokenizer, corpus, _ = chinese
    documents = list(pretraining_documents.read_documents([corpus], tokenizer))
    assert not any(continues_word(t) for d in documents for s in d for t in s)
    assert word_start_flags(["[CLS]", "phil", "##am", "清", ContinuingToken("华"), "[SEP]"]) == [1, 1, 0, 1, 0, 1]


@pytest.mark.tensorflow
def test_dynamic_whole_word_masking_masks_the_segmenter_words_whole(chinese):
    import tensorflow as tf

    from keras_bert_impl.data.tf_dynamic_masking import mask_features

    tokenizer, _, segmenter = chinese
    line = CORPUS[1] + CORPUS[2]
    tokens = ["[CLS]", *mark_whole_words(line, tokenizer, segmenter), "[SEP]"]
    ids = tokenizer.convert_tokens_to_ids(tokens)
    features = {"token_ids": tf.constant([ids]), "segment_ids": tf.zeros([1, len(ids)], tf.int32),
                "padding_mask": tf.ones([1, len(ids)], tf.int32), "next_sentence_labels": tf.constant([0]),
                "word_starts": tf.constant([word_start_flags(tokens)])}
    groups = [g for g in _words(tokens) if len(g) > 1]
    assert groups
    for seed in range(30):
        x, y = mask_features(features, tf.constant([seed, 7]), vocab_size=tokenizer.vocab_size,
                             mask_token_id=tokenizer.mask_token_id, special_token_ids=[0, 2, 3],
                             masked_lm_prob=0.4, max_predictions_per_seq=16, whole_word_mask=True)
        positions = np.asarray(x["masked_lm_positions"])[0]
        positions = positions[np.asarray(y["masked_lm_weights"])[0] > 0]
        masked = set(int(p) for p in positions)
        assert masked
        for group in groups:
            assert len(masked & set(group)) in (0, len(group)), (seed, group, sorted(masked))


def test_the_recipe_refuses_a_segmenter_without_whole_word_masking(chinese, tmp_path, capsys):
    from keras_bert_impl.runners import create_pretraining_data

    tokenizer, corpus, _ = chinese
    vocab = tmp_path / "vocab.txt"
    vocab.write_text("\n".join(tokenizer.vocabulary) + "\n", encoding="utf-8")
    with pytest.raises(SystemExit) as exit:
        create_pretraining_data.main([f"--input_file={corpus}", f"--output_file={tmp_path / 'x.tfrecord'}",
                                      f"--vocab_file={vocab}", "--word_segmenter=jieba"])
    assert exit.value.code == 2 and "pass --do_whole_word_mask too" in capsys.readouterr().err
    assert create_pretraining_data.main([
        f"--input_file={corpus}", f"--output_file={tmp_path / 'y.tfrecord'}", f"--vocab_file={vocab}",
        "--word_segmenter=jieba", "--do_whole_word_mask", "--max_seq_length=32", "--dupe_factor=1"]) > 0
    assert os.path.getsize(tmp_path / "y.tfrecord") > 0
