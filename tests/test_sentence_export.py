"""The sentence encoder served: its SavedModel takes raw strings and returns the L2-normalized embeddings of
`BertSentenceEncoder.encode(..., normalize=True)`, packed at the directory's sentence_bert_config.json length;
its ONNX file equals `encoder.predict` within 1e-5 in every pooling mode, with and without normalization, on
padded rows of different lengths, under every backend; `pipeline("sentence-similarity")` on its ONNX (and LiteRT)
export folder scores as on its model directory; the ONNX file of the real all-MiniLM-L6-v2 embeds as
sentence-transformers. (The LiteRT and ONNX exports among the other task models': tests/test_portable_export.py.)"""

import json

import keras
import numpy as np
import pytest

from keras_bert_impl import BertBackbone, BertSentenceEncoder, BertSentenceEncoderPreprocessor, BertTokenizer, pipeline
from keras_bert_impl.config import BertConfig
from tests.tiny_model_files import TINY, VOCAB

TENSORFLOW = keras.backend.backend() == "tensorflow"


@pytest.mark.skipif(not TENSORFLOW, reason="the SavedModel export runs under the TensorFlow backend")
@pytest.mark.tensorflow
def test_saved_sentence_encoder_serves_raw_strings_as_normalized_encode(model_dir, tmp_path):
    import tensorflow as tf
    import tensorflow_text  # noqa: F401  (registers the in-graph tokenizer's ops)

    from keras_bert_impl.export.tf_saved_model import export_from_directory

    # max pooling without a Normalize module, packed at 8 tokens: the export normalizes and cuts as encode.
    preprocessor = BertSentenceEncoderPreprocessor(BertTokenizer(VOCAB), sequence_length=8)
    encoder = BertSentenceEncoder.from_pretrained(str(model_dir), pooling="max", normalize=False,
                                                  preprocessor=preprocessor)
    saved_dir = str(tmp_path / "encoder")
    encoder.save_pretrained(saved_dir)
    task, export_dir = export_from_directory(saved_dir, str(tmp_path / "export"))
    assert task == "sentence_encoder"
    texts = ["hello world", "w1 w2 w3 w4 w5 w6 w7 w8 w9 w10", "world", "Hello w3"]  # the second cut at 8 tokens
    expected = BertSentenceEncoder.from_pretrained(saved_dir).encode(texts, normalize=True)
    served = tf.saved_model.load(export_dir).signatures["serving_default"](text=tf.constant(texts))
    np.testing.assert_allclose(served["embedding"].numpy(), expected, atol=1e-5)
    np.testing.assert_allclose(np.linalg.norm(served["embedding"].numpy(), axis=-1), 1.0, atol=1e-5)
    unnormalized = encoder.encode(texts)
    assert not np.allclose(np.linalg.norm(unnormalized, axis=-1), 1.0, atol=1e-3)


def _padded_columns(seed, batch, columns, length):
    """Token ids of `batch` examples of `columns` texts, each `[CLS] words [SEP]` of its own length (2 to
    `length` tokens), padded at the end with id 0 and `padding_mask` 0; one text is left-padded (its first real
    token, [CLS], after the padding)."""
    rng = np.random.default_rng(seed)
    lengths = rng.integers(2, length + 1, (batch, columns))
    lengths[0, 0] = length  # the longest row
    mask = (np.arange(length) < lengths[..., None]).astype("int32")  # [B, K, T]
    ids = rng.integers(5, len(VOCAB), (batch, columns, length)).astype("int32")
    ids[..., 0] = VOCAB.index("[CLS]")
    ids = ids * mask
    shift = length - int(lengths[-1, -1])  # the last text left-padded
    mask[-1, -1], ids[-1, -1] = np.roll(mask[-1, -1], shift), np.roll(ids[-1, -1], shift)
    return {"token_ids": ids, "segment_ids": np.zeros_like(ids), "padding_mask": mask}


@pytest.mark.parametrize("normalize", [False, True], ids=["raw", "normalized"])
@pytest.mark.parametrize("pooling", ["mean", "cls", "max", "mean_sqrt_len_tokens",
                                     ["mean", "max", "cls", "mean_sqrt_len_tokens"]], ids=str)
def test_onnx_export_equals_predict_in_every_pooling_mode_on_padded_rows(pooling, normalize, tmp_path):
    import onnxruntime

    from keras_bert_impl.export.onnx_export import export_onnx

    encoder = BertSentenceEncoder(BertBackbone(BertConfig(**TINY)), pooling=pooling, normalize=normalize)
    session = onnxruntime.InferenceSession(export_onnx(encoder, str(tmp_path / "encoder.onnx")),
                                           providers=["CPUExecutionProvider"])
    assert [(i.name, i.shape) for i in session.get_inputs()] == [
        (name, ["batch", "columns", "sequence"]) for name in ("token_ids", "segment_ids", "padding_mask")]
    assert [o.name for o in session.get_outputs()] == ["split_columns"]
    for x in (_padded_columns(0, batch=3, columns=2, length=9), _padded_columns(1, batch=2, columns=3, length=5)):
        expected = encoder.predict(x, verbose=0)  # [B, K, D]
        served = session.run(None, x)[0]
        assert served.shape == expected.shape == (*x["token_ids"].shape[:2], TINY["hidden_size"] * len(encoder.pooling))
        np.testing.assert_allclose(served, expected, atol=1e-5, rtol=0)
        if normalize:
            np.testing.assert_allclose(np.linalg.norm(served, axis=-1), 1.0, atol=1e-5)


