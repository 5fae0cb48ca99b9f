"""The ONNX form of each layer and operation a task model's graph holds, for the ONNX export's walk of the
graph (`export/onnx_export.py`).

`form_of(operation)` gives a `Form`: `write(call)` appends the nodes of one call (a `onnx_export.Call`: the
call's arguments, its outputs the exported graph reads, `value(tensor)` for the ONNX value of an argument) and
returns the ONNX values of its outputs (None for one nothing reads); `inputs(call)`, when given, names the
tensors the form reads (default: every tensor argument), so that the walk reaches only those.

The forms: BERT's own layers as onnxruntime's fused operators (`onnx_encoder`: embeddings, encoder blocks,
dense layers); an encoder block called for its first rows (`output_range`, or only the first part of
`split_at` read) computes the queries, attention output and feed-forward of those rows only; dropout
layers, `Activation`, `CRF` (its output is its input), `MergeChoices`, `MaskedLMHead`, `ScalarMix`,
`FrozenBertFeatures`, `LayerNormalization`, a bidirectional or forward `LSTM` (the ONNX LSTM, its mask as
the sequences' lengths: padding at the end, as every packer of this package writes it), the sentence
encoder's `SentencePooling` (every mode, masked by the padding mask), `UnitNormalization` (L2) and
`SplitColumns`, and the keras.ops operations of the heads (indexing, reshape, concatenation, cast).
"""

import collections

import keras
import numpy as np

from keras_bert_impl.export import onnx_encoder
from keras_bert_impl.export.onnx_graph import float32
from keras_bert_impl.layers.crf import CRF
from keras_bert_impl.layers.dropout import BertDropout
from keras_bert_impl.layers.embeddings import BertEmbeddings
from keras_bert_impl.layers.masked_lm_head import MaskedLMHead
from keras_bert_impl.layers.scalar_mix import ScalarMix
from keras_bert_impl.layers.sentence_pooling import SentencePooling
from keras_bert_impl.layers.transformer_encoder import BertEncoderBlock
from keras_bert_impl.models.feature_based_tagger import FrozenBertFeatures
from keras_bert_impl.models.multiple_choice import MergeChoices
from keras_bert_impl.models.sentence_encoder import SplitColumns
from keras_bert_impl.utils import keras_compat

# An ONNX Slice's "to the end".
_END = np.iinfo(np.int64).max

Form = collections.namedtuple("Form", ["write", "inputs"], defaults=[None])


def mask_source(tensor):
    """The tensor an attention bias or a boolean mask is computed from by keras.ops operations alone (the
    padding mask, an input or a layer's output), or ValueError when there is not exactly one."""
    sources, stack, seen = {}, [tensor], set()
    while stack:
        current = stack.pop()
        if id(current) in seen:
            continue
        seen.add(id(current))
        call, _ = keras_compat.functional_call(current)
        if isinstance(call.operation, keras.layers.Layer):
            sources[id(current)] = current
            continue
        stack.extend(t for t in keras.tree.flatten((call.args, call.kwargs)) if isinstance(t, keras.KerasTensor))
    if len(sources) != 1:
        raise ValueError(f"the ONNX export reads an attention bias or mask as computed from one padding mask; "
                         f"{tensor.name} comes from {len(sources)} tensors.")
    return next(iter(sources.values()))


def _mask_value(call, tensor, dtype="int32"):
    """The ONNX value of `tensor`'s padding mask, as `dtype` (an ONNX type name of `onnx.TensorProto`)."""
    from onnx import TensorProto

    source = mask_source(tensor)
    value = call.value(source)
    if keras.backend.standardize_dtype(source.dtype) == dtype:
        return value
    return call.graph.node("Cast", [value], f"{call.name}/mask", to=getattr(TensorProto, dtype.upper()))


def _argument(call, index, name):
    return call.args[index] if len(call.args) > index else call.kwargs.get(name)


# ------------------------------------------------------------------------------------------ BERT's layers
def _write_embeddings(call):
    token_ids, segment_ids = _argument(call, 0, "token_ids"), _argument(call, 1, "segment_ids")
    return [onnx_encoder.embeddings(call.graph, call.operation, call.value(token_ids), call.value(segment_ids))]


def _block_inputs(call):
    return [_argument(call, 0, "hidden_states"), mask_source(_argument(call, 1, "attention_bias"))]


