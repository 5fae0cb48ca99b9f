"""BertDense and BertEinsumDense: Keras' Dense and EinsumDense, with their products computed by
`keras_bert_impl.backends` (one 2D matmul over the rows) and, under a bfloat16 compute dtype where that is
the fast way, their bias and activation in float32.

Why not keras.layers.Dense / EinsumDense as they are: under `mixed_bfloat16` they compute x @ W with a
bfloat16 result, then add the bias and apply the activation in bfloat16. On two backends that wastes most
of bfloat16's gain on the CPU (docs/performance.md, bf16):
  - JAX: XLA's CPU dot with a bfloat16 *result* runs at float32 speed; asked for a float32 result
    (`preferred_element_type`) the same bfloat16 operands run at bfloat16 speed.
  - TensorFlow: the matmul itself is fast in bfloat16 (oneDNN), but the elementwise kernels that follow are
    not vectorized for bfloat16.
So where `backends.float32_epilogue` says so, the matmul takes the bfloat16 operands and gives a float32
result (`backends.einsum_float32_result`), the bias and activation run in float32, and the layer returns its
compute dtype as every Keras layer does. Elsewhere the layers compute what Keras' do, with faster products:
  - every backend: the product over a [batch, seq, ...] input is one 2D matmul, [rows, in] x [in, out]
    (`backends.dense`). On TensorFlow, Keras' einsum for the attention's projections is a batch matmul
    broadcasting the kernel, whose kernel gradient is one product per example summed over the batch; on
    JAX, XLA's CPU compiles a 2D product and its gradients to faster dots than a product over the 3D input.
  - `backends.dense` itself picks the backend's fastest product (oneDNN on torch, a kernel transpose
    written out for TensorFlow's input gradient); with the exact GELU of `layers.activations`,
    `backends.dense_gelu` computes both (on torch at inference, in one oneDNN product).
Weights, names and configs are Keras' own, so checkpoints and `get_config` are those of Keras' layers.
"""

import keras
from keras import ops

from keras_bert_impl import backends
from keras_bert_impl.layers.activations import gelu


def _project_with_float32_epilogue(layer, equation, inputs, contracted_axes=None):
    """`layer`'s kernel applied by `equation`, then its bias and activation in float32; cast to its compute dtype.

    `contracted_axes` k: the input's last k axes are contracted with the kernel's first k, computed as one
    2D product [rows, in] x [in, out], as `backends.dense` does in float32.
    """
    if contracted_axes is None:
        x = backends.einsum_float32_result(equation, inputs, layer.kernel)
    else:
        x = backends.over_rows(lambda rows, kernel: backends.einsum_float32_result("ri,io->ro", rows, kernel),
                               inputs, layer.kernel, contracted_axes)
    if layer.bias is not None:
        x = x + ops.cast(layer.bias, "float32")
    if layer.activation is not None:
        x = layer.activation(x)
    return ops.cast(x, layer.compute_dtype)


# The equations of BertSelfAttention's projections, by the number of the input's trailing axes they contract
# with the kernel's leading axes: the output is then input.shape[:-k] + kernel.shape[k:].
_CONTRACTED_AXES = {"btd,dnh->btnh": 1, "btnh,nhd->btd": 2}


def _computes_as_one_matmul(layer):
    """Whether `layer` (a BertEinsumDense) is a projection of `_CONTRACTED_AXES` with its bias on every output
    axis, so that `_einsum_as_one_matmul` computes it."""
    return (layer.equation in _CONTRACTED_AXES
            and (layer.bias is None
                 or tuple(layer.bias.shape) == tuple(layer.kernel.shape[_CONTRACTED_AXES[layer.equation]:])))


def _einsum_as_one_matmul(layer, inputs):
    """`keras.layers.EinsumDense.call` computed as one 2D product: [rows, contracted] x [contracted, out]
    (`backends.dense`), where Keras' TensorFlow einsum computes "btd,dnh->btnh" (and "btnh,nhd->btd") as a
    batch matmul broadcasting the kernel, whose kernel gradient is one product per example summed over the
    batch."""
    bias = None if layer.bias is None else ops.reshape(layer.bias, (-1,))
    x = backends.over_rows(lambda rows, kernel: backends.dense(rows, kernel, bias), inputs, layer.kernel,
                           _CONTRACTED_AXES[layer.equation])
    if layer.activation is not None:
        x = layer.activation(x)
    return x


