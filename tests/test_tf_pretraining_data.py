"""Tests of keras_bert_impl/data/tf_pretraining_records.py, tf_pretraining_datasets.py and tf_dynamic_masking.py (TFRecords, tf.data readers, dynamic masking) and of
recipes/create_pretraining_data.py. tf.data runs under every Keras backend; so do these tests."""

import collections
import importlib.util
import math
import os
import random
import re
import subprocess
import sys

import keras
import numpy as np
import pytest
# TensorFlow by nature: deselected with -m "not tensorflow", skipped where TensorFlow is not installed.
pytestmark = pytest.mark.tensorflow
pytest.importorskip("tensorflow")

import tensorflow as tf

from keras_bert_impl.data import masked_lm_predictions, pretraining_documents, pretraining_instances
from keras_bert_impl.data import tf_dynamic_masking, tf_pretraining_datasets, tf_pretraining_records

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SPECIALS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
PAD, CLS, SEP, MASK = 0, 2, 3, 4


class WhitespaceTokenizer:
    """Splits on whitespace; `vocab` is specials + `words` (dict token -> id, file order)."""

    def __init__(self, words=()):
        self.vocab = collections.OrderedDict()
        for token in SPECIALS + list(words):
            self.vocab.setdefault(token, len(self.vocab))

    def tokenize(self, text):
        return text.split()

    def convert_tokens_to_ids(self, tokens):
        return [self.vocab.get(t, self.vocab["[UNK]"]) for t in tokens]


def write_corpus(path, num_docs=12, seed=0, pieces=False):
    """A corpus file; returns (path, sorted word list). With `pieces`, some words are "stem ##piece"."""
    r = random.Random(seed)
    words = set()
    lines = []
    for d in range(num_docs):
        for s in range(r.randint(1, 5)):
            sentence = []
            for _ in range(r.randint(2, 12)):
                w = f"w{r.randint(0, 60)}"
                sentence.append(w)
                if pieces and r.random() < 0.3:
                    sentence.append(f"##p{r.randint(0, 9)}")
            words.update(sentence)
            lines.append(" ".join(sentence))
        lines.append("")
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return str(path), sorted(words)


def make_instances(tmp_path, max_seq_length=32, max_pred=5, dupe_factor=2, seed=1, **kwargs):
    corpus, words = write_corpus(tmp_path / "corpus.txt")
    tok = WhitespaceTokenizer(words)
    instances = list(
        pretraining_instances.create_training_instances(
            pretraining_documents.read_documents([corpus], tok), list(tok.vocab), random.Random(seed), max_seq_length=max_seq_length,
            dupe_factor=dupe_factor, max_predictions_per_seq=max_pred, **kwargs,
        )
    )
    return tok, instances


# The parse spec of google-research/bert run_pretraining.py, written out.
def original_spec(seq, pred):
    return {
        "input_ids": tf.io.FixedLenFeature([seq], tf.int64),
        "input_mask": tf.io.FixedLenFeature([seq], tf.int64),
        "segment_ids": tf.io.FixedLenFeature([seq], tf.int64),
        "masked_lm_positions": tf.io.FixedLenFeature([pred], tf.int64),
        "masked_lm_ids": tf.io.FixedLenFeature([pred], tf.int64),
        "masked_lm_weights": tf.io.FixedLenFeature([pred], tf.float32),
        "next_sentence_labels": tf.io.FixedLenFeature([1], tf.int64),
    }


def read_parsed(path, seq, pred):
    spec = original_spec(seq, pred)
    return [
        {k: v.numpy() for k, v in tf.io.parse_single_example(r, spec).items()} for r in tf.data.TFRecordDataset(path)
    ]


# ------------------------------------------------------------------------------------------------
# Writing TFRecords
# ------------------------------------------------------------------------------------------------


