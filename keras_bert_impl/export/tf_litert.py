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
`masked_lm_positions` for the pretrainer; [B, C, T] for multiple choice), the outputs its raw outputs, the
signature's outputs named for what they are (`export_settings.named_outputs`: `logits`, `start_logits`, ...).

`export_litert_text_model` writes instead a model on one raw text, its tokenizer inside
(`tokenizers.tf_litert_tokenizer.LiteRTTextPacker`: tensorflow-text's two LiteRT custom ops, which the
stock interpreter runs once given tensorflow-text's registerers, `TEXT_OP_REGISTERERS`; docs/deployment.md).
"""

import tempfile

import keras

from keras_bert_impl.utils.optional_dependencies import require

# Without TensorFlow: one line naming the extra to install, before `import tensorflow` fails.
require("LiteRT export", "export", ("tensorflow",))

import tensorflow as tf

from keras_bert_impl import backends
from keras_bert_impl.export.export_settings import named_outputs
from keras_bert_impl.export.tf_signatures import save_signatures
from keras_bert_impl.models.portable_export import register_exporter
from keras_bert_impl.utils import keras_compat
from keras_bert_impl.utils.file_io import atomic_path

QUANTIZATIONS = (None, "dynamic_int8")
# The names, in tensorflow_text.core.pybinds.tflite_registrar, of the registerers of the text model's custom ops.
TEXT_OP_REGISTERERS = ("AddFastBertNormalize", "AddFastWordpieceTokenize")
TEXT_CUSTOM_OPS = ("FastBertNormalize", "FastWordpieceTokenizeWithOffsets")


def has_recurrent_layer(model):
    """Whether `model` holds a Keras RNN layer (an LSTM, alone or in a Bidirectional wrapper)."""
    return any(isinstance(layer, keras.layers.RNN) for layer in keras_compat.flatten_layers(model))


def input_signature(model, batch_size=None):
    """{name: tf.TensorSpec} of the model's inputs, the batch axis `batch_size` (None: dynamic), the other
    axes as the model's inputs have them (None: dynamic)."""
    return {name: tf.TensorSpec((batch_size, *tensor.shape[1:]), tensor.dtype, name=name)
            for name, tensor in model.input.items()}


@register_exporter("litert", ("batch_size", "quantization"))  # model.export(path, format="litert")
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
    _check_settings(path, quantization)
    if batch_size is None and has_recurrent_layer(model):
        batch_size = 1
    converter_settings = {"target_spec": {"supported_ops": [tf.lite.OpsSet.TFLITE_BUILTINS]}}
    if quantization == "dynamic_int8":
        converter_settings["optimizations"] = [tf.lite.Optimize.DEFAULT]
    # A model of one output is served as a dict naming it: the signature's output is "logits", not "output_0".
    served = model if isinstance(model.output, dict) else keras.Model(model.input, named_outputs(model),
                                                                        name=model.name)
    with backends.export_target("litert"), atomic_path(path) as tmp:
        keras.Model.export(served, tmp, format="litert", verbose=False,
                           input_signature=[input_signature(model, batch_size)], **converter_settings)
    return path


def _check_settings(path, quantization):
    if quantization not in QUANTIZATIONS:
        raise ValueError(f"quantization={quantization!r}: expected one of {QUANTIZATIONS}.")
    if not str(path).endswith(".tflite"):
        raise ValueError(f"a LiteRT file's name ends in .tflite: {path}")


def export_litert_text_model(model, tokenizer, path, max_length=128, quantization=None):
    """Writes `model` on one raw text to the LiteRT file `path`: input `text` [1] (a UTF-8 string), outputs
    the model's (e.g. a classifier's logits [1, C]), the text packed by `LiteRTTextPacker(tokenizer,
    max_length)` (one text: a classifier or regressor of single sentences, a token classifier's logits).

    Its only non-builtin ops are tensorflow-text's two LiteRT custom ops: run it with
    `ai_edge_litert.interpreter.InterpreterWithCustomOps(custom_op_registerers=[...])` given
    `text_op_registerers()`; the stock `Interpreter` alone refuses it.
    """
    from keras_bert_impl.tokenizers.tf_litert_tokenizer import LiteRTTextPacker

    _check_settings(path, quantization)
    packer = LiteRTTextPacker(tokenizer, max_length)

    def serve(text):
        outputs = model(packer(text), training=False)
        return outputs if isinstance(outputs, dict) else {"output_0": outputs}

    # Through a SavedModel, as Keras' own LiteRT export: the converter then freezes the variables.
    with tempfile.TemporaryDirectory() as saved_model_dir, backends.export_target("litert"):
        signature = tf.function(serve, input_signature=[tf.TensorSpec([1], tf.string, name="text")])
        save_signatures(saved_model_dir, {"serving_default": signature.get_concrete_function()}, packer=packer)
        converter = tf.lite.TFLiteConverter.from_saved_model(saved_model_dir)
        converter.target_spec.supported_ops = [tf.lite.OpsSet.TFLITE_BUILTINS]
        converter.allow_custom_ops = True  # for tensorflow-text's two ops: any other is refused below
        if quantization == "dynamic_int8":
            converter.optimizations = [tf.lite.Optimize.DEFAULT]
        content = converter.convert()
    others = sorted(set(custom_ops(content)) - set(TEXT_CUSTOM_OPS))
    if others:
        raise ValueError(f"the model needs ops LiteRT has neither as builtins nor from tensorflow-text: {others}")
    with atomic_path(path) as tmp, open(tmp, "wb") as f:
        f.write(content)
    return path


def custom_ops(content):
    """The names of the custom ops (Flex ops included) of a LiteRT model's bytes: LiteRT names its builtin ops
    in capitals (FULLY_CONNECTED), custom ops in CamelCase (FastBertNormalize, FlexErf)."""
    from ai_edge_litert.interpreter import Interpreter

    names = {op["op_name"] for op in Interpreter(model_content=content)._get_ops_details()}
    return sorted(name for name in names if not name.isupper())


def text_op_registerers():
    """tensorflow-text's registerers of the text model's custom ops, for `InterpreterWithCustomOps`."""
    from tensorflow_text.core.pybinds import tflite_registrar

    return [getattr(tflite_registrar, name) for name in TEXT_OP_REGISTERERS]
