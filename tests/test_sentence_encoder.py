"""BertSentenceEncoder against sentence-transformers: all-MiniLM-L6-v2's embeddings of held-out sentences,
the directory it writes (which `SentenceTransformer` loads and encodes identically), its pooling modes against
sentence-transformers' `Pooling` module, the sentence-transformers layouts it reads and refuses, `encode`'s
batching and options, LoRA and int8. (Training, `.keras` and `save_pretrained` round trips on a tiny model:
tests/test_task_models.py; the losses: tests/test_sentence_losses.py.)"""

import json
import os
import shutil

import keras
import numpy as np
import pytest

from keras_bert_impl import BertBackbone, BertSentenceEncoder, BertSentenceEncoderPreprocessor, SentencePooling
from keras_bert_impl.checkpoints.model_directory import ModelDirectory
from keras_bert_impl.config import BertConfig
from keras_bert_impl.tokenizers.bert_tokenizer import BertTokenizer
from keras_bert_impl.utils.errors import UserInputError
from keras_bert_impl.utils.keras_compat import flatten_layers
from tests.backend_utils import to_numpy
from tests.tiny_model_files import TINY, VOCAB

HERE = os.path.dirname(os.path.abspath(__file__))


def _held_out_sentences():
    with open(os.path.join(HERE, "data", "held_out_sentences.txt"), encoding="utf-8") as f:
        return [line.rstrip("\n") for line in f]


@pytest.fixture(scope="module")
def minilm(minilm_path):
    return BertSentenceEncoder.from_pretrained(minilm_path)


@pytest.fixture(scope="module")
def sentence_transformer(minilm_path):
    from sentence_transformers import SentenceTransformer

    return SentenceTransformer(str(minilm_path), device="cpu")


def test_minilm_encodes_80_held_out_sentences_as_sentence_transformers(minilm, sentence_transformer):
    sentences = _held_out_sentences()
    assert len(sentences) == 80
    # Two texts longer than the checkpoint's max_seq_length (256): both cut at 256 tokens.
    sentences += [" ".join(sentences[:30]), " ".join(sentences[30:70])]
    assert (minilm.pooling, minilm.normalize, minilm.preprocessor.sequence_length) == (("mean",), True, 256)
    expected = sentence_transformer.encode(sentences, batch_size=32)
    embeddings = minilm.encode(sentences)
    assert embeddings.shape == (82, 384) and embeddings.dtype == np.float32
    np.testing.assert_allclose(embeddings, expected, atol=1e-5)
    np.testing.assert_allclose(minilm.encode(sentences[0]), expected[0], atol=1e-5)  # one str: [dim]


def test_save_pretrained_writes_a_sentence_transformers_directory_that_encodes_identically(
        minilm, sentence_transformer, tmp_path):
    from sentence_transformers import SentenceTransformer

    directory = str(tmp_path / "saved")
    minilm.save_pretrained(directory)
    with open(os.path.join(directory, "modules.json"), encoding="utf-8") as f:
        assert [(m["path"], m["type"]) for m in json.load(f)] == [
            ("", "sentence_transformers.models.Transformer"), ("1_Pooling", "sentence_transformers.models.Pooling"),
            ("2_Normalize", "sentence_transformers.models.Normalize")]
    sentences = _held_out_sentences()
    reloaded = SentenceTransformer(directory, device="cpu")
    assert reloaded.max_seq_length == 256
    np.testing.assert_allclose(reloaded.encode(sentences), sentence_transformer.encode(sentences), atol=1e-6)
    ours = BertSentenceEncoder.from_pretrained(directory)
    assert (ours.pooling, ours.normalize, ours.preprocessor.sequence_length) == (("mean",), True, 256)
    np.testing.assert_array_equal(ours.encode(sentences[:8]), minilm.encode(sentences[:8]))


@pytest.mark.parametrize("modes", ["mean", "max", "cls", "mean_sqrt_len_tokens", ("cls", "max", "mean")])
def test_pooling_equals_sentence_transformers_pooling_module(modes):
    import torch
    from sentence_transformers.models import Pooling

    rng = np.random.RandomState(0)
    sequence = rng.normal(size=(4, 7, 6)).astype("float32")
    mask = (np.arange(7)[None] < np.array([[7], [4], [1], [2]])).astype("int32")
    sequence[mask == 0] = 50.0  # padding must not reach the pooled vector
    reference = Pooling(6, pooling_mode=modes)({
        "token_embeddings": torch.from_numpy(sequence), "attention_mask": torch.from_numpy(mask)})
    pooled = to_numpy(SentencePooling(modes)(sequence, mask))
    np.testing.assert_allclose(pooled, reference["sentence_embedding"].numpy(), rtol=1e-6, atol=1e-6)


