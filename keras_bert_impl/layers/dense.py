"""BertDense and BertEinsumDense: Keras' Dense and EinsumDense whose bias and activation run in float32
under a bfloat16 compute dtype, on the backends where that is the fast way.

Why not keras.layers.Dense / EinsumDense as they are: under `mixed_bfloat16` they compute x @ W with a
bfloat16 result, then add the bias and apply the activation in bfloat16. On a 2-core AMD EPYC with AVX-512
BF16 (measured in docs/performance.md and benchmarks/results/bf16/results.md), that wastes most of
bfloat16's gain on two backends:
  - JAX: XLA's CPU dot with a bfloat16 *result* runs at float32 speed (about 160 GFLOP/s for
    [1024, 768] x [768, 3072]); asked for a float32 result (`preferred_element_type`) the same bfloat16
    operands run at about 400 GFLOP/s.
  - TensorFlow: the matmul itself is fast in bfloat16 (oneDNN, about 375 GFLOP/s), but the elementwise
    kernels that follow are not vectorized for bfloat16: bias + exact GELU on [1024, 3072] takes 23 ms in
    bfloat16 against 5.6 ms in float32.
So here the matmul takes the bfloat16 operands and gives a float32 result (JAX on its CPU: directly;
TensorFlow: cast after the oneDNN matmul, at inference only), the bias and activation run in float32,
and the layer returns its compute dtype as every Keras layer does. On PyTorch, whose bfloat16 elementwise kernels are
vectorized, and in float32, the layers compute what Keras' do, with faster products (`dense_product`):
  - every backend: the product over a [batch, seq, ...] input is one 2D matmul, [rows, in] x [in, out].
    On TensorFlow, Keras' einsum for the attention's projections is a batch matmul broadcasting the
    kernel, whose kernel gradient is slower (`_einsum_as_one_matmul`). On JAX, XLA's CPU compiles a 2D
    product and its gradients to faster dots than a product over the 3D input: a bert_small token head's
    train step (16 x 128) took 0.67-0.70 s against 0.77-0.81 s (docs/performance.md).
  - TensorFlow: the input's gradient of a float32 product reads the kernel's transpose written out, which
    oneDNN multiplies faster on the CPU (`tf_ops.dense`).
  - torch: float32 products run in oneDNN instead of MKL's sgemm, twice as fast on the CPU of
    docs/performance.md (`torch_ops.dense`).
Weights, names and configs are Keras' own, so checkpoints and `get_config` are those of Keras' layers.
"""

import math

import keras
from keras import ops


def _float32_epilogue(compute_dtype, training):
    """Whether this backend is faster with a float32 matmul result and float32 bias/activation.

    On JAX on its CPU only: on a GPU the float32 results made a bert_base pretraining step take 0.0450 s
    instead of 0.0336 s (H200, 64 x 128; benchmarks/results/gpu_pretraining). On TensorFlow only at
    inference: in training, TensorFlow's gradient of the float32 epilogue makes a bert_small step (8 x 64,
    mixed_bfloat16) take 12.6 s instead of 0.23 s with Keras' own bfloat16 call (docs/performance.md).
    """
    if compute_dtype != "bfloat16":
        return False
    backend = keras.backend.backend()
    if backend == "jax":
        from keras_bert_impl.backends import jax_ops

        return jax_ops.on_cpu()
    return backend == "tensorflow" and not training


def _einsum_float32_result(equation, x, kernel):
    """einsum of bfloat16 operands with a float32 result: accumulated in float32 on JAX, cast on TensorFlow."""
    if keras.backend.backend() == "jax":
        from keras_bert_impl.backends import jax_ops  # keras.ops.einsum has no preferred_element_type

        return jax_ops.einsum_float32_result(equation, x, kernel)
    return ops.cast(ops.einsum(equation, x, kernel), "float32")


def _project_with_float32_epilogue(layer, equation, inputs, contracted_axes=None):
    """`layer`'s kernel applied by `equation`, then its bias and activation in float32; cast to its compute dtype.

    `contracted_axes` k: the input's last k axes are contracted with the kernel's first k, computed as one
    2D product [rows, in] x [in, out], as `dense_product` does in float32.
    """
    if contracted_axes is None:
        x = _einsum_float32_result(equation, inputs, layer.kernel)
    else:
        x = _over_rows(lambda rows, kernel: _einsum_float32_result("ri,io->ro", rows, kernel),
                       inputs, layer.kernel, contracted_axes)
    if layer.bias is not None:
        x = x + ops.cast(layer.bias, "float32")
    if layer.activation is not None:
        x = layer.activation(x)
    return ops.cast(x, layer.compute_dtype)


def _over_rows(product, inputs, kernel, contracted_axes):
    """`product(rows, kernel_2d)` of the input as [rows, in] and the kernel as [in, out] (`in`: the input's
    last k axes, which the kernel's first k contract), returned as inputs.shape[:-k] + kernel.shape[k:]."""
    contracted = math.prod(kernel.shape[:contracted_axes])
    rows = product(ops.reshape(inputs, (-1, contracted)), ops.reshape(kernel, (contracted, -1)))  # [N, out]
    return ops.reshape(rows, (*ops.shape(inputs)[:-contracted_axes], *kernel.shape[contracted_axes:]))


