"""ONNX export of a model on token ids, written node by node from the model's graph and weights, for
onnxruntime: its fused BERT operators, dynamic batch and sequence axes, outputs named for what they are.

`export_onnx` walks the functional graph of the model (a task model, a backbone, or a user's functional model
on a backbone) back from its outputs, through nested functional models (a backbone called as a layer is
written inline), and writes each call that an output reads in its ONNX form (`export/onnx_layers.py`): BERT's
embeddings, attention, residual LayerNorms and GELU as onnxruntime's fused `com.microsoft` operators
(`EmbedLayerNormalization`, `Attention`, `MultiHeadAttention`, `SkipLayerNormalization`, `BiasGelu`:
`export/onnx_encoder.py`), the heads' layers in standard operators. Work nothing reads is not written: a
head on the [CLS] row (`pooled_output`, of the classifier and multiple choice, or a user's head reading only
the backbone's `pooled_output`) gets a last encoder layer that computes its attention output and
feed-forward for that row only.

It needs the `onnx` package alone (onnxruntime to run the file; `quantization="dynamic_int8"` uses
onnxruntime's quantizer: the `[onnx]` extra installs both; without them, one line names it), and runs under
every Keras backend: the weights are read as numpy arrays.

Inputs keep the model's names (`token_ids`, `segment_ids`, `padding_mask` int32, plus `masked_lm_positions`
for the pretrainer), their free axes named "batch", "sequence" (and "predictions" for the masked positions);
multiple choice keeps its fixed number of choices. Outputs are named as the model names them: the keys of a
dict of outputs (`start_logits`, `end_logits`, `sequence_output`, `pooled_output`, `hidden_states_<i>`,
`masked_lm_logits`, ...), else the output layer's name (`logits`). The padding mask is read as onnxruntime's
attention operators read a 2D mask (a padded key gets -10000 added to its logits, as BERT's own mask):
anywhere in the sequence; a BiLSTM head reads it as each sequence's length (padding at the end, as the
packers write it). The sentence encoder (`BertSentenceEncoder`) takes its columns of texts as a free axis
"columns" ([batch, columns, sequence]) and returns its pooled (and, with a Normalize module, L2-normalized)
embeddings [batch, columns, dim], named as the model names them ("split_columns").
The file's metadata (`metadata_props`) holds `max_position_embeddings`, the longest sequence it computes:
onnxruntime fails a longer one in the embeddings node, whose name states the bounds of the ids and positions
(`pipelines.runtime_model` refuses it in one line first).
"""

import collections

import keras

from keras_bert_impl.export import onnx_layers
from keras_bert_impl.export.onnx_graph import OnnxGraph
from keras_bert_impl.models.portable_export import register_exporter
from keras_bert_impl.utils import keras_compat
from keras_bert_impl.utils.file_io import atomic_path
from keras_bert_impl.utils.optional_dependencies import require

QUANTIZATIONS = (None, "dynamic_int8")
# The names of the inputs' free axes after the batch, by input: the sequence unless named here.
_LAST_AXIS = {"masked_lm_positions": "predictions"}


def _input_axis(name, last):
    """The name of an input's free axis: its last one the sequence (`_LAST_AXIS`), one before it "columns" (the
    sentence encoder's texts per example)."""
    return _LAST_AXIS.get(name, "sequence") if last else "columns"


_Scope = collections.namedtuple("_Scope", ["key", "bindings"])


class Call:
    """One call of a layer or operation, as its ONNX form (`onnx_layers.Form`) sees it."""

    def __init__(self, walk, call, scope):
        self.operation, self.args, self.kwargs = call.operation, call.args, call.kwargs
        self.graph, self.joined = walk.graph, walk.joined
        self.name = getattr(call.operation, "path", None) or call.operation.name
        self.needed = walk.needed[(scope.key, call.key)]  # the indices of its outputs that are read
        self._walk, self._scope = walk, scope

    def value(self, tensor, scope=None):
        """The ONNX value of a tensor argument (of the call's own graph, or of a `nested` one)."""
        return self._walk.value(tensor, scope or self._scope)

    def nested(self, model, inputs):
        """The scope of a functional `model` that this call runs on `inputs` (e.g. a layer wrapping a model)."""
        return self._walk.scope(model, inputs, self._scope, id(self.operation))