def _write_block(call):
    block, graph = call.operation, call.graph
    hidden, bias = call.value(_argument(call, 0, "hidden_states")), _argument(call, 1, "attention_bias")
    mask = _mask_value(call, bias)
    causal = bias.shape[2] != 1  # [B, 1, 1, T]: a padding bias; [B, 1, T, T]: a causal one
    output_range, split_at = call.kwargs.get("output_range"), call.kwargs.get("split_at")
    if output_range is not None:
        return [onnx_encoder.encoder_block(graph, block, hidden, mask, causal, rows=output_range)]
    if split_at is None:
        return [onnx_encoder.encoder_block(graph, block, hidden, mask, causal)]
    if call.needed == {0}:  # only the first rows are read (a [CLS] head on sequence_output's parts)
        return [onnx_encoder.encoder_block(graph, block, hidden, mask, causal, rows=split_at), None]
    whole = onnx_encoder.encoder_block(graph, block, hidden, mask, causal)
    first = graph.node("Slice", [whole, graph.constant([0]), graph.constant([split_at]), graph.constant([1])],
                       f"{call.name}/first_rows")
    rest = graph.node("Slice", [whole, graph.constant([split_at]), graph.constant([_END]), graph.constant([1])],
                      f"{call.name}/other_rows")
    call.joined[(first, rest)] = whole  # their concatenation on the rows is the block's output
    return [first, rest]


def _write_dense(call):
    return [onnx_encoder.dense(call.graph, call.operation, call.value(call.args[0]))]


def _write_masked_lm_head(call):
    """MaskedLMHead: the rows at `masked_positions` (all rows without), its transform, the product with the
    word embeddings (the stored matrix, read transposed) and the output bias."""
    head, graph, name = call.operation, call.graph, call.name
    x = call.value(call.args[0])  # [B, T, H]
    positions = _argument(call, 1, "masked_positions")
    if positions is not None:
        indices = graph.node("Cast", [call.value(positions)], f"{name}/positions", to=7)  # int64
        indices = graph.node("Unsqueeze", [indices, graph.constant([-1])], f"{name}/positions_axis")  # [B, P, 1]
        x = graph.node("GatherND", [x, indices], f"{name}/gather", batch_dims=1)  # [B, P, H]
    x = onnx_encoder.dense(graph, head.transform_dense, x)
    x = _layer_norm(graph, head.transform_layer_norm, x)
    embeddings = head.token_embedding.embeddings
    matrix = graph.weight(float32(embeddings), f"{head.token_embedding.path}/embeddings", key=embeddings.path)
    rows = graph.node("Reshape", [x, graph.constant([-1, head.hidden_size])], f"{name}/rows")  # [B*P, H]
    logits = graph.node("Gemm", [rows, matrix, graph.weight(float32(head.output_bias), f"{head.path}/output_bias")],
                        f"{name}/logits", transB=1)  # [B*P, V]
    shape = graph.node("Concat", [graph.node("Shape", [x], f"{name}/rows_shape", end=-1),
                                  graph.constant([head.vocab_size])], f"{name}/logits_shape", axis=0)
    return [graph.node("Reshape", [logits, shape], name)]  # [B, P, V]


def _layer_norm(graph, layer, x):
    width = (layer.gamma if layer.scale else layer.beta).shape[-1]
    gamma = float32(layer.gamma) if layer.scale else np.ones(width, np.float32)
    beta = float32(layer.beta) if layer.center else np.zeros(width, np.float32)
    return graph.node("LayerNormalization", [x, graph.weight(gamma, f"{layer.path}/gamma"),
                                             graph.weight(beta, f"{layer.path}/beta")],
                      layer.path, axis=-1, epsilon=float(layer.epsilon))


def _write_layer_norm(call):
    return [_layer_norm(call.graph, call.operation, call.value(call.args[0]))]


def _write_scalar_mix(call):
    """gamma * sum_k softmax(s)_k x_k, the weights computed here from the layer's parameters."""
    layer, graph = call.operation, call.graph
    parameters = float32(layer.scalar_parameters)
    weights = np.exp(parameters - parameters.max())
    weights = weights / weights.sum() * float32(layer.gamma)
    mixed = None
    for k, tensor in enumerate(call.args[0]):
        term = graph.node("Mul", [call.value(tensor), graph.constant(weights[k], np.float32)], f"{call.name}/term")
        mixed = term if mixed is None else graph.node("Add", [mixed, term], f"{call.name}/sum")
    return [mixed]


