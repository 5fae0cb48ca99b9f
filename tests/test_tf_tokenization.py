"""TFBertTokenizer and BertTextPacker: the in-graph twin equals the Python BertTokenizer."""

import os
import sys

import keras
import numpy as np
import pytest
# TensorFlow by nature: deselected with -m "not tensorflow", skipped where TensorFlow is not installed.
pytestmark = pytest.mark.tensorflow
pytest.importorskip("tensorflow")
# The tests of TFBertTokenizer and the in-graph windows alone compute with TensorFlow and tensorflow-text
# whatever the Keras backend: they run once (`backend_independent`); those of BertTextPacker, a Keras layer,
# under every backend.
TENSORFLOW_ONLY = pytest.mark.backend_independent

import tensorflow as tf

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # tokenization_reference.py

from keras_bert_impl.tokenizers.tf_text_packer import BertTextPacker  # noqa: E402
from keras_bert_impl.tokenizers.tf_bert_tokenizer import TFBertTokenizer  # noqa: E402
from keras_bert_impl.tokenizers.bert_tokenizer import BertTokenizer  # noqa: E402
from tokenization_reference import mixed_corpus  # noqa: E402


@pytest.fixture(scope="module")
def python_tokenizer(minilm_path):
    return BertTokenizer.from_pretrained(minilm_path)


@pytest.fixture(scope="module")
def graph_tokenizer(python_tokenizer):
    return TFBertTokenizer(python_tokenizer)


@pytest.fixture(scope="module")
def corpus():
    return mixed_corpus()


def _assert_same_as_python(python_tokenizer, graph_tokenizer, lines):
    ids, starts, ends = graph_tokenizer.tokenize_with_offsets(tf.constant(lines))
    assert ids.dtype == starts.dtype == ends.dtype == tf.int32
    for i, line in enumerate(lines):
        tokens, offsets = python_tokenizer.tokenize_with_offsets(line)
        assert ids[i].numpy().tolist() == python_tokenizer.convert_tokens_to_ids(tokens), repr(line)
        assert list(zip(starts[i].numpy().tolist(), ends[i].numpy().tolist())) == offsets, repr(line)


@TENSORFLOW_ONLY
def test_mixed_corpus_same_ids_and_offsets(python_tokenizer, graph_tokenizer, corpus):
    _assert_same_as_python(python_tokenizer, graph_tokenizer, corpus)


@TENSORFLOW_ONLY
def test_hard_cases(python_tokenizer, graph_tokenizer):
    lines = [
        "ΟΔΟΣ ΟΔΟΣ. ΣΑΣ Σ ΑΣ\u200bΒ ΑΣ\x00 ΑΣ'Β ΑΣ.Β",  # Final sigma in and out of context.
        "full\uff01width\uff1f \uff21\uff22 \u3000 ideo",  # Full-width punctuation stays (no NFKC).
        "soft\u00adhyphen zero\u200bwidth \ufeffbom nul\x00 \ufffd repl esc\x1b[0m",
        "line\u2028sep para\u2029sep nbsp\u00a0x vt\x0bx nel\x85x",
        "한국어 \uf900 \U00020000 \u1fef x\u037ey \u212a \u0130stanbul",
        "[CLS] " + "x" * 201 + " " + "y" * 200,
        "",
    ]
    _assert_same_as_python(python_tokenizer, graph_tokenizer, lines)


@TENSORFLOW_ONLY
def test_cased_vocabulary_in_graph(tmp_path, corpus):
    tokens = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "Hello", "H", "##é", "##llo", "How", "##dy", "!", "ΟΔΟ", "##Σ", "ab"]
    (tmp_path / "vocab.txt").write_text("\n".join(tokens) + "\n", encoding="utf-8")
    python = BertTokenizer(str(tmp_path / "vocab.txt"), do_lower_case=False)
    _assert_same_as_python(python, TFBertTokenizer(python), ["Héllo HOWdy Howdy! ΟΔΟΣ a\u200bb"] + corpus[:80])