def _tiny_directory(tmp_path, name="model"):
    """A tiny BERT directory (tiny_model_files.TINY) with its vocabulary."""
    directory = tmp_path / name
    BertBackbone(BertConfig(**TINY)).save_pretrained(str(directory))
    (directory / "vocab.txt").write_text("\n".join(VOCAB) + "\n", encoding="utf-8")
    return directory


def _inputs(texts):
    return BertSentenceEncoderPreprocessor(BertTokenizer(VOCAB), sequence_length=8)(texts)[0]


def test_a_plain_bert_checkpoint_takes_the_pooling_given_and_writes_it_for_sentence_transformers(tmp_path):
    from sentence_transformers import SentenceTransformer

    directory = _tiny_directory(tmp_path)
    assert BertSentenceEncoder.from_pretrained(str(directory)).pooling == ("mean",)  # the default of a plain model
    model = BertSentenceEncoder.from_pretrained(str(directory), pooling="cls")
    assert (model.pooling, model.normalize, model.preprocessor.sequence_length) == (("cls",), False, 128)
    texts = ["hello world", "w1 w2 w3", "world"]
    saved = str(tmp_path / "saved")
    model.save_pretrained(saved)
    assert not os.path.exists(os.path.join(saved, "2_Normalize"))
    reference = SentenceTransformer(saved, device="cpu")
    np.testing.assert_allclose(model.encode(texts), reference.encode(texts), atol=1e-5)
    # Pooling modes out of sentence-transformers' boolean order are written as its `pooling_mode` list.
    model = BertSentenceEncoder.from_pretrained(str(directory), pooling=["mean", "cls"], normalize=True)
    model.save_pretrained(saved)
    with open(os.path.join(saved, "1_Pooling", "config.json"), encoding="utf-8") as f:
        assert json.load(f) == {"embedding_dimension": 16, "pooling_mode": ["mean", "cls"]}
    reference = SentenceTransformer(saved, device="cpu")
    np.testing.assert_allclose(model.encode(texts), reference.encode(texts), atol=1e-5)
    assert model.encode(texts).shape == (3, 32)


def _sentence_directory(tmp_path, pooling, normalize=True, transformer_folder=""):
    """A tiny sentence-transformers directory, its BERT files at the root or in `transformer_folder`."""
    root = tmp_path / "st"
    bert = _tiny_directory(tmp_path, name=os.path.join("st", transformer_folder) if transformer_folder else "st")
    (bert / "sentence_bert_config.json").write_text(json.dumps({"max_seq_length": 12, "do_lower_case": False}))
    (root / "1_Pooling").mkdir(parents=True, exist_ok=True)
    (root / "1_Pooling" / "config.json").write_text(json.dumps(pooling))
    modules = [{"idx": 0, "name": "0", "path": transformer_folder, "type": "sentence_transformers.models.Transformer"},
               {"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"}]
    if normalize:
        modules.append({"idx": 2, "name": "2", "path": "2_Normalize", "type": "sentence_transformers.models.Normalize"})
    (root / "modules.json").write_text(json.dumps(modules))
    return root


def test_sentence_transformers_layouts_are_read_from_their_files(tmp_path):
    from sentence_transformers import SentenceTransformer

    # sentence-transformers 6's pooling config, and the BERT files in a folder of their own (older layouts).
    root = _sentence_directory(tmp_path, {"embedding_dimension": 16, "pooling_mode": ["max", "mean_sqrt_len_tokens"]},
                               transformer_folder="0_Transformer")
    model = BertSentenceEncoder.from_pretrained(str(root))
    assert (model.pooling, model.normalize, model.preprocessor.sequence_length) == (
        ("max", "mean_sqrt_len_tokens"), True, 12)
    texts = ["hello world", "w1 w2 w3 w4 w5 w6 w7 w8 w9 w10 w11 w12 w13 w14", "world"]  # the second cut at 12
    np.testing.assert_allclose(model.encode(texts), SentenceTransformer(str(root), device="cpu").encode(texts),
                               atol=1e-5)
    # The older boolean form; arguments override the directory's settings.
    shutil.rmtree(root)
    root = _sentence_directory(tmp_path, {"word_embedding_dimension": 16, "pooling_mode_cls_token": True,
                                          "pooling_mode_mean_tokens": False}, normalize=False)
    assert ModelDirectory(str(root)).sentence_modules.pooling == ("cls",)
    model = BertSentenceEncoder.from_pretrained(str(root), pooling="mean", normalize=True)
    assert (model.pooling, model.normalize) == (("mean",), True)