def _features_inputs(call):
    layer = call.operation
    scope = call.nested(layer.backbone, call.args[0])
    hidden_states = layer.backbone.output["hidden_states"]
    return [(hidden_states[i], scope) for i in layer.feature_layers]


def _write_features(call):
    """FrozenBertFeatures: its backbone's graph on the layer's inputs, the chosen hidden states."""
    selected = [call.value(tensor, scope) for tensor, scope in _features_inputs(call)]
    if not call.operation.concatenate:
        return selected
    return [call.graph.node("Concat", selected, call.name, axis=-1)]


def _lstm_inputs(call):
    mask = call.kwargs.get("mask")
    return [call.args[0]] + ([] if mask is None else [mask_source(mask)])


def _write_lstm(call):
    """A `Bidirectional(LSTM)` (outputs concatenated) or a forward `LSTM`, returning every step, as one ONNX
    LSTM over [T, B, I]; with a mask, the sequences' lengths are its sums (padded steps at the end: their
    outputs are zeros and they feed neither direction, as in Keras)."""
    from onnx import TensorProto

    layer, graph, name = call.operation, call.graph, call.name
    bidirectional = isinstance(layer, keras.layers.Bidirectional)
    layers = [layer.forward_layer, layer.backward_layer] if bidirectional else [layer]
    for lstm in layers:
        cell = lstm.cell
        if not (lstm.return_sequences and cell.activation is keras.activations.tanh
                and cell.recurrent_activation is keras.activations.sigmoid):
            raise ValueError(f"{lstm.path}: the ONNX export writes LSTMs with return_sequences=True and the "
                             "default activations.")
    if bidirectional and layer.merge_mode != "concat":
        raise ValueError(f"{layer.path}: the ONNX export writes merge_mode='concat' only.")
    if not bidirectional and layer.go_backwards:
        raise ValueError(f"{layer.path}: the ONNX export writes a forward LSTM or a Bidirectional one.")
    units = layers[0].cell.units
    # Keras' gates are [i, f, c, o] along the kernels' last axis; ONNX's are [i, o, f, c] along their rows.
    order = np.concatenate([np.arange(g * units, (g + 1) * units) for g in (0, 3, 1, 2)])

    def stacked(weights, transpose=True):
        return np.stack([w[..., order].T if transpose else w[..., order] for w in weights])

    kernels = stacked([float32(lstm.cell.kernel) for lstm in layers])  # [D, 4u, I]
    recurrent = stacked([float32(lstm.cell.recurrent_kernel) for lstm in layers])  # [D, 4u, u]
    biases = stacked([float32(lstm.cell.bias) if lstm.cell.use_bias else np.zeros(4 * units, np.float32)
                      for lstm in layers], transpose=False)  # [D, 4u]
    biases = np.concatenate([biases, np.zeros_like(biases)], axis=1)  # [D, 8u]: input and recurrent biases
    x = graph.node("Transpose", [call.value(call.args[0])], f"{name}/time_major", perm=[1, 0, 2])  # [T, B, I]
    lengths = ""
    mask = call.kwargs.get("mask")
    if mask is not None:
        as_int = graph.node("Cast", [call.value(mask_source(mask))], f"{name}/mask", to=TensorProto.INT32)
        lengths = graph.node("ReduceSum", [as_int, graph.constant([1])], f"{name}/lengths", keepdims=0)  # [B]
    y = graph.node("LSTM", [x, graph.weight(kernels, f"{layer.path}/kernel"),
                            graph.weight(recurrent, f"{layer.path}/recurrent_kernel"),
                            graph.weight(biases, f"{layer.path}/bias"), lengths],
                   name, hidden_size=units, direction="bidirectional" if bidirectional else "forward")  # [T, D, B, u]
    y = graph.node("Transpose", [y], f"{name}/batch_major", perm=[2, 0, 1, 3])  # [B, T, D, u]
    return [graph.node("Reshape", [y, graph.constant([0, 0, -1])], f"{name}/directions")]  # [B, T, D * u]


def _identity(call):
    return [call.value(call.args[0])]


def _write_activation(call):
    return [onnx_encoder.activation(call.graph, call.operation.activation, call.value(call.args[0]), call.name)]


def _write_merge_choices(call):
    x = call.args[0]
    return [call.graph.node("Flatten", [call.value(x)], call.name, axis=len(x.shape) - 1)]  # [B * C, T]