class _Walk:
    """The ONNX values of a functional model's tensors, written on demand (`value`) once `mark` has found
    which outputs of each call the model's outputs read."""

    def __init__(self, model, graph):
        self.graph = graph
        self.joined = {}  # (first rows, other rows) of an encoder block -> the block's whole output
        self.needed = collections.defaultdict(set)
        self._values, self._marked, self._scopes = {}, set(), {}
        self._input_names = {id(tensor): name for name, tensor in _named(model.input)}
        self.top = _Scope((), None)

    def scope(self, model, inputs, outer, key):
        """The scope of the functional `model`'s graph called on `inputs` (of scope `outer`)."""
        scope_key = outer.key + (key,)
        if scope_key not in self._scopes:
            inner, given = keras.tree.flatten(model.input), keras.tree.flatten(inputs)
            if len(inner) != len(given):
                raise ValueError(f"{model.name} takes {len(inner)} inputs; the graph gives it {len(given)}.")
            self._scopes[scope_key] = _Scope(scope_key, {id(i): (g, outer) for i, g in zip(inner, given)})
        return self._scopes[scope_key]

    def _source(self, tensor, scope):
        """("input", name) | ("bound", tensor, scope) | ("call", call, output index) for a tensor of `scope`."""
        call, index = keras_compat.functional_call(tensor)
        if isinstance(call.operation, keras.layers.InputLayer):
            if scope.bindings is None:
                return ("input", self._input_names[id(tensor)])
            return ("bound", *scope.bindings[id(tensor)])
        if keras_compat.is_functional(call.operation):
            inner = self.scope(call.operation, call.args[0], scope, call.key)
            return ("bound", keras.tree.flatten(call.operation.output)[index], inner)
        return ("call", call, index)

    def mark(self, tensor, scope):
        """Records which outputs of which calls `tensor` (of `scope`) needs, all the way to the inputs."""
        stack = [(tensor, scope)]
        while stack:
            tensor, scope = stack.pop()
            if (scope.key, id(tensor)) in self._marked:
                continue
            self._marked.add((scope.key, id(tensor)))
            source = self._source(tensor, scope)
            if source[0] == "bound":
                stack.append(source[1:])
            elif source[0] == "call":
                call, index = source[1:]
                self.needed[(scope.key, call.key)].add(index)
                form = onnx_layers.form_of(call.operation)
                inputs = form.inputs(Call(self, call, scope)) if form.inputs else keras.tree.flatten(
                    (call.args, call.kwargs))
                stack.extend(item if isinstance(item, tuple) else (item, scope) for item in inputs
                             if isinstance(item, tuple) or isinstance(item, keras.KerasTensor))

    def value(self, tensor, scope):
        key = (scope.key, id(tensor))
        if key not in self._values:
            source = self._source(tensor, scope)
            if source[0] == "input":
                self._values[key] = source[1]
            elif source[0] == "bound":
                self._values[key] = self.value(*source[1:])
            else:
                call, index = source[1:]
                values = onnx_layers.form_of(call.operation).write(Call(self, call, scope))
                for output, value in zip(call.outputs, values):
                    self._values[(scope.key, id(output))] = value
        return self._values[key]


def _named(structure):
    """[(name, tensor)] of a dict of tensors (a list value: `name_<i>`), or of a tensor or list (each named by
    the layer that computes it, looking through the layers that pass their input on: a CRF's output is named
    by the layer computing its potentials, "logits")."""
    if isinstance(structure, dict):
        named = []
        for name, value in structure.items():
            if isinstance(value, (list, tuple)):
                named.extend((f"{name}_{i}", item) for i, item in enumerate(value))
            else:
                named.append((name, value))
        return named
    return [(_layer_name(t), t) for t in keras.tree.flatten(structure)]