@pytest.mark.parametrize("change, message", [
    (lambda root: _edit(root / "modules.json", lambda m: m + [
        {"idx": 3, "name": "3", "path": "3_Dense", "type": "sentence_transformers.models.Dense"}]),
     "modules.json: module 3 is a sentence_transformers.models.Dense; this package reads the chain Transformer, "
     "Pooling and optionally Normalize."),
    (lambda root: _edit(root / "1_Pooling" / "config.json", lambda c: dict(c, pooling_mode="weightedmean")),
     "config.json: pooling mode 'weightedmean' is not one this package computes (cls, max, mean, "
     "mean_sqrt_len_tokens)."),
    (lambda root: _edit(root / "1_Pooling" / "config.json", lambda c: dict(c, embedding_dimension=32)),
     "the Pooling module pools vectors of size 32; the model's hidden size is 16."),
    (lambda root: _edit(root / "sentence_bert_config.json", lambda c: dict(c, max_seq_length="long")),
     "sentence_bert_config.json: max_seq_length must be an integer >= 3 or null, got 'long'."),
    (lambda root: (root / "modules.json").write_text("[{"), "modules.json: not valid JSON (line 1, column 3"),
])
def test_a_sentence_transformers_file_this_package_cannot_read_is_refused_in_one_line(tmp_path, change, message):
    root = _sentence_directory(tmp_path, {"embedding_dimension": 16, "pooling_mode": "mean"})
    change(root)
    with pytest.raises(UserInputError) as error:
        BertSentenceEncoder.from_pretrained(str(root))
    assert message in str(error.value) and "\n" not in str(error.value)


def _edit(path, change):
    path.write_text(json.dumps(change(json.loads(path.read_text()))))


def test_a_sentence_transformers_directory_fine_tunes_as_any_bert_checkpoint(minilm_path):
    """Its pooling is no task's head: a classifier loads its backbone as from a plain BERT directory."""
    from keras_bert_impl import BertClassifier
    from keras_bert_impl.checkpoints import model_io

    assert model_io.model_class(minilm_path) is BertSentenceEncoder
    with pytest.warns(UserWarning, match="initialized randomly"):
        model = BertClassifier.from_pretrained(minilm_path, num_classes=2)
    assert model.preprocessor.sequence_length == 128  # the classifier's default, as before


def test_encode_sorts_by_length_pads_each_batch_restores_the_order_and_normalizes_on_request(tmp_path, capsys):
    model = BertSentenceEncoder.from_pretrained(str(_tiny_directory(tmp_path)))
    texts = ["w1 " * n for n in (3, 11, 1, 7, 5, 9, 2)]
    shapes = []
    predict_on_batch = model.predict_on_batch
    model.predict_on_batch = lambda x: shapes.append(x["token_ids"].shape) or predict_on_batch(x)
    embeddings = model.encode(texts, batch_size=2)
    # Batches of similar length, each padded to its longest text rounded up to 8: [CLS] + n + [SEP].
    assert shapes == [(2, 1, 8), (2, 1, 8), (2, 1, 16), (1, 1, 16)]
    one_by_one = np.stack([model.encode(text) for text in texts])
    np.testing.assert_allclose(embeddings, one_by_one, atol=1e-5)
    normalized = model.encode(texts, batch_size=2, normalize=True)
    np.testing.assert_allclose(normalized, embeddings / np.linalg.norm(embeddings, axis=1, keepdims=True), atol=1e-6)
    assert model.encode([]).shape == (0, 16)
    capsys.readouterr()
    model.encode(texts, batch_size=2, progress=True)
    assert "4/4" in capsys.readouterr().out
    model.encode(texts, batch_size=2)  # 4 batches: no progress bar by default
    assert capsys.readouterr().out == ""
    normalizing = BertSentenceEncoder.from_pretrained(str(tmp_path / "model"), normalize=True)
    with pytest.raises(ValueError, match="cannot undo it"):
        normalizing.encode(texts, normalize=False)


