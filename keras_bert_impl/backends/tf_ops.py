"""The TensorFlow backend's fast paths: the exact GELU with its derivative written out, dense products
whose input gradient reads a transposed copy of the kernel on the CPU, and a split of a sequence's rows.

TensorFlow by nature: `keras_bert_impl.backends` imports this module only when KERAS_BACKEND is tensorflow.
"""

import functools
import math

import tensorflow as tf

_INV_SQRT2 = 1.0 / math.sqrt(2.0)
_INV_SQRT_2PI = 1.0 / math.sqrt(2.0 * math.pi)


@tf.custom_gradient
def gelu(x):
    """Exact GELU x * Phi(x), Phi(x) = (1 + erf(x / sqrt(2))) / 2, with the gradient Phi(x) + x * phi(x).

    `keras.activations.gelu(approximate=False)` calls `tf.nn.gelu`, x * erfc(-x / sqrt(2)) / 2, whose
    gradient TensorFlow derives op by op through erfc (an exponential, negations and a chain of multiplies,
    each a pass over the [tokens, intermediate] activations). Here the forward keeps Phi(x) for the backward,
    which computes phi(x) = exp(-x^2 / 2) / sqrt(2 pi) and one multiply-add. Values within 2e-6 of float64,
    and gradients within 1e-6, for |x| <= 12 (tests/test_layers.py).
    """
    cdf = 0.5 * (1.0 + tf.math.erf(x * _INV_SQRT2))

    def grad(upstream):
        pdf = tf.exp(-0.5 * tf.square(x)) * _INV_SQRT_2PI
        return upstream * (cdf + x * pdf)

    return x * cdf, grad


def transposed_gradient_applies(x, kernel):
    """Whether `dense_with_transposed_gradient` computes x @ kernel: float32 on a machine without GPUs or
    TPUs, where its input gradient was measured faster."""
    return x.dtype == kernel.dtype == tf.float32 and _cpu_only()


def matmul_dense(x, kernel, bias=None):
    """x @ kernel + bias over x's last axis, TensorFlow's matmul (a tensordot over a [..., I] input)."""
    y = tf.matmul(x, kernel) if x.shape.rank == 2 else tf.tensordot(x, kernel, [[x.shape.rank - 1], [0]])
    return y if bias is None else y + bias


def dense_with_transposed_gradient(x, kernel, bias=None):
    """x @ kernel + bias over x's last axis: [..., I] x [I, O] (+ [O]) -> [..., O], differentiable.

    The forward is the product Keras' Dense computes, as one 2D matmul with the bias added (TensorFlow
    fuses the two into one oneDNN call). The input's gradient dy @ kernel^T is where this differs.
    TensorFlow's MatMul gradient reads the kernel transposed (`transpose_b`), which oneDNN on a CPU runs
    slower where I <= O than a product with the kernel's transpose computed first. So where I <= O the
    gradient computes the transpose first, as a 3D transpose, which TensorFlow's graph optimizer does not
    fold back into the matmul. Where I > O the transposed read is as fast, and the gradient is TensorFlow's.
    The kernel's gradient is TensorFlow's x^T @ dy, the bias's its BiasAddGrad.
    """
    # Variables read as tensors: a custom gradient differentiates with respect to its tensor arguments.
    kernel = tf.convert_to_tensor(kernel)
    bias = None if bias is None else tf.convert_to_tensor(bias)
    inputs, outputs = kernel.shape
    rows = tf.reshape(x, [-1, inputs])  # [N, I]
    y = _dense_2d(rows, kernel) if bias is None else _dense_2d_with_bias(rows, kernel, bias)  # [N, O]
    if x.shape.rank == 2:
        return y
    return tf.reshape(y, tf.concat([tf.shape(x)[:-1], [outputs]], axis=0))


@functools.lru_cache(maxsize=None)
def _cpu_only():
    return not tf.config.list_logical_devices("GPU") and not tf.config.list_logical_devices("TPU")


def _input_gradient(dy, kernel):
    """dy @ kernel^T: [N, O] x [I, O]^T -> [N, I] (see `dense_with_transposed_gradient`)."""
    inputs, outputs = kernel.shape
    if inputs > outputs:
        return tf.matmul(dy, kernel, transpose_b=True)
    return _input_gradient_written_out(dy, kernel)


def _input_gradient_written_out(dy, kernel):
    """dy @ kernel^T with kernel^T [O, I] computed first."""
    inputs, outputs = kernel.shape
    # The transpose as [1, I, O] -> [1, O, I]: TensorFlow's arithmetic optimizer folds a 2D transpose
    # that feeds a matmul into the matmul's transpose_b.
    transposed = tf.reshape(tf.transpose(tf.reshape(kernel, [1, inputs, outputs]), [0, 2, 1]), [outputs, inputs])
    return tf.matmul(dy, transposed)


@tf.custom_gradient
def _dense_2d(x, kernel):
    def grad(dy):
        return _input_gradient(dy, kernel), tf.matmul(x, dy, transpose_a=True)

    return tf.matmul(x, kernel), grad


@tf.custom_gradient
def _dense_2d_with_bias(x, kernel, bias):
    def grad(dy):
        return _input_gradient(dy, kernel), tf.matmul(x, dy, transpose_a=True), tf.raw_ops.BiasAddGrad(out_backprop=dy)

    return tf.nn.bias_add(tf.matmul(x, kernel), bias), grad


def split_rows(x, split_at):
    """x [B, T, ...] as its first `split_at` rows [B, n, ...] and the others [B, T - n, ...], for any T.

    `keras.ops.split` on TensorFlow computes the sizes from the static shape, which a functional model's
    graph or a SavedModel's signature leaves unknown. One split instead of two slices: TensorFlow's gradient
    of a split is one concatenation, of a slice a zero-padded copy of the whole (`StridedSliceGrad`).
    """
    return tf.split(x, [split_at, -1], axis=1)