def _layer_name(tensor):
    call, _ = keras_compat.functional_call(tensor)
    while onnx_layers.passes_input_on(call.operation):
        call, _ = keras_compat.functional_call(call.args[0])
    return call.operation.name


def _dims(name, tensor, free):
    """["batch", then each axis: its size, or for a free one `free(name, whether it is the last axis)`]."""
    last = len(tensor.shape) - 1
    return ["batch"] + [free(name, i == last) if d is None else int(d) for i, d in enumerate(tensor.shape[1:], 1)]


def onnx_model(model, opset_version=None):
    """The `onnx.ModelProto` of `model` (see the module docstring)."""
    import numpy as np

    quantized = [layer.path for layer in keras_compat.flatten_layers(model)
                 if getattr(layer, "quantization_mode", None)]
    if quantized:
        raise ValueError(f"the ONNX export writes float weights; {quantized[0]} is quantized: export the float "
                         "model with quantization='dynamic_int8' instead.")
    graph = OnnxGraph()
    walk = _Walk(model, graph)
    for name, tensor in _named(model.input):
        graph.input(name, np.dtype(keras.backend.standardize_dtype(tensor.dtype)),
                    _dims(name, tensor, _input_axis))
    outputs = _named(model.output)
    for name, tensor in outputs:
        graph.reserve(name)
        walk.mark(tensor, walk.top)
    for name, tensor in outputs:
        graph.output(walk.value(tensor, walk.top), name, _dims(name, tensor, lambda n, last: None),
                     np.dtype(keras.backend.standardize_dtype(tensor.dtype)))
    proto = graph.model(opset_version, graph_name=model.name)
    positions = [layer.config.max_position_embeddings for layer in [model, *keras_compat.flatten_layers(model)]
                 if hasattr(getattr(layer, "config", None), "max_position_embeddings")]
    if positions:  # the longest sequence the file computes (a longer one fails in its position-embedding Gather)
        from onnx import helper

        helper.set_model_props(proto, {"max_position_embeddings": str(min(positions))})
    return proto


@register_exporter("onnx", ("opset_version",))  # model.export(path, format="onnx")
def export_onnx(model, path, opset_version=None, quantization=None):
    """Writes `model` (a task model, a backbone, or a functional model on one) to the ONNX file `path`,
    atomically.

    Args:
        model: a functional Keras model with dict inputs, under any backend.
        path: the `.onnx` file.
        opset_version: the standard ONNX opset (default 17, the least the graph needs).
        quantization: None (float32), or "dynamic_int8": int8 weights for the products, activations
            quantized per call (`export/onnx_quantization.py`).

    Returns:
        `path`.

    Raises:
        ValueError: a layer without an ONNX form here (naming it), a quantized Keras model, a wrong
            `quantization`.

    Examples:

    >>> import os, tempfile
    >>> import onnxruntime
    >>> from keras_bert_impl import BertBackbone, BertClassifier
    >>> from keras_bert_impl.config import BertConfig
    >>> model = BertClassifier(BertBackbone(BertConfig.preset("bert_tiny")), num_classes=2)
    >>> path = export_onnx(model, os.path.join(tempfile.mkdtemp(), "model.onnx"))
    >>> session = onnxruntime.InferenceSession(path, providers=["CPUExecutionProvider"])
    >>> [(i.name, i.shape) for i in session.get_inputs()]
    [('token_ids', ['batch', 'sequence']), ('segment_ids', ['batch', 'sequence']), ('padding_mask', ['batch', 'sequence'])]
    >>> [o.name for o in session.get_outputs()]
    ['logits']
    """
    if quantization not in QUANTIZATIONS:
        raise ValueError(f"quantization={quantization!r}: expected one of {QUANTIZATIONS}.")
    require("ONNX export", "onnx", ("onnx",) if quantization is None else ("onnx", "onnxruntime"))
    import onnx

    graph_model = onnx_model(model, opset_version)
    with atomic_path(path) as tmp:
        if quantization is None:
            onnx.save(graph_model, tmp)
        else:
            from keras_bert_impl.export.onnx_quantization import quantize

            quantize(graph_model, tmp)
    return path