def test_token_ids_must_come_in_columns(tmp_path):
    model = BertSentenceEncoder(BertBackbone(BertConfig(**TINY)))
    x = {k: v[:, 0] for k, v in _inputs(["hello world"]).items()}  # [batch, seq]: no column axis
    with pytest.raises(UserInputError, match=r"takes \[batch, columns, seq\]"):
        model.predict(x, verbose=0)
    with pytest.raises(UserInputError, match="x\\[1\\] has 1 texts, x\\[0\\] has 2"):
        _inputs((["hello", "world"], ["hello"]))


def test_lora_trains_the_adapters_only_and_round_trips_through_a_keras_file(tmp_path):
    model = BertSentenceEncoder(BertBackbone(BertConfig(**TINY)), preprocessor=BertSentenceEncoderPreprocessor(
        BertTokenizer(VOCAB), sequence_length=8))
    model.backbone.enable_lora(2)
    frozen = {w.path: to_numpy(w) for w in model.non_trainable_weights}
    x = (["hello world", "w1 w2", "w3"], ["world hello", "w2 w1", "w3 w4"])
    before = model.predict(x, verbose=0)
    model.compile(optimizer=keras.optimizers.Adam(1e-2))
    model.fit(x, epochs=2, batch_size=3, verbose=0)
    after = model.predict(x, verbose=0)
    assert np.abs(after - before).max() > 1e-4
    assert all(np.array_equal(to_numpy(w), frozen[w.path]) for w in model.non_trainable_weights)
    assert len(model.trainable_weights) == TINY["num_hidden_layers"] * 2 * 2  # A and B of query and value
    path = str(tmp_path / "lora.keras")
    model.save(path)
    np.testing.assert_allclose(keras.saving.load_model(path).predict(x, verbose=0), after, atol=1e-6)


def test_int8_quantizes_every_projection_stays_close_and_reloads_exactly(tmp_path, no_collection_per_deleted_kernel):
    model = BertSentenceEncoder(BertBackbone(BertConfig(**TINY)), normalize=True)
    x = _inputs(["hello world", "w1 w2 w3 w4", "world"])
    float32 = to_numpy(model.predict_on_batch(x))
    model.quantize("int8")
    quantized = [layer.path for layer in flatten_layers(model.backbone) if layer.quantization_mode == "int8"]
    assert len(quantized) >= 6 * TINY["num_hidden_layers"]  # q, k, v, output, intermediate, output dense
    int8 = to_numpy(model.predict_on_batch(x))
    assert 0 < np.abs(int8 - float32).max() < 0.05  # unit vectors
    path = str(tmp_path / "int8.keras")
    model.save(path)
    np.testing.assert_array_equal(to_numpy(keras.saving.load_model(path).predict_on_batch(x)), int8)
    with pytest.raises(ValueError, match="quantized"):
        model.save_pretrained(str(tmp_path / "directory"))


def test_sentence_similarity_pipeline_scores_as_sentence_transformers_cosine(minilm_path, sentence_transformer):
    from sentence_transformers import util

    from keras_bert_impl import pipeline

    similarity = pipeline("sentence-similarity", model=minilm_path)
    source = "A man is eating a piece of bread."
    sentences = ["A man eats food.", "The girl is carrying a baby.", "A man is riding a horse.", "It is raining."]
    expected = util.cos_sim(sentence_transformer.encode([source]), sentence_transformer.encode(sentences))[0].numpy()
    scores = similarity({"source_sentence": source, "sentences": sentences})
    assert isinstance(scores, list) and len(scores) == 4
    np.testing.assert_allclose(scores, expected, atol=1e-5)
    np.testing.assert_allclose(similarity(source, sentences=sentences), expected, atol=1e-5)
    both = similarity([{"source_sentence": source, "sentences": sentences},
                       {"source_sentence": sentences[1], "sentences": [source]}])
    np.testing.assert_allclose(both[0], expected, atol=1e-5)
    assert both[1][0] == pytest.approx(float(expected[1]), abs=1e-5)
    with pytest.raises(UserInputError, match=r"input 1 is str 'A man'.*expected \{'source_sentence': str"):
        similarity([{"source_sentence": source, "sentences": sentences}, "A man"])
    with pytest.raises(UserInputError, match="sentences of input 0, element 1 is None"):
        similarity({"source_sentence": source, "sentences": ["fine", None]})