def test_records_parse_with_original_spec(tmp_path):
    tok, instances = make_instances(tmp_path)
    out = str(tmp_path / "out.tfrecord")
    n = tf_pretraining_records.write_instances_to_example_files(instances, tok, out, 32, 5)
    assert n == len(instances) > 20
    parsed = read_parsed(out, 32, 5)
    assert len(parsed) == n
    for inst, rec in zip(instances, parsed):
        k = len(inst.tokens)
        assert rec["input_ids"].tolist() == tok.convert_tokens_to_ids(inst.tokens) + [0] * (32 - k)
        assert rec["input_mask"].tolist() == [1] * k + [0] * (32 - k)
        assert rec["segment_ids"].tolist() == inst.segment_ids + [0] * (32 - k)
        m = len(inst.masked_lm_positions)
        assert rec["masked_lm_positions"].tolist() == inst.masked_lm_positions + [0] * (5 - m)
        assert rec["masked_lm_ids"].tolist() == tok.convert_tokens_to_ids(inst.masked_lm_labels) + [0] * (5 - m)
        assert rec["masked_lm_weights"].tolist() == [1.0] * m + [0.0] * (5 - m)
        assert rec["next_sentence_labels"].tolist() == [int(inst.is_random_next)]
    # The value kinds of the original (int64 lists, a float list for the weights), nothing else.
    example = tf.train.Example.FromString(next(iter(tf.data.TFRecordDataset(out))).numpy())
    kinds = {name: f.WhichOneof("kind") for name, f in example.features.feature.items()}
    assert kinds == {n: "float_list" if n == "masked_lm_weights" else "int64_list" for n in original_spec(1, 1)}


