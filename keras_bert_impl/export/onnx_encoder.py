"""The ONNX forms of BERT's encoder layers, as onnxruntime's fused `com.microsoft` operators, written from the
layers' weights.

| layer | ONNX nodes |
| --- | --- |
| `BertEmbeddings` | `EmbedLayerNormalization` (the three lookups, their sum and the LayerNorm) |
| `BertEncoderBlock`, every row | `Attention` (one [H, 3H] product for Q, K and V, the 2D padding mask as its `mask_index`), `MatMul`, `SkipLayerNormalization` (bias, residual, LayerNorm), `MatMul`, `BiasGelu`, `MatMul`, `SkipLayerNormalization` |
| `BertEncoderBlock`, the first n rows (`output_range`, a [CLS] head) | the queries of those rows only: `MatMul` of their Q, one `MatMul` of every row's K and V, `MultiHeadAttention`, then the block's other nodes on those rows |
| a dense layer (`BertDense`, `keras.layers.Dense`) | `MatMul`, then its bias and activation: `BiasGelu` for the exact GELU, `FastGelu` for the tanh GELU, else `Add` and the activation's own node |

The operators' semantics are those of onnxruntime's docs/ContribOperators.md: `Attention` and
`MultiHeadAttention` add `mask_filter_value` (-10000, BERT's `MASK_BIAS`) to the logits of the keys whose
mask is 0, as `attention_bias_from_padding_mask`, and scale the logits by 1/sqrt(head size); `BiasGelu`
computes the erf GELU of x + bias. A causal (left-to-right) block's `Attention` is `unidirectional`; its first
n rows attend to the first n positions only, so they are the block of those n rows.
"""

import numpy as np

from keras_bert_impl.export.onnx_graph import MICROSOFT, float32


def embeddings(graph, layer, token_ids, segment_ids):
    """`BertEmbeddings` (inference: no dropout) on int32 `token_ids`, `segment_ids` [B, T] -> [B, T, H]."""
    weights = [graph.weight(float32(variable), f"{layer.path}/{name}", key=variable.path) for name, variable in (
        ("word_embeddings", layer.word_embeddings.embeddings),
        ("position_embeddings", layer.position_embeddings.embeddings),
        ("token_type_embeddings", layer.token_type_embeddings.embeddings),
        ("gamma", layer.layer_norm.gamma), ("beta", layer.layer_norm.beta))]
    # Its second output (a mask index, from an absent mask) is not read; onnxruntime's type inference needs it.
    # ONNX has no assertion: an id or a position past its table fails in this node with "input index out of
    # range", and onnxruntime's error names the node, so its name states the tables' bounds.
    bounds = (f"{layer.path}: token_ids below {layer.vocab_size}, segment_ids below {layer.type_vocab_size}, "
              f"at most {layer.max_position_embeddings} tokens")
    output, _ = graph.node("EmbedLayerNormalization", [token_ids, segment_ids, *weights], layer.path, outputs=2,
                           domain=MICROSOFT, node_name=bounds, epsilon=float(layer.layer_norm.epsilon))
    return output


