"""The raw-string path and the recipe path make identical features: for every task family, the same raw inputs
through the task model's preprocessor and through the recipe's featurizer give the same token ids, segment
ids, padding masks and labels (compared after padding both to the same length).

GLUE (`glue_data.encode_examples`), SWAG (`swag_data.encode_swag_examples`), SQuAD (`squad_data` ->
`squad_features.convert_examples_to_features`: contexts longer than a window, answers in later windows,
answers in no window, impossible questions), NER (`conll_features.convert_sentences_to_features`: sentences
longer than a window) and feature extraction (`feature_extraction.convert_example`). No model is built; the
vocabulary is tiny.
"""

import random

import numpy as np
import pytest

from keras_bert_impl.data import glue_data, squad_data, squad_features, swag_data
from keras_bert_impl.data.conll_data import ConllSentence, build_label_list, iob1_to_bio
from keras_bert_impl.data.conll_features import convert_sentences_to_features, features_to_arrays
from keras_bert_impl.models.classifier import BertClassifier
from keras_bert_impl.models.feature_based_tagger import BertFeatureBasedTagger
from keras_bert_impl.models.multiple_choice import BertMultipleChoice
from keras_bert_impl.models.span_qa import BertSpanQA
from keras_bert_impl.models.token_classifier import BertTokenClassifier
from keras_bert_impl.tasks import feature_extraction
from keras_bert_impl.tokenizers.bert_tokenizer import BertTokenizer

WORDS = ["the", "cat", "sat", "on", "a", "mat", "dog", "ran", "far", "away", "john", "mary", "lives", "in", "paris",
         "london", "big", "red", "house", "tree", "who", "where", "what", "did", "is", "was"]
VOCABULARY = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *WORDS, "##s", "##ing", "##ed", ",", ".", "?", "(", ")"]
INPUTS = ("token_ids", "segment_ids", "padding_mask")


@pytest.fixture(scope="module")
def tokenizer():
    return BertTokenizer(VOCABULARY)


def _text(rng, n):
    """n words of WORDS, some with a continuation piece or punctuation, and an unknown word now and then."""
    words = []
    for _ in range(n):
        word = rng.choice(WORDS)
        roll = rng.random()
        words.append(word + "s" if roll < 0.15 else word + "," if roll < 0.25 else "zebra" if roll < 0.3 else word)
    return " ".join(words)


def _padded(rows, length):
    """Rows (int lists or arrays of their own length) as an int array [N, length], padded with 0."""
    return np.asarray([np.pad(np.asarray(row), (0, length - len(row))) for row in rows], "int32")


def _assert_same_inputs(ours, theirs):
    for key in INPUTS:
        np.testing.assert_array_equal(ours[key], theirs[key], err_msg=key)


# ------------------------------------------------------------------------------------------------- GLUE
GLUE_PAIRS = [("the cat sat on the mat.", "a dog ran far away"), ("John lives in Paris", ""), ("", "mary"),
              ("big red house " * 6, "tree"), ("who?", "the dog " * 9), ("Zebras ran (far) away", "   ")]


@pytest.mark.parametrize("pairs", [False, True], ids=["single_sentence", "sentence_pair"])
def test_glue_text_classifier_preprocessor_equals_glue_encode_examples(tokenizer, pairs):
    rng = random.Random(0)
    rows = GLUE_PAIRS + [(_text(rng, rng.randint(1, 14)), _text(rng, rng.randint(0, 14))) for _ in range(20)]
    examples = [glue_data.InputExample(str(i), a, b if pairs else None, str(i % 2)) for i, (a, b) in enumerate(rows)]
    max_seq_length = 12
    recipe = glue_data.encode_examples(tokenizer, examples, max_seq_length)
    recipe_labels = glue_data.label_ids("sst2", examples)
    x = [e.text_a for e in examples]
    x = (x, [e.text_b for e in examples]) if pairs else x
    preprocessor = BertClassifier.preprocessor_class(tokenizer, sequence_length=max_seq_length)
    ours, labels, _ = preprocessor(x, recipe_labels)
    _assert_same_inputs(ours, {k: _padded(v, max_seq_length) for k, v in recipe.items()})
    np.testing.assert_array_equal(labels, recipe_labels)
    assert ours["segment_ids"].any() == pairs  # the pairs do pack a second segment