# The exact GELU as a layer holds it: ours (`layers.activations`), and Keras' own, which a layer's config
# ("gelu") gives back when a `.keras` file is loaded.
_EXACT_GELU = (gelu, keras.activations.gelu)


def _uses_keras_call(layer):
    """Quantized or LoRA layers keep Keras' own call, which knows about them."""
    return bool(getattr(layer, "quantization_mode", None)) or bool(getattr(layer, "lora_enabled", False))


@keras.saving.register_keras_serializable(package="keras_bert_impl")
class BertDense(keras.layers.Dense):
    """`keras.layers.Dense` with the bias and activation in float32 under bfloat16 where
    `backends.float32_epilogue` says so, and the products of `backends.dense` where
    `backends.dense_runs_over_rows` says so (float32, and torch in every dtype).

    Same arguments, weights and outputs as `keras.layers.Dense` (see the module docstring for why).

    Examples:

    >>> layer = BertDense(4, activation="gelu", dtype="mixed_bfloat16")
    >>> y = layer(keras.ops.ones((2, 3)))
    >>> tuple(y.shape), keras.backend.standardize_dtype(y.dtype)
    ((2, 4), 'bfloat16')
    """

    def call(self, inputs, training=None):
        if _uses_keras_call(self):
            return super().call(inputs, training=training)
        if backends.float32_epilogue(self.compute_dtype, training):
            return _project_with_float32_epilogue(self, "...i,io->...o", inputs, contracted_axes=1)
        if backends.dense_runs_over_rows(self.compute_dtype):
            if self.activation in _EXACT_GELU:  # the intermediate layer of a "gelu" checkpoint
                return backends.dense_gelu(inputs, self.kernel, self.bias)
            x = backends.dense(inputs, self.kernel, self.bias)
            return x if self.activation is None else self.activation(x)
        return super().call(inputs, training=training)

    def quantize(self, mode=None, type_check=True, config=None):
        """`keras.layers.Dense.quantize` (int8, int4, float8, ...), which refuses subclasses unless told not to.

        Keras refuses subclasses because one may change `call` or the weights; this one keeps Keras'
        weights and, once quantized, Keras' own call (`_uses_keras_call`), so Keras' quantized call,
        variables and saving apply as they are.
        """
        super().quantize(mode, type_check=False, config=config)


@keras.saving.register_keras_serializable(package="keras_bert_impl")
class BertEinsumDense(keras.layers.EinsumDense):
    """`keras.layers.EinsumDense` with the bias and activation in float32 under bfloat16 where
    `backends.float32_epilogue` says so, and the attention's projections as one 2D product (`backends.dense`).

    Same arguments, weights and outputs as `keras.layers.EinsumDense` (see the module docstring for why).

    Examples:

    >>> layer = BertEinsumDense("btd,dnh->btnh", output_shape=(None, 2, 4), bias_axes="nh")
    >>> tuple(layer(keras.ops.ones((2, 5, 8))).shape)
    (2, 5, 2, 4)
    """

    def call(self, inputs, training=None):
        if _uses_keras_call(self):
            return super().call(inputs, training=training)
        if backends.float32_epilogue(self.compute_dtype, training):
            contracted_axes = _CONTRACTED_AXES[self.equation] if _computes_as_one_matmul(self) else None
            return _project_with_float32_epilogue(self, self.equation, inputs, contracted_axes)
        if _computes_as_one_matmul(self):
            return _einsum_as_one_matmul(self, inputs)
        return super().call(inputs, training=training)

    def quantize(self, mode=None, type_check=True, config=None):
        """`keras.layers.EinsumDense.quantize`, past its refusal of subclasses (see `BertDense.quantize`)."""
        super().quantize(mode, type_check=False, config=config)