def test_onnx_max_pooling_of_a_row_of_padding_only_is_minus_infinity_as_predicts(tmp_path):
    import onnxruntime

    from keras_bert_impl.export.onnx_export import export_onnx

    encoder = BertSentenceEncoder(BertBackbone(BertConfig(**TINY)), pooling=["max", "mean"], normalize=False)
    session = onnxruntime.InferenceSession(export_onnx(encoder, str(tmp_path / "encoder.onnx")),
                                           providers=["CPUExecutionProvider"])
    x = _padded_columns(2, batch=2, columns=2, length=6)
    x["padding_mask"][1, 0] = 0  # a text of padding only
    expected = encoder.predict(x, verbose=0)  # [B, K, 2H]: max, then mean
    served = session.run(None, x)[0]
    hidden = TINY["hidden_size"]
    assert np.isneginf(expected[1, 0, :hidden]).all() and np.isneginf(served[1, 0, :hidden]).all()
    np.testing.assert_array_equal(served[1, 0, hidden:], np.zeros(hidden, "float32"))  # the mean: 0 / 1e-9
    np.testing.assert_allclose(served, expected, atol=1e-5, rtol=0)


@pytest.mark.parametrize("export_format", ["onnx", pytest.param("litert", marks=pytest.mark.tensorflow)])
def test_sentence_similarity_pipeline_on_an_export_folder_scores_as_on_the_model_directory(export_format, tmp_path):
    from keras_bert_impl.runners.export_savedmodel import main

    if export_format == "litert" and not TENSORFLOW:
        pytest.skip("the LiteRT export runs under the TensorFlow backend")

    preprocessor = BertSentenceEncoderPreprocessor(BertTokenizer(VOCAB), sequence_length=8)
    encoder = BertSentenceEncoder(BertBackbone(BertConfig(**TINY)), pooling=["mean", "max"], normalize=True,
                                  preprocessor=preprocessor)
    model_dir, export_dir = str(tmp_path / "model"), str(tmp_path / "export")
    encoder.save_pretrained(model_dir)
    main(["--model_dir", model_dir, "--export_dir", export_dir, f"--format={export_format}"])
    with open(f"{export_dir}/export_config.json", encoding="utf-8") as f:
        settings = json.load(f)
    assert (settings["task"], settings["outputs"], settings["dict_outputs"], settings["max_seq_length"]) == (
        "sentence_encoder", ["split_columns"], False, 8)
    inputs = [{"source_sentence": "hello world", "sentences": ["world", "hello", "w1 w2 w3 w4 w5 w6 w7 w8 w9 w10"]},
              {"source_sentence": "w3 w4", "sentences": ["w4 w3", "hello w5", "w3"]}]  # one sentence cut at 8 tokens
    cut = r"sentences of input 0, element 2 has \d+ tokens, more than max_seq_length=8"  # the warning names it
    with pytest.warns(UserWarning, match=cut):
        expected = pipeline("sentence-similarity", model=model_dir)(inputs)
    served_pipeline = pipeline("sentence-similarity", model=export_dir)
    assert type(served_pipeline.model).__name__ == "RuntimeModel"
    with pytest.warns(UserWarning, match=cut):
        served = served_pipeline(inputs)
    assert len(served) == 2 and [len(scores) for scores in served] == [3, 3]
    np.testing.assert_allclose(np.array(served), np.array(expected), atol=1e-5, rtol=0)
    assert len({round(score, 3) for scores in expected for score in scores}) == 6  # the scores differ


def test_onnx_export_of_minilm_embeds_as_sentence_transformers(minilm_path, tmp_path):
    """all-MiniLM-L6-v2 (mean pooling, Normalize) exported by `encoder.export(format="onnx")`: onnxruntime's
    embeddings of 8 sentences, packed at 256 tokens, equal `SentenceTransformer.encode`'s within 1e-5 (max
    absolute difference)."""
    import onnxruntime
    from sentence_transformers import SentenceTransformer

    from tests.test_sentence_encoder import _held_out_sentences

    encoder = BertSentenceEncoder.from_pretrained(minilm_path)
    path = str(tmp_path / "minilm.onnx")
    encoder.export(path, format="onnx")
    sentences = _held_out_sentences()[:8]
    x, _, _ = encoder.preprocessor(sentences)  # [8, 1, 256]
    session = onnxruntime.InferenceSession(path, providers=["CPUExecutionProvider"])
    served = session.run(None, {name: np.asarray(x[name], "int32") for name in ("token_ids", "segment_ids",
                                                                                 "padding_mask")})[0][:, 0]
    expected = SentenceTransformer(str(minilm_path), device="cpu").encode(sentences)
    assert served.shape == expected.shape == (8, 384)
    np.testing.assert_allclose(served, expected, atol=1e-5, rtol=0)
