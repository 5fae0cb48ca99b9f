"""Masking strategies of paper Table 8 / appendix C.2: the MASK / SAME / RND split of the chosen tokens, in the
Python generator (`pretraining_instances.create_training_instances`), in dynamic masking
(`tf_dynamic_masking.apply_dynamic_masking`), in `BertMaskedLMPreprocessor` and in the recipe's flags.
tf.data runs under every Keras backend; so do these tests."""

import collections
import math
import random

import numpy as np
import pytest
# TensorFlow by nature: deselected with -m "not tensorflow", skipped where TensorFlow is not installed.
pytestmark = pytest.mark.tensorflow
pytest.importorskip("tensorflow")

import tensorflow as tf

from keras_bert_impl.data import masked_lm_predictions, pretraining_documents, pretraining_instances
from keras_bert_impl.data import tf_dynamic_masking, tf_pretraining_datasets
from keras_bert_impl.preprocessors.masked_lm_preprocessor import BertMaskedLMPreprocessor
from keras_bert_impl.tokenizers.bert_tokenizer import BertTokenizer
from keras_bert_impl.utils.errors import UserInputError

SPECIALS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
NUM_WORDS = 995  # vocabulary of 1000 tokens: a random replacement is uniform over all 1000
VOCAB_SIZE = len(SPECIALS) + NUM_WORDS

# Paper Table 8's rows, (MASK, SAME, RND).
TABLE_8_SPLITS = [(0.8, 0.1, 0.1), (1.0, 0.0, 0.0), (0.8, 0.0, 0.2), (0.8, 0.2, 0.0), (0.0, 0.2, 0.8), (0.0, 0.0, 1.0)]


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    """A vocabulary file and a corpus of 300 random 12-word sentences (30 documents of 10) over it."""
    directory = tmp_path_factory.mktemp("masking")
    words = [f"w{i}" for i in range(NUM_WORDS)]
    vocab_file = directory / "vocab.txt"
    vocab_file.write_text("\n".join(SPECIALS + words) + "\n")
    rng = random.Random(7)
    documents = ["\n".join(" ".join(rng.choice(words) for _ in range(12)) for _ in range(10)) for _ in range(30)]
    corpus_file = directory / "corpus.txt"
    corpus_file.write_text("\n\n".join(documents) + "\n")
    return BertTokenizer(str(vocab_file)), str(corpus_file)


def _expected_fractions(mask, keep, rnd):
    """P(output is [MASK]), P(output is the original token), P(anything else) for a chosen token.

    A random replacement is uniform over the VOCAB_SIZE tokens, so it lands on [MASK] or on the original
    token (a word, never [MASK]) with probability 1 / VOCAB_SIZE each: those collisions count as [MASK] /
    same, as an observer of the output sees them.
    """
    collide = rnd / VOCAB_SIZE
    return {"mask": mask + collide, "same": keep + collide, "random": rnd * (1 - 2 / VOCAB_SIZE)}


def _classify(output_token, label):
    return "mask" if output_token == "[MASK]" else "same" if output_token == label else "random"


def _assert_split(counts, split):
    """Each outcome's fraction within 4 binomial standard deviations of its expectation.

    The masked positions are independent trials (one uniform draw, or two, per one-piece word), so the
    count of an outcome of probability p among n is Binomial(n, p): 4 sigma = 4 sqrt(p (1 - p) / n) leaves
    a chance of about 6e-5 per check of a false failure. An outcome of probability 0 must never occur.
    """
    n = sum(counts.values())
    assert n > 4000, counts  # enough trials for a tolerance of at most 0.025 at p = 0.5
    for outcome, p in _expected_fractions(*split).items():
        tolerance = 4 * math.sqrt(p * (1 - p) / n)
        assert abs(counts[outcome] / n - p) <= tolerance, (split, outcome, dict(counts), n, p, tolerance)


def _generator_instances(tokenizer, corpus_file, **split):
    return list(pretraining_instances.create_training_instances(
        pretraining_documents.read_documents([corpus_file], tokenizer), list(tokenizer.vocab.keys()), random.Random(12345),
        max_seq_length=128, dupe_factor=10, **split))


def _dynamic_batch(tokenizer, corpus_file, **split):
    ds = tf_pretraining_datasets.unmasked_dataset_from_text([corpus_file], tokenizer, 128, dupe_factor=10).batch(100000)
    ds = tf_dynamic_masking.apply_dynamic_masking(ds, max_predictions_per_seq=20, seed=3, **tf_dynamic_masking.masking_token_ids(tokenizer.vocab),
                                    **split)
    x, y = next(iter(ds))
    return {k: v.numpy() for k, v in {**x, **y}.items()}


@pytest.mark.parametrize("split", TABLE_8_SPLITS, ids=lambda s: "/".join(str(round(p * 100)) for p in s))
def test_generator_and_dynamic_masking_match_each_table_8_split(corpus, split):
    tokenizer, corpus_file = corpus
    names = dict(zip(("mask_token_prob", "keep_token_prob", "random_token_prob"), split))

    counts = collections.Counter()
    for instance in _generator_instances(tokenizer, corpus_file, **names):
        for position, label in zip(instance.masked_lm_positions, instance.masked_lm_labels):
            counts[_classify(instance.tokens[position], label)] += 1
    _assert_split(counts, split)

    batch = _dynamic_batch(tokenizer, corpus_file, **names)
    mask_id = tokenizer.vocab["[MASK]"]
    outputs = np.take_along_axis(batch["token_ids"], batch["masked_lm_positions"], axis=1)
    valid = batch["masked_lm_weights"] > 0
    labels, outputs = batch["masked_lm_ids"][valid], outputs[valid]
    counts = collections.Counter(
        "mask" if out == mask_id else "same" if out == label else "random" for out, label in zip(outputs, labels))
    _assert_split(counts, split)


