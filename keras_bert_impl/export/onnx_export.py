"""ONNX export of a model on token ids, with dynamic batch and sequence axes, for onnxruntime.

`export_onnx` traces the model under `backends.export_target("onnx")` (where the last encoder block's two
row sets are two slices: tf2onnx writes `tf.split`'s size -1 as a negative ONNX Split size, which onnxruntime
refuses) and writes it through Keras' `model.export(format="onnx")`, which converts it with tf2onnx.

It runs under the TensorFlow backend. A model trained under JAX or PyTorch is exported by saving it
(`save_pretrained`) and exporting the directory under TensorFlow (`recipes/export_savedmodel.py
--format=onnx`). Keras' other ONNX paths do not give this model dynamic axes: under PyTorch, Keras exports
dynamic axes with torch's TorchScript exporter, which refuses Keras' own `LayerNormalization` (its
normalized shape is read from the traced input: "Failed to export a node ... because it is not constant");
under JAX, Keras needs the jax2onnx package.

Inputs keep the model's names (`token_ids`, `segment_ids`, `padding_mask` int32, plus `masked_lm_positions`
for the pretrainer), their free axes named "batch", "sequence" (and "predictions" for the masked positions);
multiple choice keeps its fixed number of choices; a sentence encoder's [batch, columns, sequence] inputs
have three free axes. Outputs are the model's raw outputs. Needs the `onnx`
and `tf2onnx` packages and TensorFlow (the `[export]` extra; without them, one line names it).
"""

import warnings

import keras

from keras_bert_impl import backends
from keras_bert_impl.utils.file_io import atomic_path
from keras_bert_impl.utils.optional_dependencies import require

BACKENDS = ("tensorflow",)
# The names of the inputs' dynamic axes, by position: [batch, ..., last axis].
_LAST_AXIS = {"masked_lm_positions": "predictions"}


def input_specs(model):
    """[{name: keras.InputSpec}] of the model's inputs, as Keras' exporters take them (None: dynamic)."""
    return [{name: keras.InputSpec(shape=tuple(tensor.shape), dtype=tensor.dtype, name=name)
             for name, tensor in model.input.items()}]


def name_dynamic_axes(path):
    """Renames the dynamic axes of the ONNX file's inputs "batch", "sequence" (or "predictions") and, between
    them, "columns" (a sentence encoder's texts per example)."""
    import onnx

    graph_model = onnx.load(path)
    for value in graph_model.graph.input:
        dims = value.type.tensor_type.shape.dim
        for i, dim in enumerate(dims):
            if dim.dim_value <= 0:  # dynamic: a tf2onnx "unk__N" or a torch "dim_i_j" parameter
                last = _LAST_AXIS.get(value.name, "sequence")
                dim.dim_param = "batch" if i == 0 else last if i == len(dims) - 1 else "columns"
    onnx.save(graph_model, path)


def export_onnx(model, path, opset_version=None):
    """Writes `model` (a task model or backbone on token ids) to the ONNX file `path`, atomically.

    Args:
        model: a functional Keras model with dict inputs, under the TensorFlow backend.
        path: the `.onnx` file.
        opset_version: the ONNX opset, or None for the exporter's default.

    Returns:
        `path`.
    """
    require("ONNX export", "export", ("tensorflow", "tf2onnx", "onnx"))
    backend = keras.backend.backend()
    if backend not in BACKENDS:
        raise ValueError(f"the ONNX export runs under KERAS_BACKEND=tensorflow, not {backend}: save the model "
                         "(save_pretrained) and export its directory (recipes/export_savedmodel.py --format=onnx).")
    with backends.export_target("onnx"), atomic_path(path) as tmp, warnings.catch_warnings():
        # tf2onnx reads `np.object`, for which numpy warns of a future change; nothing the user can act on.
        warnings.filterwarnings("ignore", message="In the future `np.object`", category=FutureWarning)
        model.export(tmp, format="onnx", verbose=False, input_signature=input_specs(model),
                     opset_version=opset_version)
        name_dynamic_axes(tmp)
    return path