# ------------------------------------------------------------------------------------- sentence embeddings
def _write_sentence_pooling(call):
    """SentencePooling: each of the layer's modes over the tokens whose padding mask is not 0, in float32,
    concatenated in the layer's order, as the layer computes them: mean (the sum over max(count, 1e-9)),
    mean_sqrt_len_tokens (over its square root), max (padding at -inf, so that a row of padding only gets -inf)
    and cls (the first real token's vector)."""
    from onnx import TensorProto

    layer, graph, name = call.operation, call.graph, call.name
    sequence = graph.node("Cast", [call.value(_argument(call, 0, "sequence"))], f"{name}/sequence",
                          to=TensorProto.FLOAT)  # [B, T, H]
    mask = graph.node("Cast", [call.value(_argument(call, 1, "padding_mask"))], f"{name}/mask",
                      to=TensorProto.FLOAT)  # [B, T]
    weights = graph.node("Unsqueeze", [mask, graph.constant([-1])], f"{name}/weights")  # [B, T, 1]
    outputs = []
    for mode in layer.modes:
        if mode == "cls":
            first = graph.node("ArgMax", [mask], f"{name}/first_token", axis=1, keepdims=1)  # [B, 1] int64
            outputs.append(graph.node("GatherND", [sequence, first], f"{name}/cls", batch_dims=1))  # [B, H]
        elif mode == "max":
            real = graph.node("Greater", [weights, graph.constant(0.0, np.float32)], f"{name}/real")  # [B, T, 1]
            masked = graph.node("Where", [real, sequence, graph.constant(-np.inf, np.float32)],
                                f"{name}/masked")  # [B, T, H]
            # The maximum over the tokens as TopK of 1, whose axis is an attribute in every opset (ReduceMax's
            # is an input from opset 18).
            top, _ = graph.node("TopK", [masked, graph.constant([1])], f"{name}/top", outputs=2, axis=1)
            outputs.append(graph.node("Squeeze", [top, graph.constant([1])], f"{name}/max"))  # [B, H]
        else:
            weighted = graph.node("Mul", [sequence, weights], f"{name}/weighted")  # [B, T, H]
            total = graph.node("ReduceSum", [weighted, graph.constant([1])], f"{name}/sum", keepdims=0)  # [B, H]
            count = graph.node("ReduceSum", [weights, graph.constant([1])], f"{name}/count", keepdims=0)  # [B, 1]
            count = graph.node("Max", [count, graph.constant(1e-9, np.float32)], f"{name}/count_floor")
            if mode == "mean_sqrt_len_tokens":
                count = graph.node("Sqrt", [count], f"{name}/sqrt_count")
            outputs.append(graph.node("Div", [total, count], f"{name}/{mode}"))  # [B, H]
    if len(outputs) == 1:
        return outputs
    return [graph.node("Concat", outputs, name, axis=-1)]  # [B, len(modes) * H]


def _write_unit_normalization(call):
    """UnitNormalization (L2): x * min(1 / sqrt(sum of squares), 1e12), Keras' `ops.normalize` with epsilon
    1e-12, over the layer's axes."""
    graph, name = call.graph, call.name
    axes = call.operation.axis
    x = call.value(call.args[0])
    squares = graph.node("Mul", [x, x], f"{name}/squares")
    total = graph.node("ReduceSum", [squares, graph.constant(list(axes) if isinstance(axes, (list, tuple)) else [axes])],
                       f"{name}/sum", keepdims=1)
    inverse = graph.node("Reciprocal", [graph.node("Sqrt", [total], f"{name}/norm")], f"{name}/inverse_norm")
    inverse = graph.node("Min", [inverse, graph.constant(1e12, np.float32)], f"{name}/bounded")
    return [graph.node("Mul", [x, inverse], name)]


def _write_split_columns(call):
    """SplitColumns: [B * K, D] -> [B, K, D], B and K read from `token_ids` [B, K, T]."""
    graph, name = call.graph, call.name
    embeddings, token_ids = call.value(call.args[0]), call.value(_argument(call, 1, "token_ids"))
    shape = graph.node("Concat", [graph.node("Shape", [token_ids], f"{name}/columns_shape", end=2),
                                  graph.node("Shape", [embeddings], f"{name}/width", start=-1)],
                       f"{name}/shape", axis=0)
    return [graph.node("Reshape", [embeddings, shape], name)]