@TENSORFLOW_ONLY
@pytest.mark.parametrize("padding", ["longest", "max_length"])
def test_packing_same_as_python(python_tokenizer, graph_tokenizer, corpus, padding):
    texts_a, texts_b = corpus[:30], corpus[30:60]
    for max_length in (4, 7, 16, 64):
        for pairs in (None, texts_b):
            expected = python_tokenizer(texts_a, pairs, max_length=max_length, padding=padding, return_offsets=True)
            got = graph_tokenizer(
                tf.constant(texts_a),
                None if pairs is None else tf.constant(pairs),
                max_length=max_length,
                padding=padding,
                return_offsets=True,
            )
            for key, value in expected.items():
                assert got[key].dtype == tf.int32
                np.testing.assert_array_equal(got[key].numpy(), value, err_msg=f"{key} {max_length} {padding}")


@TENSORFLOW_ONLY
def test_scalar_input_and_tf_function(python_tokenizer, graph_tokenizer):
    fn = tf.function(lambda s: graph_tokenizer(s, max_length=12, padding="max_length"))
    out = fn(tf.constant("Héllo wörld"))
    assert out["token_ids"].shape == (12,)
    expected = python_tokenizer("Héllo wörld", max_length=12, padding="max_length")["token_ids"][0]
    np.testing.assert_array_equal(out["token_ids"].numpy(), expected)


@TENSORFLOW_ONLY
def test_saved_model_round_trip(python_tokenizer, graph_tokenizer, corpus, tmp_path):
    module = tf.Module()
    module.tokenizer = graph_tokenizer
    module.encode = tf.function(
        lambda texts: graph_tokenizer(texts, max_length=32, padding="max_length"),
        input_signature=[tf.TensorSpec([None], tf.string)],
    )
    tf.saved_model.save(module, str(tmp_path / "tokenizer"))
    restored = tf.saved_model.load(str(tmp_path / "tokenizer"))
    got = restored.encode(tf.constant(corpus[:50]))
    expected = python_tokenizer(corpus[:50], max_length=32, padding="max_length")
    np.testing.assert_array_equal(got["token_ids"].numpy(), expected["token_ids"])
    np.testing.assert_array_equal(got["segment_ids"].numpy(), expected["segment_ids"])


def test_packer_in_tf_data(python_tokenizer, graph_tokenizer, corpus):
    packer = BertTextPacker(graph_tokenizer, max_length=24)
    texts_a, texts_b = corpus[:20], corpus[20:40]
    ds = tf.data.Dataset.from_tensor_slices((texts_a, texts_b)).batch(8).map(lambda a, b: packer((a, b)))
    batches = list(ds.as_numpy_iterator())
    expected = python_tokenizer(texts_a, texts_b, max_length=24, padding="max_length")
    for key, value in expected.items():
        np.testing.assert_array_equal(np.concatenate([b[key] for b in batches]), value)
    # Unbatched elements (rank-0 strings) give rank-1 outputs.
    single = next(iter(tf.data.Dataset.from_tensor_slices(texts_a).map(packer)))
    np.testing.assert_array_equal(single["token_ids"].numpy(), expected_single := python_tokenizer(texts_a[0], max_length=24, padding="max_length")["token_ids"][0])
    assert expected_single.shape == (24,)
    # Called eagerly, outputs are tensors of the current backend.
    eager = packer(tf.constant(texts_a[:2]))
    assert keras.ops.is_tensor(eager["token_ids"])
    np.testing.assert_array_equal(keras.ops.convert_to_numpy(eager["token_ids"]), python_tokenizer(texts_a[:2], max_length=24, padding="max_length")["token_ids"])


@pytest.mark.skipif(
    keras.backend.backend() != "tensorflow",
    reason="A Keras model with a string input runs its layers on TensorFlow tensors: only the TensorFlow "
    "backend can hold the packer inside a model (JAX/PyTorch use it in tf.data, tested above).",
)
def test_packer_inside_tf_keras_model(python_tokenizer, graph_tokenizer, corpus):
    texts = keras.Input(shape=(), dtype="string")
    pairs = keras.Input(shape=(), dtype="string")
    outputs = BertTextPacker(graph_tokenizer, max_length=20)((texts, pairs))
    model = keras.Model([texts, pairs], outputs)
    got = model.predict([np.array(corpus[:10], dtype=object), np.array(corpus[10:20], dtype=object)], verbose=0)
    expected = python_tokenizer(corpus[:10], corpus[10:20], max_length=20, padding="max_length")
    for key, value in expected.items():
        np.testing.assert_array_equal(np.asarray(got[key]), value)