# ------------------------------------------------------------------------------------------------- SWAG
def test_multiple_choice_preprocessor_equals_swag_encode_examples(tokenizer):
    rng = random.Random(1)
    examples = [swag_data.SwagExample(str(i), _text(rng, rng.randint(1, 12)), _text(rng, rng.randint(0, 3)),
                                      [_text(rng, rng.randint(1, 8)) for _ in range(4)], rng.randint(0, 3))
                for i in range(8)]
    max_seq_length = 14
    recipe = swag_data.encode_swag_examples(tokenizer, examples, max_seq_length)
    recipe_labels = swag_data.swag_labels(examples)
    preprocessor = BertMultipleChoice.preprocessor_class(tokenizer, sequence_length=max_seq_length)
    x = ([e.context for e in examples], [[f"{e.start_ending} {ending}" for ending in e.endings] for e in examples])
    ours, labels, _ = preprocessor(x, recipe_labels)
    for key in INPUTS:
        theirs = np.stack([_padded(choices, max_seq_length) for choices in recipe[key]])  # [N, 4, T]
        np.testing.assert_array_equal(ours[key], theirs, err_msg=key)
    np.testing.assert_array_equal(labels, recipe_labels)


# ------------------------------------------------------------------------------------------------ SQuAD
def _squad_questions():
    """(question, context, answer_start, answer_text; "" for an impossible question), with contexts longer
    than the windows of the test, answers in later windows, an answer longer than any window and an answer
    inside a word with punctuation ("cat" of "cat,")."""
    rng = random.Random(2)
    long_context = " ".join(f"{_text(rng, 5)} ." for _ in range(8))  # about 50 words
    late_context = "the dog ran far away . " * 6 + "john lives in big red house ."
    questions = [
        ("who sat on the mat?", "the cat, sat on the mat .", "the cat, sat".index("cat"), "cat"),
        ("where did john live?", late_context, late_context.index("big red house"), "big red house"),
        ("what ran far?", long_context, len(" ".join(long_context.split()[:30])) + 1, long_context.split()[30]),
        ("what is the whole story of the dog and the cat that ran?", late_context, 0, late_context[:-2]),
        ("who lives in london?", late_context, 0, ""),
        ("the dog?", long_context, 0, long_context.split()[0]),
    ]
    return questions


def _squad_recipe_examples(questions):
    """The questions as the SQuAD recipe reads them: a SQuAD v2.0 JSON, one paragraph per question."""
    paragraphs = [{"context": context, "qas": [{"id": str(i), "question": question, "is_impossible": not text,
                                                "answers": [{"text": text, "answer_start": start}] if text else []}]}
                  for i, (question, context, start, text) in enumerate(questions)]
    examples, stats = squad_data.squad_examples_from_json({"data": [{"title": "t", "paragraphs": paragraphs}]},
                                                          is_training=True, version_2_with_negative=True)
    assert stats["num_misaligned_answers"] == 0
    return examples


def test_span_qa_preprocessor_makes_the_squad_recipes_windows_and_labels(tokenizer):
    questions = _squad_questions()
    max_seq_length, doc_stride, max_query_length = 20, 5, 6
    features = squad_features.convert_examples_to_features(_squad_recipe_examples(questions), tokenizer,
                                                           max_seq_length, doc_stride, max_query_length,
                                                           is_training=True)
    recipe_x, recipe_y = squad_features.features_to_arrays(features)
    preprocessor = BertSpanQA.preprocessor_class(tokenizer, sequence_length=max_seq_length, doc_stride=doc_stride,
                                                 max_query_length=max_query_length)
    x = ([q for q, _, _, _ in questions], [c for _, c, _, _ in questions])
    y = ([s for _, _, s, _ in questions], [t for _, _, _, t in questions])
    ours, labels, _ = preprocessor(x, y)
    _assert_same_inputs(ours, recipe_x)
    for key in ("start_positions", "end_positions"):
        np.testing.assert_array_equal(labels[key], recipe_y[key], err_msg=key)
    # What the cases cover: several windows per long context, the answer in a later window only, an answer
    # in no window (every window [CLS]), and [CLS] for the impossible question.
    windows = [[row for row, f in enumerate(features) if f.example_index == i] for i in range(len(questions))]
    assert all(len(windows[i]) > 1 for i in (1, 2, 3, 4, 5))
    labelled = [[row for row in rows if labels["start_positions"][row]] for rows in windows]
    assert labelled[0] == windows[0] and labelled[1] and labelled[1][0] != windows[1][0]
    assert labelled[2] and labelled[2][0] != windows[2][0]
    assert labelled[3] == [] and labelled[4] == []
    # predict: the same windows without labels
    predict_x, no_labels, _ = preprocessor(x)
    assert no_labels is None
    _assert_same_inputs(predict_x, recipe_x)


