"""LiteRT (TensorFlow Lite) export of a model on token ids, with LiteRT's builtin operators only, so that the
stock interpreter (`ai_edge_litert.interpreter.Interpreter`, a phone's or a browser's LiteRT) runs it without
the Flex delegate. TensorFlow by nature.

The model is traced under `backends.export_target("litert")`, where the exact GELU is the pattern LiteRT's
converter writes as its builtin GELU; every other operation of the task models (the attention's products and
softmax, the additive padding mask, the embeddings' gathers, the CRF tagger's emissions, the pretrainer's
gather of the masked positions) converts to builtins as it is. The converter is given the builtin operator set
alone, so a model that still needs a TensorFlow op fails to export, naming the op, instead of writing a file
the stock interpreter refuses.

A model with a recurrent layer (the feature-based tagger's BiLSTMs, a "+ BiLSTM" head) exports with a fixed
batch size: LiteRT lowers Keras' LSTM loop to builtins only when the loop's per-step shape is static. Its
default `batch_size` is then 1 (one query at a time, as on a device); the sequence length stays dynamic.

The inputs are the model's own (`token_ids`, `segment_ids`, `padding_mask` [B, T] int32, plus
`masked_lm_positions` for the pretrainer; [B, C, T] for multiple choice), the outputs its raw outputs; the
raw-text signatures are the SavedModel's (`tf_saved_model.py`; docs/deployment.md says why the tokenizer
stays out of the LiteRT file).
"""

import keras
import tensorflow as tf

from keras_bert_impl import backends
from keras_bert_impl.utils import keras_compat
from keras_bert_impl.utils.file_io import atomic_path

QUANTIZATIONS = (None, "dynamic_int8")


def has_recurrent_layer(model):
    """Whether `model` holds a Keras RNN layer (an LSTM, alone or in a Bidirectional wrapper)."""
    return any(isinstance(layer, keras.layers.RNN) for layer in keras_compat.flatten_layers(model))


def input_signature(model, batch_size=None):
    """{name: tf.TensorSpec} of the model's inputs, the batch axis `batch_size` (None: dynamic), the other
    axes as the model's inputs have them (None: dynamic)."""
    return {name: tf.TensorSpec((batch_size, *tensor.shape[1:]), tensor.dtype, name=name)
            for name, tensor in model.input.items()}


def export_litert(model, path, batch_size=None, quantization=None):
    """Writes `model` (a task model or backbone on token ids) to the LiteRT file `path` (`.tflite`).

    Args:
        model: a functional Keras model with dict inputs, built under the TensorFlow backend.
        path: the file, written atomically; must end in ".tflite".
        batch_size: a fixed batch size, or None for a dynamic one (a model with a recurrent layer: 1).
        quantization: None (float32), or "dynamic_int8": LiteRT's dynamic-range quantization (int8 weights,
            activations quantized on the fly by the kernels; about a quarter of the size).

    Returns:
        `path`.

    Raises:
        ValueError: a model that needs a TensorFlow (Flex) op; a wrong `quantization` or `path`.
    """
    if quantization not in QUANTIZATIONS:
        raise ValueError(f"quantization={quantization!r}: expected one of {QUANTIZATIONS}.")
    if not str(path).endswith(".tflite"):
        raise ValueError(f"a LiteRT file's name ends in .tflite: {path}")
    if batch_size is None and has_recurrent_layer(model):
        batch_size = 1
    converter_settings = {"target_spec": {"supported_ops": [tf.lite.OpsSet.TFLITE_BUILTINS]}}
    if quantization == "dynamic_int8":
        converter_settings["optimizations"] = [tf.lite.Optimize.DEFAULT]
    with backends.export_target("litert"), atomic_path(path) as tmp:
        model.export(tmp, format="litert", verbose=False, input_signature=[input_signature(model, batch_size)],
                     **converter_settings)
    return path