def test_bad_input(graph_tokenizer):
    with pytest.raises(ValueError, match="max_length must be at least 3"):
        graph_tokenizer(tf.constant(["a"]), max_length=2)
    # As run_classifier.py: a pair cut to max_length 3 keeps no tokens of either text, [CLS] [SEP] only.
    np.testing.assert_array_equal(graph_tokenizer(tf.constant(["a"]), tf.constant(["b"]), max_length=3)["token_ids"],
                                  graph_tokenizer(tf.constant([""]), max_length=3)["token_ids"])
    with pytest.raises(TypeError, match="texts must be a tf.string"):
        graph_tokenizer(tf.constant([1, 2]))
    with pytest.raises(TypeError, match="tokenizer must be"):
        BertTextPacker(42)


def test_packer_takes_a_pathlib_directory_as_it_takes_its_str(minilm_path):
    import pathlib

    texts = tf.constant(["Hello there, world!"])
    np.testing.assert_array_equal(BertTextPacker(pathlib.Path(minilm_path), max_length=12)(texts)["token_ids"],
                                  BertTextPacker(minilm_path, max_length=12)(texts)["token_ids"])


@TENSORFLOW_ONLY
def test_in_graph_doc_stride_windows_are_the_packers():
    """`tf_bert_tokenizer.doc_stride_windows` (the SavedModel's SQuAD windows) lays out, numbers and flags the
    windows as `packing.doc_stride_windows` (run_squad.py's), on random lengths, strides and empty documents."""
    from keras_bert_impl.tokenizers import packing
    from keras_bert_impl.tokenizers.tf_bert_tokenizer import doc_stride_windows

    rng = np.random.default_rng(0)
    for _ in range(40):
        max_length, stride = int(rng.integers(6, 20)), int(rng.integers(1, 8))
        firsts = [rng.integers(10, 99, int(rng.integers(0, max_length - 3))).tolist() for _ in range(3)]
        documents = [rng.integers(100, 999, int(rng.choice([0, rng.integers(1, 40)]))).tolist() for _ in range(3)]
        out = doc_stride_windows(tf.ragged.constant(firsts, tf.int32), tf.ragged.constant(documents, tf.int32),
                                 max_length, stride, cls_id=2, sep_id=3, pad_id=0)
        out = {key: value.numpy() for key, value in out.items()}
        row = 0
        for b, (first, document) in enumerate(zip(firsts, documents)):
            windows = packing.doc_stride_windows(first, document, max_length, stride) if document else [
                packing.DocWindow(0, 0, *packing.pack_tokens(first), len(first) + 2, [])]
            for window in windows:
                n = int(out["padding_mask"][row].sum())
                tokens = [{"[CLS]": 2, "[SEP]": 3}.get(t, t) for t in window.tokens]
                assert out["token_ids"][row, :n].tolist() == tokens and out["example_index"][row] == b
                assert out["segment_ids"][row, :n].tolist() == window.segment_ids
                assert (out["doc_start"][row], out["doc_length"][row], out["doc_offset"][row]) == (
                    window.start, window.length, window.doc_offset)
                expected = np.zeros(out["max_context"].shape[1], bool)
                expected[window.doc_offset : window.doc_offset + window.length] = window.max_context
                assert out["max_context"][row].tolist() == expected.tolist()
                row += 1
        assert row == len(out["example_index"])


@TENSORFLOW_ONLY
def test_in_graph_text_windows_are_the_packers(python_tokenizer, graph_tokenizer):
    """`TFBertTokenizer.text_windows` (the SavedModel's pooled classification windows) equals
    `packing.pack_windows` (run_glue.py's --long_input=mean|max), an empty text one window too."""
    from keras_bert_impl.tokenizers import packing

    texts = ["John Smith moved to Zürich in 2019 and then to Paris, where he opened a small bakery.", "", "ok",
             "a b c d e f"]
    rows, example_index = packing.pack_windows(python_tokenizer, texts, max_length=8)
    out = graph_tokenizer.text_windows(tf.constant(texts), max_length=8)
    assert out["example_index"].numpy().tolist() == example_index.tolist()
    lengths = out["padding_mask"].numpy().sum(axis=1)
    for key in ("token_ids", "segment_ids", "padding_mask"):
        assert [row[:n].tolist() for row, n in zip(out[key].numpy(), lengths)] == [r.tolist() for r in rows[key]]