def test_default_split_reproduces_the_default_output_exactly(corpus):
    tokenizer, corpus_file = corpus
    explicit = dict(mask_token_prob=0.8, keep_token_prob=0.1, random_token_prob=0.1)
    assert _generator_instances(tokenizer, corpus_file) == _generator_instances(tokenizer, corpus_file, **explicit)
    default, given = _dynamic_batch(tokenizer, corpus_file), _dynamic_batch(tokenizer, corpus_file, **explicit)
    for key in default:
        np.testing.assert_array_equal(default[key], given[key])

    # The generator's second draw keeps a word below keep / (keep + random): exactly the original's 0.5.
    assert 0.1 / (0.1 + 0.1) == 0.5 and 1.0 - 0.1 == 0.9  # the dynamic masking's random threshold: 0.9
    tokens = ["[CLS]"] + [f"w{i}" for i in range(40)] + ["[SEP]"]
    reference = masked_lm_predictions.create_masked_lm_predictions(tokens, 0.15, 20, list(tokenizer.vocab), random.Random(5))
    assert masked_lm_predictions.create_masked_lm_predictions(tokens, 0.15, 20, list(tokenizer.vocab), random.Random(5),
                                              **explicit) == reference

    # The preprocessor: the default and the explicit split give the same masks; the split round-trips.
    preprocessor = BertMaskedLMPreprocessor(tokenizer, sequence_length=32, max_predictions_per_seq=5)
    explicit_preprocessor = BertMaskedLMPreprocessor(tokenizer, sequence_length=32, max_predictions_per_seq=5,
                                                     **explicit)
    texts = (["w1 w2 w3 w4 w5 w6 w7"] * 4, ["w8 w9 w10 w11 w12"] * 4)
    x_default, _, _ = preprocessor(texts, [0, 1, 0, 1])
    x_explicit, _, _ = explicit_preprocessor(texts, [0, 1, 0, 1])
    for key in x_default:
        np.testing.assert_array_equal(x_default[key], x_explicit[key])
    all_random = BertMaskedLMPreprocessor(tokenizer, sequence_length=32, max_predictions_per_seq=5,
                                          mask_token_prob=0.0, keep_token_prob=0.0, random_token_prob=1.0)
    config = all_random.get_config()
    assert (config["mask_token_prob"], config["keep_token_prob"], config["random_token_prob"]) == (0.0, 0.0, 1.0)
    restored = BertMaskedLMPreprocessor.from_config(config)
    assert restored.random_token_prob == 1.0 and restored.mask_token_prob == 0.0
    x_random, _, _ = all_random(texts, [0, 1, 0, 1])
    masked = np.take_along_axis(x_random["token_ids"], x_random["masked_lm_positions"], axis=1)
    assert not np.any(masked == tokenizer.vocab["[MASK]"])  # 1/1000 chance per position to draw [MASK]


@pytest.mark.parametrize("split, message", [
    ((0.8, 0.1, 0.2), "mask_token_prob + keep_token_prob + random_token_prob must sum to 1, got 0.8 + 0.1 + 0.2 = 1.1."),
    ((1.5, -0.25, -0.25), "mask_token_prob must be in [0, 1], got 1.5."),
    ((0.5, 1.2, -0.7), "keep_token_prob must be in [0, 1], got 1.2."),
    ((0.5, 0.5, -0.0001), "random_token_prob must be in [0, 1], got -0.0001."),
])
def test_invalid_split_raises_one_line_error_naming_the_argument(corpus, split, message, capsys):
    tokenizer, _ = corpus
    names = dict(zip(("mask_token_prob", "keep_token_prob", "random_token_prob"), split))
    tokens = ["[CLS]", "w1", "w2", "[SEP]"]
    calls = [
        lambda: masked_lm_predictions.create_masked_lm_predictions(tokens, 0.15, 20, ["w1"], random.Random(0), **names),
        lambda: next(pretraining_instances.create_training_instances([], ["[MASK]"], random.Random(0), **names), None),
        lambda: tf_dynamic_masking.apply_dynamic_masking(tf.data.Dataset.range(1), vocab_size=10, mask_token_id=4,
                                           special_token_ids=[0], **names),
        lambda: BertMaskedLMPreprocessor(tokenizer, sequence_length=8, **names),
    ]
    for call in calls:
        with pytest.raises(UserInputError) as error:
            call()
        assert str(error.value) == message

    import importlib.util
    import os
    path = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "recipes",
                        "create_pretraining_data.py")
    spec = importlib.util.spec_from_file_location("create_pretraining_data_recipe", path)
    recipe = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(recipe)
    argv = ["--input_file=unused.txt", "--output_file=unused.tfrecord", "--vocab_file=unused.txt",
            *(f"--{name}={value}" for name, value in names.items())]
    with pytest.raises(SystemExit) as exit_info:
        recipe.main(argv)
    assert exit_info.value.code == 2
    assert capsys.readouterr().err.strip() == f"error: {message}"