# The equations of BertSelfAttention's projections, by the number of the input's trailing axes they contract
# with the kernel's leading axes: the output is then input.shape[:-k] + kernel.shape[k:].
_CONTRACTED_AXES = {"btd,dnh->btnh": 1, "btnh,nhd->btd": 2}


def dense_product(x, kernel, bias=None):
    """x @ kernel + bias over x's last axis: [..., I] x [I, O] (+ [O]) -> [..., O].

    One 2D product over [rows, I] (see the module docstring). On torch through `torch_ops.dense` (oneDNN's
    float32 products instead of MKL's, twice as fast on the CPU of docs/performance.md); on TensorFlow
    through `tf_ops.dense` (Keras' product, with an input gradient that reads the kernel's transpose
    written out, faster in oneDNN on the CPU); on JAX keras.ops.matmul and add over the rows.
    """
    backend = keras.backend.backend()
    if backend == "torch":
        from keras_bert_impl.backends import torch_ops as backend_ops
    elif backend == "tensorflow":
        from keras_bert_impl.backends import tf_ops as backend_ops
    else:
        y = _over_rows(ops.matmul, x, kernel, 1)  # [..., O]
        return y if bias is None else ops.add(y, bias)
    return backend_ops.dense(x, ops.convert_to_tensor(kernel), None if bias is None else ops.convert_to_tensor(bias))


def _computes_as_one_matmul(layer):
    """Whether `layer` (a BertEinsumDense) is a projection of `_CONTRACTED_AXES` with its bias on every output
    axis, so that `_einsum_as_one_matmul` computes it."""
    return (layer.equation in _CONTRACTED_AXES
            and (layer.bias is None
                 or tuple(layer.bias.shape) == tuple(layer.kernel.shape[_CONTRACTED_AXES[layer.equation]:])))


def _einsum_as_one_matmul(layer, inputs):
    """`keras.layers.EinsumDense.call` computed as one 2D product: [rows, contracted] x [contracted, out].

    Keras' TensorFlow einsum computes "btd,dnh->btnh" (and "btnh,nhd->btd") as a matmul of the 3D input
    with the 2D kernel, a batch matmul broadcasting the kernel, whose kernel gradient is one product per
    example summed over the batch. As one 2D matmul it is one product. With `tf_ops.gelu`, a bert_small
    token head's train step (16 x 128, 2-core CPU) took 0.583 s instead of 0.619 s (docs/performance.md).
    On JAX the 2D dots are faster as well, and on torch the product is oneDNN's (see `dense_product`).
    """
    bias = None if layer.bias is None else ops.reshape(layer.bias, (-1,))
    x = _over_rows(lambda rows, kernel: dense_product(rows, kernel, bias), inputs, layer.kernel,
                   _CONTRACTED_AXES[layer.equation])
    if layer.activation is not None:
        x = layer.activation(x)
    return x


def _uses_keras_call(layer):
    """Quantized or LoRA layers keep Keras' own call, which knows about them."""
    return bool(getattr(layer, "quantization_mode", None)) or bool(getattr(layer, "lora_enabled", False))


@keras.saving.register_keras_serializable(package="keras_bert_impl")
class BertDense(keras.layers.Dense):
    """`keras.layers.Dense` with the bias and activation in float32 under bfloat16 on JAX's CPU and TensorFlow, and
    the products of `dense_product` in float32 (and on torch in every dtype).

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
        if _float32_epilogue(self.compute_dtype, training):
            return _project_with_float32_epilogue(self, "...i,io->...o", inputs, contracted_axes=1)
        backend = keras.backend.backend()
        if backend == "torch" or self.compute_dtype == "float32":
            x = dense_product(inputs, self.kernel, self.bias)
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
    """`keras.layers.EinsumDense` with the bias and activation in float32 under bfloat16 on JAX's CPU and
    TensorFlow.

    Same arguments, weights and outputs as `keras.layers.EinsumDense` (see the module docstring for why).

    Examples:

    >>> layer = BertEinsumDense("btd,dnh->btnh", output_shape=(None, 2, 4), bias_axes="nh")
    >>> tuple(layer(keras.ops.ones((2, 5, 8))).shape)
    (2, 5, 2, 4)
    """

    def call(self, inputs, training=None):
        if _uses_keras_call(self):
            return super().call(inputs, training=training)
        if _float32_epilogue(self.compute_dtype, training):
            contracted_axes = _CONTRACTED_AXES[self.equation] if _computes_as_one_matmul(self) else None
            return _project_with_float32_epilogue(self, self.equation, inputs, contracted_axes)
        if _computes_as_one_matmul(self):
            return _einsum_as_one_matmul(self, inputs)
        return super().call(inputs, training=training)

    def quantize(self, mode=None, type_check=True, config=None):
        """`keras.layers.EinsumDense.quantize`, past its refusal of subclasses (see `BertDense.quantize`)."""
        super().quantize(mode, type_check=False, config=config)
