"""The sentence encoder served: its SavedModel takes raw strings and returns the L2-normalized embeddings of
`BertSentenceEncoder.encode(..., normalize=True)`, packed at the directory's sentence_bert_config.json length.
(The LiteRT export of the encoder on token ids, and the refusal of its ONNX export: tests/test_portable_export.py.)"""

import keras
import numpy as np
import pytest

from keras_bert_impl import BertSentenceEncoder, BertSentenceEncoderPreprocessor, BertTokenizer
from tests.tiny_model_files import VOCAB

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