# ------------------------------------------------------------------------------------ keras.ops operations
def _write_get_item(call):
    """x[key] with integers and slices (an Ellipsis too): Slice for the slices, Gather for the integers."""
    x, key = call.args[0], call.args[1]
    key = tuple(key) if isinstance(key, (tuple, list)) else (key,)
    rank = len(x.shape)
    if Ellipsis in key:
        at = key.index(Ellipsis)
        key = key[:at] + (slice(None),) * (rank - len(key) + 1) + key[at + 1:]
    graph, value = call.graph, call.value(x)
    starts, ends, axes, steps = [], [], [], []
    for axis, part in enumerate(key):
        if isinstance(part, slice) and part != slice(None):
            steps.append(1 if part.step is None else part.step)
            starts.append(part.start if part.start is not None else (0 if steps[-1] > 0 else -1))
            ends.append(part.stop if part.stop is not None else (_END if steps[-1] > 0 else -_END))
            axes.append(axis)
        elif not isinstance(part, (slice, int, np.integer)):
            raise ValueError(f"{call.name}: the ONNX export indexes with integers and slices, not {part!r}.")
    if axes:
        value = graph.node("Slice", [value, graph.constant(starts), graph.constant(ends), graph.constant(axes),
                                     graph.constant(steps)], f"{call.name}/slice")
    for axis in reversed([a for a, part in enumerate(key) if isinstance(part, (int, np.integer))]):
        value = graph.node("Gather", [value, graph.constant(int(key[axis]))], call.name, axis=axis)
    return [value]


def _write_reshape(call):
    shape = [-1 if d is None else int(d) for d in call.operation.newshape]
    return [call.graph.node("Reshape", [call.value(call.args[0]), call.graph.constant(shape)], call.name)]


def _write_concatenate(call):
    parts = [call.value(t) for t in call.args[0]]
    axis = call.operation.axis
    if len(parts) == 2 and tuple(parts) in call.joined and axis in (1, 1 - len(call.args[0][0].shape)):
        return [call.joined[tuple(parts)]]
    return [call.graph.node("Concat", parts, call.name, axis=axis)]


def _write_cast(call):
    from onnx import helper

    dtype = np.dtype(keras.backend.standardize_dtype(call.operation.dtype))
    return [call.graph.node("Cast", [call.value(call.args[0])], call.name, to=helper.np_dtype_to_tensor_dtype(dtype))]


# The layers whose output is their input at inference (a CRF's is its potentials; it adds transitions only).
_PASS_THROUGH = (keras.layers.Dropout, BertDropout, CRF)
# Layer classes (a subclass takes its closest base's form).
LAYER_FORMS = {
    BertEmbeddings: Form(_write_embeddings),
    BertEncoderBlock: Form(_write_block, _block_inputs),
    keras.layers.Dense: Form(_write_dense),
    MaskedLMHead: Form(_write_masked_lm_head),
    keras.layers.LayerNormalization: Form(_write_layer_norm),
    ScalarMix: Form(_write_scalar_mix),
    FrozenBertFeatures: Form(_write_features, _features_inputs),
    keras.layers.Bidirectional: Form(_write_lstm, _lstm_inputs),
    keras.layers.LSTM: Form(_write_lstm, _lstm_inputs),
    **{cls: Form(_identity) for cls in _PASS_THROUGH},
    keras.layers.Activation: Form(_write_activation),
    MergeChoices: Form(_write_merge_choices),
    SentencePooling: Form(_write_sentence_pooling),
    keras.layers.UnitNormalization: Form(_write_unit_normalization),
    SplitColumns: Form(_write_split_columns),
}
# keras.ops operations, by class name (their classes are not public).
OPERATION_FORMS = {
    "GetItem": Form(_write_get_item),
    "Reshape": Form(_write_reshape),
    "Concatenate": Form(_write_concatenate),
    "Cast": Form(_write_cast),
}


def passes_input_on(operation):
    """Whether the form of `operation` returns its first argument as it is (dropout, a CRF)."""
    return isinstance(operation, _PASS_THROUGH)


def form_of(operation):
    """The `Form` of a layer or keras.ops operation, or ValueError naming it."""
    for cls in type(operation).__mro__:
        if cls in LAYER_FORMS:
            return LAYER_FORMS[cls]
    if not isinstance(operation, keras.layers.Layer) and type(operation).__name__ in OPERATION_FORMS:
        return OPERATION_FORMS[type(operation).__name__]
    raise ValueError(f"the ONNX export has no form for {operation.name!r} ({type(operation).__name__}); "
                     f"it writes {', '.join(sorted(c.__name__ for c in LAYER_FORMS))} and the operations "
                     f"{', '.join(sorted(OPERATION_FORMS))}.")