# -------------------------------------------------------------------------------------------------- NER
def test_token_classifier_preprocessor_makes_the_ner_recipes_windows_and_labels(tokenizer):
    rng = random.Random(3)
    tags = ["O", "I-PER", "I-LOC", "B-LOC", "I-MISC"]  # IOB1, as the original CoNLL-2003 files
    sentences = []
    for i, n in enumerate([3, 9, 25, 1, 14, 40]):
        words = _text(rng, n).split()
        if i == 2:
            words[4] = "\x07"  # a word that normalizes to nothing: one [UNK] piece
            words[7] = "housesing"  # three pieces
        sentences.append(ConllSentence(words, [rng.choice(tags) for _ in words], 0, list(range(len(words)))))
    label_list = build_label_list(sentences)
    max_seq_length = 10
    features = convert_sentences_to_features(sentences, tokenizer, label_list, max_seq_length)
    recipe_x, recipe_labels, _ = features_to_arrays(features, pad_to_multiple_of=None)
    word_labels = [[label_list.index(tag) for tag in iob1_to_bio(s.labels)] for s in sentences]
    for model in (BertTokenClassifier, BertFeatureBasedTagger):
        preprocessor = model.preprocessor_class(tokenizer, sequence_length=max_seq_length)
        ours, labels, _ = preprocessor([s.words for s in sentences], word_labels)
        _assert_same_inputs(ours, recipe_x)
        np.testing.assert_array_equal(labels, recipe_labels)
    windows = preprocessor.windows([s.words for s in sentences])
    assert [(w.sentence_index, w.word_indices, w.token_positions) for w in windows] == [
        (f.sentence_index, f.word_indices, f.token_positions) for f in features]
    assert len(features) > len(sentences)  # the long sentences are split into several windows
    assert sorted((f.sentence_index, w) for f in features for w in f.word_indices) == [
        (i, w) for i, s in enumerate(sentences) for w in range(len(s.words))]  # every word once


# ------------------------------------------------------------------------------------- feature extraction
def test_feature_extraction_packs_as_the_tokenizer_and_the_text_classifier_preprocessor(tokenizer):
    rng = random.Random(4)
    lines = [f"{_text(rng, rng.randint(1, 12))} ||| {_text(rng, rng.randint(1, 12))}" for _ in range(6)] + [
        _text(rng, 20), "the cat |||   ", "Who? ||| the dog"]
    examples = feature_extraction.read_examples(lines)
    max_seq_length = 12
    recipe = [feature_extraction.convert_example(tokenizer, a, b, max_seq_length) for _, a, b in examples]
    recipe_x = {key: np.stack([row[1 + k] for row in recipe]) for k, key in enumerate(INPUTS)}
    texts, pairs = [a for _, a, _ in examples], [b or "" for _, _, b in examples]
    _assert_same_inputs(tokenizer(texts, pairs, max_length=max_seq_length, padding="max_length"), recipe_x)
    ours, _, _ = BertClassifier.preprocessor_class(tokenizer, sequence_length=max_seq_length)((texts, pairs))
    _assert_same_inputs(ours, recipe_x)
    assert [tokens for tokens, *_ in recipe] == [
        tokenizer.convert_ids_to_tokens(ids[: int(mask.sum())]) for ids, mask in zip(ours["token_ids"], ours["padding_mask"])]