def test_round_robin_over_output_files(tmp_path):
    tok, instances = make_instances(tmp_path)
    outs = [str(tmp_path / f"o{i}.tfrecord") for i in range(3)]
    n = tf_pretraining_records.write_instances_to_example_files(instances, tok, ",".join(outs), 32, 5)
    per_file = [read_parsed(o, 32, 5) for o in outs]
    assert [len(p) for p in per_file] == [len(range(i, n, 3)) for i in range(3)]
    for i, inst in enumerate(instances):
        rec = per_file[i % 3][i // 3]
        assert rec["input_ids"][: len(inst.tokens)].tolist() == tok.convert_tokens_to_ids(inst.tokens)
    assert not any(f.endswith(".tmp") for f in os.listdir(tmp_path))


def test_no_partial_file_after_an_exception(tmp_path):
    tok, instances = make_instances(tmp_path)
    existing = tmp_path / "existing.tfrecord"
    existing.write_bytes(b"previous complete file")
    fresh = tmp_path / "fresh.tfrecord"

    def failing():
        yield from instances[:7]
        raise RuntimeError("disk on fire")

    with pytest.raises(RuntimeError, match="disk on fire"):
        tf_pretraining_records.write_instances_to_example_files(failing(), tok, [str(existing), str(fresh)], 32, 5)
    assert existing.read_bytes() == b"previous complete file"  # untouched
    assert not fresh.exists()
    assert sorted(os.listdir(tmp_path)) == ["corpus.txt", "existing.tfrecord"]  # no .tmp left


def test_same_bytes_for_the_same_seed(tmp_path):
    paths = []
    for name, seed in (("a", 3), ("b", 3), ("c", 4)):
        tok, instances = make_instances(tmp_path, seed=seed, do_whole_word_mask=True, shard_size_documents=5)
        paths.append(tmp_path / f"{name}.tfrecord")
        tf_pretraining_records.write_instances_to_example_files(iter(instances), tok, str(paths[-1]), 32, 5)
    a, b, c = (p.read_bytes() for p in paths)
    assert a == b and len(a) > 1000
    assert a != c


# ------------------------------------------------------------------------------------------------
# Reading
# ------------------------------------------------------------------------------------------------


def _original_style_example(input_ids, segment_ids, positions, ids, label, seq, pred):
    """A tf.train.Example built as google-research/bert's write_instance_to_example_files builds it."""
    def int_feature(values):
        return tf.train.Feature(int64_list=tf.train.Int64List(value=list(values)))

    input_mask = [1] * len(input_ids)
    pad = lambda v, n, x=0: list(v) + [x] * (n - len(v))  # noqa: E731
    features = collections.OrderedDict()
    features["input_ids"] = int_feature(pad(input_ids, seq))
    features["input_mask"] = int_feature(pad(input_mask, seq))
    features["segment_ids"] = int_feature(pad(segment_ids, seq))
    features["masked_lm_positions"] = int_feature(pad(positions, pred))
    features["masked_lm_ids"] = int_feature(pad(ids, pred))
    features["masked_lm_weights"] = tf.train.Feature(
        float_list=tf.train.FloatList(value=pad([1.0] * len(ids), pred, 0.0))
    )
    features["next_sentence_labels"] = int_feature([label])
    return tf.train.Example(features=tf.train.Features(feature=features))


def test_pretraining_dataset_reads_original_files(tmp_path):
    path = str(tmp_path / "theirs.tfrecord")
    rows = []
    with tf.io.TFRecordWriter(path) as w:
        for i in range(10):
            n = 5 + i
            input_ids = [CLS] + [10 + i] * (n - 3) + [SEP, 20 + i, SEP]
            segment_ids = [0] * (n - 1) + [1, 1]
            row = (input_ids, segment_ids, [1, 2][: 1 + i % 2], [10 + i, 10 + i][: 1 + i % 2], i % 2)
            rows.append(row)
            w.write(_original_style_example(*row, 16, 3).SerializeToString())
    ds = tf_pretraining_datasets.pretraining_dataset(path, 16, 3, batch_size=4, is_training=False)
    batches = list(ds)
    assert [int(b[0]["token_ids"].shape[0]) for b in batches] == [4, 4, 2]
    x, y = batches[0]
    assert set(x) == {"token_ids", "segment_ids", "padding_mask", "masked_lm_positions"}
    assert set(y) == {"masked_lm_ids", "masked_lm_weights", "next_sentence_labels"}
    assert all(v.dtype == tf.int32 for v in x.values())
    assert y["masked_lm_ids"].dtype == tf.int32 and y["next_sentence_labels"].dtype == tf.int32
    assert y["masked_lm_weights"].dtype == tf.float32
    assert y["next_sentence_labels"].shape == (4,)
    i = 1
    input_ids, segment_ids, positions, ids, label = rows[i]
    assert x["token_ids"][i].numpy().tolist() == input_ids + [0] * (16 - len(input_ids))
    assert x["padding_mask"][i].numpy().tolist() == [1] * len(input_ids) + [0] * (16 - len(input_ids))
    assert x["segment_ids"][i].numpy().tolist() == segment_ids + [0] * (16 - len(segment_ids))
    assert x["masked_lm_positions"][i].numpy().tolist() == [1, 2, 0]
    assert y["masked_lm_ids"][i].numpy().tolist() == [11, 11, 0]
    assert y["masked_lm_weights"][i].numpy().tolist() == [1.0, 1.0, 0.0]
    assert [int(v) for b in batches for v in b[1]["next_sentence_labels"]] == [r[4] for r in rows]


def test_pretraining_dataset_training_mode(tmp_path):
    tok, instances = make_instances(tmp_path)
    outs = [str(tmp_path / f"o{i}.tfrecord") for i in range(2)]
    n = tf_pretraining_records.write_instances_to_example_files(instances, tok, outs, 32, 5)
    ds = tf_pretraining_datasets.pretraining_dataset(str(tmp_path / "o*.tfrecord"), 32, 5, batch_size=8, seed=0)
    # Static batch dimension (drop_remainder) and an infinite, repeated stream.
    assert ds.element_spec[0]["token_ids"].shape == (8, 32)
    assert ds.element_spec[1]["next_sentence_labels"].shape == (8,)
    seen = [tuple(row) for x, _ in ds.take(3 * n // 8 + 3) for row in x["token_ids"].numpy().tolist()]
    expected = {tuple(tok.convert_tokens_to_ids(i.tokens) + [0] * (32 - len(i.tokens))) for i in instances}
    assert set(seen) == expected  # every instance read, nothing else
    first_epoch = seen[: n - n % 8]
    assert first_epoch != [r for r in sorted(expected)][: len(first_epoch)]  # shuffled


def test_keras_fit_consumes_the_dataset(tmp_path):
    tok, instances = make_instances(tmp_path, max_seq_length=16, max_pred=3)
    path = str(tmp_path / "o.tfrecord")
    tf_pretraining_records.write_instances_to_example_files(instances, tok, path, 16, 3)
    ds = tf_pretraining_datasets.pretraining_dataset(path, 16, 3, batch_size=4, seed=0)
    vocab_size = len(tok.vocab)

    inputs = {
        name: keras.Input((16,), dtype="int32", name=name) for name in ("token_ids", "segment_ids", "padding_mask")
    }
    inputs["masked_lm_positions"] = keras.Input((3,), dtype="int32", name="masked_lm_positions")
    h = keras.layers.Embedding(vocab_size, 8)(inputs["token_ids"])
    gathered = keras.ops.take_along_axis(
        h, keras.ops.expand_dims(inputs["masked_lm_positions"], -1) * keras.ops.ones((1, 1, 8), "int32"), axis=1
    )
    outputs = {"mlm": keras.layers.Dense(vocab_size)(gathered), "nsp": keras.layers.Dense(2)(keras.ops.mean(h, 1))}

    class Pretrainer(keras.Model):
        def compute_loss(self, x=None, y=None, y_pred=None, sample_weight=None, training=True):
            w = y["masked_lm_weights"]
            mlm = keras.losses.sparse_categorical_crossentropy(y["masked_lm_ids"], y_pred["mlm"], from_logits=True)
            nsp = keras.losses.sparse_categorical_crossentropy(
                y["next_sentence_labels"], y_pred["nsp"], from_logits=True
            )
            return keras.ops.sum(mlm * w) / keras.ops.maximum(keras.ops.sum(w), 1.0) + keras.ops.mean(nsp)

    model = Pretrainer(inputs, outputs)
    model.compile(optimizer=keras.optimizers.Adam(0.05))
    history = model.fit(ds, steps_per_epoch=10, epochs=2, verbose=0, shuffle=False)
    losses = history.history["loss"]
    assert all(np.isfinite(losses)) and losses[1] < losses[0]


# ------------------------------------------------------------------------------------------------
# Dynamic masking
# ------------------------------------------------------------------------------------------------


def unmasked_examples(num, seq_len, vocab_size, seed, pieces=False):
    """Packed unmasked examples of random lengths: [CLS] A [SEP] B [SEP] [PAD]...; ids >= 10 are words."""
    r = np.random.default_rng(seed)
    tok = np.zeros([num, seq_len], np.int32)
    seg = np.zeros([num, seq_len], np.int32)
    ws = np.ones([num, seq_len], np.int32)
    for i in range(num):
        n = int(r.integers(5, seq_len + 1))
        a = int(r.integers(1, n - 3))
        tok[i, :n] = r.integers(10, vocab_size, n)
        tok[i, [0, a + 1, n - 1]] = [CLS, SEP, SEP]
        seg[i, a + 2 : n] = 1
        if pieces:
            ws[i, :n] = r.random(n) < 0.6  # ~40% of the words continue the previous one
            ws[i, [0, 1, a + 1, a + 2, n - 1]] = 1
    return {
        "token_ids": tok,
        "segment_ids": seg,
        "padding_mask": (np.arange(seq_len)[None] < (tok != 0).sum(1, keepdims=True)).astype(np.int32),
        "word_starts": ws,
        "next_sentence_labels": (np.arange(num) % 2).astype(np.int32),
    }


MASKING = dict(vocab_size=30000, mask_token_id=MASK, special_token_ids=[PAD, CLS, SEP])


def _masked_arrays(ds):
    xs, ys = zip(*[(x, y) for x, y in ds.as_numpy_iterator()])
    def cat(ds):
        return {k: np.concatenate([d[k] for d in ds]) for k in ds[0]}

    return cat(xs), cat(ys)


def _check_masking(f, x, y, prob, max_pred):
    """Checks the per-example invariants; yields (example, predictions, real tokens, positions)."""
    for i in range(len(f["token_ids"])):
        tok, pad = f["token_ids"][i], f["padding_mask"][i]
        n = int(pad.sum())
        weights = y["masked_lm_weights"][i]
        k = int(weights.sum())
        assert weights.tolist() == [1.0] * k + [0.0] * (max_pred - k)
        positions = x["masked_lm_positions"][i][:k]
        assert x["masked_lm_positions"][i][k:].tolist() == [0] * (max_pred - k)
        assert positions.tolist() == sorted(set(positions.tolist()))
        assert all(pad[p] == 1 and tok[p] not in (PAD, CLS, SEP) for p in positions)  # never [CLS]/[SEP]/[PAD]
        assert y["masked_lm_ids"][i][:k].tolist() == tok[positions].tolist()
        assert y["masked_lm_ids"][i][k:].tolist() == [0] * (max_pred - k)
        others = np.setdiff1d(np.arange(len(tok)), positions)
        assert (x["token_ids"][i][others] == tok[others]).all()  # only predicted positions change
        assert (x["segment_ids"][i] == f["segment_ids"][i]).all() and (x["padding_mask"][i] == pad).all()
        assert y["next_sentence_labels"][i] == f["next_sentence_labels"][i]
        yield i, k, n, positions


def _assert_proportions(counts, expected):
    n = sum(counts.values())
    for key, p in expected.items():
        assert abs(counts[key] / n - p) < 4 * math.sqrt(p * (1 - p) / n), (key, counts)


def test_dynamic_masking_count_positions_and_proportions():
    f = unmasked_examples(1200, 128, 30000, seed=0)
    ds = tf_dynamic_masking.apply_dynamic_masking(tf.data.Dataset.from_tensor_slices(f).batch(100), seed=1, **MASKING)
    x, y = _masked_arrays(ds)
    assert x["token_ids"].dtype == np.int32 and y["masked_lm_weights"].dtype == np.float32
    counts = collections.Counter()
    for i, k, n, positions in _check_masking(f, x, y, 0.15, 20):
        assert k == min(20, max(1, int(round(n * 0.15))))  # the original's num_to_predict
        for p in positions:
            new, old = x["token_ids"][i][p], f["token_ids"][i][p]
            counts["mask" if new == MASK else "keep" if new == old else "random"] += 1
    assert sum(counts.values()) > 10000
    _assert_proportions(counts, {"mask": 0.8, "keep": 0.1, "random": 0.1})


def test_dynamic_masking_unbatched_and_rounding():
    # n = 30 real tokens, 0.15 * 30 = 4.5 -> 4 (round half to even, as Python's round in the original).
    f = unmasked_examples(1, 40, 100, seed=1)
    f["token_ids"][0] = [CLS] + list(range(10, 23)) + [SEP] + list(range(30, 44)) + [SEP] + [PAD] * 10
    f["padding_mask"][0] = [1] * 30 + [0] * 10
    ds = tf_dynamic_masking.apply_dynamic_masking(tf.data.Dataset.from_tensor_slices(f), seed=0, max_predictions_per_seq=6, **MASKING)
    x, y = next(iter(ds))
    assert x["token_ids"].shape == (40,) and y["next_sentence_labels"].shape == ()
    assert int(tf.reduce_sum(y["masked_lm_weights"])) == 4 == masked_lm_predictions.num_masked_lm_predictions(30, 0.15, 6)


def test_dynamic_masking_fresh_every_epoch_and_reproducible():
    f = unmasked_examples(64, 64, 1000, seed=2)

    def build():
        return tf_dynamic_masking.apply_dynamic_masking(tf.data.Dataset.from_tensor_slices(f).batch(16), seed=7, **MASKING)

    ds = build()
    epoch1 = _masked_arrays(ds)[0]["masked_lm_positions"]
    epoch2 = _masked_arrays(ds)[0]["masked_lm_positions"]
    assert (epoch1 != epoch2).any(axis=1).mean() > 0.9  # new masks for (nearly) every example
    assert (_masked_arrays(build())[0]["masked_lm_positions"] == epoch1).all()  # same seed, same epochs
    repeated = [x["masked_lm_positions"] for x, _ in build().repeat(2).as_numpy_iterator()]
    assert (np.concatenate(repeated[:4]) == epoch1).all() and (np.concatenate(repeated[4:]) != epoch1).any()


def test_dynamic_whole_word_masking():
    f = unmasked_examples(800, 64, 30000, seed=3, pieces=True)
    ds = tf_dynamic_masking.apply_dynamic_masking(
        tf.data.Dataset.from_tensor_slices(f).batch(100), seed=3, whole_word_mask=True, **MASKING
    )
    x, y = _masked_arrays(ds)
    word_kinds = collections.Counter()
    multi = 0
    for i, k, n, positions in _check_masking(f, x, y, 0.15, 20):
        budget = min(20, max(1, int(round(n * 0.15))))
        assert k <= budget  # (0 only when every word is longer than the budget, as in the original)
        chosen = set(positions.tolist())
        tok = f["token_ids"][i]
        starts = [
            p for p in range(n)
            if tok[p] not in (CLS, SEP) and (f["word_starts"][i][p] or tok[p - 1] in (CLS, SEP))
        ]
        for s in starts:
            e = s + 1
            while e < n and tok[e] not in (CLS, SEP) and not f["word_starts"][i][e]:
                e += 1
            covered = [p in chosen for p in range(s, e)]
            assert all(covered) or not any(covered)  # whole words only
            # Greedy with skipping: a word left out did not fit in what remained when it came up.
            assert any(covered) or e - s > budget - k
            if all(covered):
                new = x["token_ids"][i][s:e]
                kinds = {"mask" if a == MASK else "keep" if a == b else "random" for a, b in zip(new, tok[s:e])}
                assert len(kinds) == 1  # one 80/10/10 decision per word
                word_kinds[kinds.pop()] += 1
                multi += e - s > 1
    assert multi > 500
    _assert_proportions(word_kinds, {"mask": 0.8, "keep": 0.1, "random": 0.1})


def test_unmasked_pairs_from_text_then_dynamic_masking(tmp_path):
    corpus, words = write_corpus(tmp_path / "corpus.txt", pieces=True)
    tok = WhitespaceTokenizer(words)
    ds = tf_pretraining_datasets.unmasked_dataset_from_text([corpus], tok, max_seq_length=24, shard_size_documents=5, random_seed=9)
    got = list(ds.as_numpy_iterator())
    expected = list(
        pretraining_instances.create_training_instances(
            pretraining_documents.read_documents([corpus], tok), list(tok.vocab), random.Random(9), max_seq_length=24, dupe_factor=1,
            shard_size_documents=5, do_masking=False,
        )
    )
    assert len(got) == len(expected) > 10
    for g, inst in zip(got, expected):
        n = len(inst.tokens)
        assert g["token_ids"].tolist() == tok.convert_tokens_to_ids(inst.tokens) + [0] * (24 - n)
        assert g["segment_ids"].tolist() == inst.segment_ids + [0] * (24 - n)
        assert g["padding_mask"].tolist() == [1] * n + [0] * (24 - n)
        assert g["word_starts"][:n].tolist() == [int(not t.startswith("##")) for t in inst.tokens]
        assert g["next_sentence_labels"] == int(inst.is_random_next)
        assert "[MASK]" not in inst.tokens
    masked = tf_dynamic_masking.apply_dynamic_masking(
        ds.batch(4, drop_remainder=True), max_predictions_per_seq=5, whole_word_mask=True, seed=0,
        **tf_dynamic_masking.masking_token_ids(tok.vocab),
    )
    x, y = next(iter(masked))  # the structure pretraining_dataset gives
    assert {k: (v.shape.as_list(), v.dtype) for k, v in x.items()} == {
        "token_ids": ([4, 24], tf.int32), "segment_ids": ([4, 24], tf.int32), "padding_mask": ([4, 24], tf.int32),
        "masked_lm_positions": ([4, 5], tf.int32),
    }
    assert {k: (v.shape.as_list(), v.dtype) for k, v in y.items()} == {
        "masked_lm_ids": ([4, 5], tf.int32), "masked_lm_weights": ([4, 5], tf.float32),
        "next_sentence_labels": ([4], tf.int32),
    }


def test_unmasked_records_masked_on_the_fly(tmp_path):
    tok, instances = make_instances(tmp_path, max_seq_length=24, do_masking=False)
    path = str(tmp_path / "unmasked.tfrecord")
    tf_pretraining_records.write_instances_to_example_files(instances, tok, path, 24, 0, with_masks=False)
    ds = tf_pretraining_datasets.unmasked_pretraining_dataset(
        path, 24, 5, is_training=False, max_predictions_per_seq=4, seed=0, **tf_dynamic_masking.masking_token_ids(tok.vocab)
    )
    x, y = _masked_arrays(ds)
    assert len(x["token_ids"]) == len(instances)
    for i, inst in enumerate(instances):
        n = len(inst.tokens)
        original = np.array(tok.convert_tokens_to_ids(inst.tokens))
        k = int(y["masked_lm_weights"][i].sum())
        assert k == min(4, max(1, int(round(n * 0.15))))
        positions = x["masked_lm_positions"][i][:k]
        assert y["masked_lm_ids"][i][:k].tolist() == original[positions].tolist()
        keep = np.setdiff1d(np.arange(n), positions)
        assert (x["token_ids"][i][keep] == original[keep]).all()
        assert y["next_sentence_labels"][i] == int(inst.is_random_next)


# ------------------------------------------------------------------------------------------------
# The recipe
# ------------------------------------------------------------------------------------------------


def _load_recipe():
    spec = importlib.util.spec_from_file_location(
        "create_pretraining_data_recipe", os.path.join(REPO, "recipes", "create_pretraining_data.py")
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_recipe_flags_in_process(tmp_path):
    recipe = _load_recipe()
    corpus, words = write_corpus(tmp_path / "c1.txt", seed=4, pieces=True)
    write_corpus(tmp_path / "c2.txt", seed=5, pieces=True)
    tok = WhitespaceTokenizer(words + [f"w{i}" for i in range(61)] + [f"##p{i}" for i in range(10)])
    args = recipe.build_parser().parse_args(
        ["--input_file=x", "--output_file=y", "--vocab_file=v", "--nodo_lower_case", "--do_whole_word_mask"]
    )
    assert (args.do_lower_case, args.do_whole_word_mask, args.sentence_order) == (False, True, False)
    assert (args.max_seq_length, args.max_predictions_per_seq) == (128, 20)
    assert (args.random_seed, args.dupe_factor) == (12345, 10)
    assert (args.masked_lm_prob, args.short_seq_prob) == (0.15, 0.1)
    args = recipe.build_parser().parse_args(["--input_file=x", "--output_file=y", "--vocab_file=v",
                                             "--do_lower_case=False", "--sentence_order=true"])
    assert (args.do_lower_case, args.sentence_order) == (False, True)

    outs = [str(tmp_path / "out" / f"s{i}.tfrecord") for i in range(2)]
    common = [f"--input_file={tmp_path}/c*.txt", "--vocab_file=unused", "--max_seq_length=32",
              "--max_predictions_per_seq=5", "--dupe_factor=2", "--shard_size_documents=6"]
    n = recipe.main(common + [f"--output_file={','.join(outs)}", "--sentence_order"], tokenizer=tok)
    parsed = read_parsed(outs[0], 32, 5) + read_parsed(outs[1], 32, 5)
    assert len(parsed) == n > 20
    labels = [int(p["next_sentence_labels"][0]) for p in parsed]
    assert 0 < sum(labels) < n
    unmasked = str(tmp_path / "out" / "unmasked.tfrecord")
    m = recipe.main(common + [f"--output_file={unmasked}", "--dynamic_masking"], tokenizer=tok)
    records = list(tf.data.TFRecordDataset(unmasked))
    assert len(records) == m > 20
    parsed = tf.io.parse_single_example(records[0], tf_pretraining_records.unmasked_feature_spec(32))
    assert tok.vocab["[MASK]"] not in parsed["input_ids"].numpy()


def test_recipe_subprocess_with_the_real_tokenizer(tmp_path, minilm_vocab_file):
    pytest.importorskip("keras_bert_impl.tokenizers.bert_tokenizer")
    corpus = tmp_path / "corpus.txt"
    corpus.write_text(
        "The quick brown fox jumps over the lazy dog.\nIt was unbelievably philharmonic.\n"
        "Nobody saw it.\n\nA second document starts here.\nIt has two sentences.\n\n"
        "Third document, a single sentence about transformers and tokenization.\n",
        encoding="utf-8",
    )
    outs = [str(tmp_path / "a.tfrecord"), str(tmp_path / "b.tfrecord")]
    argv = [f"--input_file={corpus}", f"--output_file={','.join(outs)}", f"--vocab_file={minilm_vocab_file}",
            "--do_lower_case=True", "--do_whole_word_mask", "--max_seq_length=24", "--max_predictions_per_seq=4",
            "--dupe_factor=3", "--random_seed=7"]
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3")
    proc = subprocess.run([sys.executable, os.path.join(REPO, "recipes", "create_pretraining_data.py"), *argv],
                          capture_output=True, text=True, env=env, cwd=REPO, timeout=300)
    assert proc.returncode == 0, proc.stderr
    total = int(re.search(r"Wrote (\d+) total instances", proc.stderr).group(1))
    assert re.search(r"documents read: 3, instances written: %d" % total, proc.stderr)
    parsed = read_parsed(outs[0], 24, 4) + read_parsed(outs[1], 24, 4)
    assert len(parsed) == total > 5

    from keras_bert_impl.tokenizers.bert_tokenizer import BertTokenizer

    tokenizer = BertTokenizer(minilm_vocab_file, do_lower_case=True)
    id_to_token = {i: t for t, i in tokenizer.vocab.items()}
    corpus_ids = set(tokenizer.convert_tokens_to_ids(tokenizer.tokenize(corpus.read_text())))
    for p in parsed:
        n = int(p["input_mask"].sum())
        ids = p["input_ids"][:n].tolist()
        assert id_to_token[ids[0]] == "[CLS]" and id_to_token[ids[-1]] == "[SEP]"
        k = int(p["masked_lm_weights"].sum())
        assert set(p["masked_lm_ids"][:k].tolist()) <= corpus_ids  # labels are the corpus' own tokens
    # Same flags in-process: the same bytes.
    again = [str(tmp_path / "a2.tfrecord"), str(tmp_path / "b2.tfrecord")]
    argv[1] = f"--output_file={','.join(again)}"
    _load_recipe().main(argv)
    for first, second in zip(outs, again):
        assert open(first, "rb").read() == open(second, "rb").read()