def encoder_block(graph, block, hidden_states, padding_mask, causal=False, rows=None):
    """`BertEncoderBlock` on `hidden_states` [B, T, H] -> [B, T, H], or for its first `rows` rows only
    ([B, rows, H]); `padding_mask` int32 [B, T] (1: real token); `causal`: a left-to-right block."""
    attention, name = block.attention, block.path
    width = attention.hidden_size
    kernels = [float32(layer.kernel).reshape(width, width) for layer in (attention.query, attention.key, attention.value)]
    biases = [float32(layer.bias).reshape(width) for layer in (attention.query, attention.key, attention.value)]
    qkv_bias = graph.weight(np.concatenate(biases), f"{name}/attention/qkv_bias")
    if rows is not None:
        residual = _first_rows(graph, hidden_states, rows, name)  # [B, rows, H]
    if rows is None or causal:
        if rows is not None:
            # A causal block's first n rows read the first n positions only: the whole block of those rows.
            hidden_states = residual
            padding_mask = _first_rows(graph, padding_mask, rows, f"{name}/mask")
        residual = hidden_states
        context = graph.node(
            "Attention", [hidden_states, graph.weight(np.concatenate(kernels, axis=1), f"{name}/attention/qkv_kernel"),
                          qkv_bias, padding_mask],
            f"{name}/attention", domain=MICROSOFT, num_heads=attention.num_heads, unidirectional=int(causal))
    else:
        query = graph.node("MatMul", [residual, graph.weight(kernels[0], f"{name}/attention/query_kernel")],
                           f"{name}/attention/query")  # [B, rows, H]
        key_value = graph.node("MatMul", [hidden_states, graph.weight(np.concatenate(kernels[1:], axis=1),
                                                                      f"{name}/attention/key_value_kernel")],
                               f"{name}/attention/key_value")  # [B, T, 2H]
        key, value = graph.node("Split", [key_value, graph.constant([width, width])], f"{name}/attention/split",
                                outputs=2, axis=2)
        context = graph.node("MultiHeadAttention", [query, key, value, qkv_bias, padding_mask],
                             f"{name}/attention", domain=MICROSOFT, num_heads=attention.num_heads)  # [B, rows, H]
    projected = graph.node("MatMul", [context, graph.weight(
        float32(attention.output_dense.kernel).reshape(width, width), f"{name}/attention_output/kernel")],
        f"{name}/attention_output")
    attended = _skip_layer_norm(graph, projected, residual, attention.output_dense.bias, block.attention_layer_norm,
                                f"{name}/attention_layer_norm")
    intermediate = dense(graph, block.intermediate_dense, attended)
    output = graph.node("MatMul", [intermediate, graph.weight(float32(block.output_dense.kernel),
                                                              f"{block.output_dense.path}/kernel")],
                        block.output_dense.path)
    return _skip_layer_norm(graph, output, attended, block.output_dense.bias, block.output_layer_norm,
                            f"{name}/output_layer_norm")


def _first_rows(graph, x, rows, name):
    """x[:, :rows]."""
    return graph.node("Slice", [x, graph.constant([0]), graph.constant([rows]), graph.constant([1])],
                      f"{name}/first_rows")


def _skip_layer_norm(graph, x, residual, bias, layer_norm, name):
    """LayerNorm(x + bias + residual)."""
    return graph.node("SkipLayerNormalization", [
        x, residual, graph.weight(float32(layer_norm.gamma), f"{name}/gamma"),
        graph.weight(float32(layer_norm.beta), f"{name}/beta"), graph.weight(float32(bias), f"{name}/bias")],
        name, domain=MICROSOFT, epsilon=float(layer_norm.epsilon))


def dense(graph, layer, x):
    """A dense layer (`keras.layers.Dense` or a subclass, float weights) on `x` [..., in] -> [..., out]."""
    y = graph.node("MatMul", [x, graph.weight(float32(layer.kernel), f"{layer.path}/kernel")], layer.path)
    bias = None if layer.bias is None else graph.weight(float32(layer.bias), f"{layer.path}/bias")
    return activation(graph, layer.activation, y, f"{layer.path}/activation", bias)


def activation(graph, function, x, name, bias=None):
    """`function(x + bias)` (a Keras activation: linear, the exact or tanh GELU, tanh, relu, sigmoid, softmax
    over the last axis) as ONNX nodes; ValueError for another one."""
    import keras

    from keras_bert_impl.layers import activations

    exact_gelu = function is activations.gelu or function is keras.activations.gelu
    if bias is not None and exact_gelu:
        return graph.node("BiasGelu", [x, bias], name, domain=MICROSOFT)
    if bias is not None and function is activations.gelu_approximate:
        return graph.node("FastGelu", [x, bias], name, domain=MICROSOFT)
    if bias is not None:
        x = graph.node("Add", [x, bias], f"{name}/bias")
    if function is None or function is keras.activations.linear:
        return x
    if exact_gelu:
        return graph.node("Gelu", [x], name, domain=MICROSOFT)
    if function is activations.gelu_approximate:
        return graph.node("FastGelu", [x], name, domain=MICROSOFT)
    simple = {keras.activations.tanh: "Tanh", keras.activations.relu: "Relu", keras.activations.sigmoid: "Sigmoid"}
    if function in simple:
        return graph.node(simple[function], [x], name)
    if function is keras.activations.softmax:
        return graph.node("Softmax", [x], name, axis=-1)
    raise ValueError(f"{name}: the activation {getattr(function, '__name__', function)!r} has no ONNX form here.")
