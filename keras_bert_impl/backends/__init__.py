"""The operations whose fastest form depends on the backend: one function per operation, which chooses the
path (backend, device, dtype, whether a kernel is there, the kind of CPU) in one place and computes it.

The layers and the optimizers call these functions and never branch on the backend themselves. Each
function computes what its keras.ops path computes (the last lines of its body); the fast paths sit in one
small module per backend, imported only under that backend, and the tests check each against the keras.ops
path. Why each path is faster, with the measurements and their commands, is in docs/performance.md.

| operation | function | fast paths |
| --- | --- | --- |
| dense product x @ kernel + bias | `dense` | torch: float32 on an x86-64 CPU, oneDNN's products (`torch_ops.onednn_dense`), MKL's `addmm` without a recorded gradient on AVX2 (`torch_ops.blas_dense`); TensorFlow: float32 on a machine without GPUs or TPUs, the input's gradient reading the kernel's transpose written out (`tf_ops.dense_with_transposed_gradient`) |
| exact GELU of a dense product | `dense_gelu` | torch: `dense`'s oneDNN product without a recorded gradient, the GELU in its epilogue (`torch_ops.onednn_dense_gelu`) |
| x @ matrix^T (the masked-LM head's tied vocabulary product) | `dense_transposed` | torch: `dense`'s |
| bfloat16 product with a float32 result | `float32_epilogue`, `einsum_float32_result` | JAX's CPU: XLA's dot asked for a float32 result; TensorFlow at inference |
| the dense layers' path | `dense_runs_over_rows` | torch in every dtype, float32 everywhere |
| exact GELU | `gelu` | JAX: the erf form (`jax_ops.gelu`); TensorFlow: its derivative written out (`tf_ops.gelu`) |
| dropout | `dropout` | torch: its mask from float32 uniforms on the CPU, CUDA's kernel on a GPU (`torch_ops.dropout`); JAX's CPU in one process: the original threefry layout (`jax_ops.unpartitioned_threefry`) |
| scaled dot-product attention | `attention`, `fused_attention_applies` | torch: SDPA over the inputs' views, and SDPA with its dropout on a CUDA GPU, the products as `torch.matmul` elsewhere; JAX on a CUDA GPU without dropout in bfloat16 or float16: cuDNN's fused attention (`jax_ops.dot_product_attention`); JAX off its CPU otherwise: the fused op; JAX's CPU: the probabilities kept out of the next dot's fusion |
| the first rows of a sequence and the rest | `split_rows` | TensorFlow: `tf.split` for any length (`tf_ops.split_rows`) |
| an encoder block asked for two parts of its rows | `computes_whole_then_splits` | torch outside training: the block once, sliced |
| global-norm gradient clipping | `clip_by_global_norm` | torch: `torch._foreach_norm` (`torch_adamw`) |
| AdamW's update | `adam_weight_decay_update` | torch: the fused AdamW kernel (`torch_adamw`) |
| the backend's own random generators | `random_generator_states`, `set_random_generator_states` | torch: its CPU and CUDA generators, which its dropout draws from |

Where a CPU's kind decides between two paths (torch's dense product, in training and at inference; the
attention without dropout on every backend; TensorFlow's dense gradient), `cpu_paths` says which, from the
CPU's instruction set read once, and lets a user force one (`KERAS_BERT_IMPL_CPU_PATHS`, `cpu_paths.forced`).

`tf_replicas` (sums and gathers over tf.distribute replicas) is called directly by the losses and optimizers: it is the
identity outside a TensorFlow replica context.

The LiteRT export (keras_bert_impl/export/tf_litert.py) traces the model under `export_target("litert")`, in
which the functions choose forms LiteRT computes with its own operators, the same outputs to float tolerance:
`gelu` is `tf.nn.gelu`, which LiteRT's converter writes as its builtin GELU (the fast path's erf is a
TensorFlow (Flex) op there, which the stock interpreter lacks). The ONNX export traces nothing: it writes the
graph's nodes from the layers' weights (keras_bert_impl/export/onnx_export.py).
"""

import contextlib
import contextvars
import math

import keras
from keras import ops

from keras_bert_impl.backends import cpu_paths


# ------------------------------------------------------------------------------------------------ exports
_EXPORT_TARGET = contextvars.ContextVar("export_target", default=None)
EXPORT_TARGETS = ("litert",)


@contextlib.contextmanager
def export_target(target):
    """Within it, the functions compute the forms the runtime of `target` ("litert") computes with its own
    operators (see the module docstring); the model traced in it is the exported graph.

    Examples:

    >>> with export_target("litert"):
    ...     current_export_target()
    'litert'
    >>> current_export_target() is None
    True
    """
    if target not in EXPORT_TARGETS:
        raise ValueError(f"export target {target!r}: expected one of {EXPORT_TARGETS}.")
    token = _EXPORT_TARGET.set(target)
    try:
        yield
    finally:
        _EXPORT_TARGET.reset(token)


def current_export_target():
    """The target of the enclosing `export_target`, or None outside one."""
    return _EXPORT_TARGET.get()


# ------------------------------------------------------------------------------------------ dense products
def dense(x, kernel, bias=None):
    """x @ kernel + bias over x's last axis: [..., I] x [I, O] (+ [O]) -> [..., O], differentiable.

    One 2D product over [rows, I]. torch: float32 on an x86-64 CPU through the path `cpu_paths` chooses
    (`dense` where a gradient is recorded, `dense_inference` where none is), oneDNN's products or MKL's
    `torch.addmm`, else `torch.matmul`. TensorFlow: float32 on a machine without GPUs or TPUs, where
    `cpu_paths` chooses it (both kinds of CPU), with an input gradient that reads the kernel's transpose
    written out where I <= O, else TensorFlow's matmul. JAX: keras.ops.matmul over the rows.

    Examples:

    >>> y = dense(keras.ops.ones((2, 3, 4)), keras.ops.ones((4, 5)), keras.ops.ones((5,)))
    >>> tuple(y.shape), float(y[0, 0, 0])
    ((2, 3, 5), 5.0)
    """
    backend = keras.backend.backend()
    if backend == "torch":
        from keras_bert_impl.backends import torch_ops

        kernel, bias = ops.convert_to_tensor(kernel), None if bias is None else ops.convert_to_tensor(bias)
        path = _torch_dense_path(x, kernel, bias)
        if path == "onednn":
            return torch_ops.onednn_dense(x, kernel, bias)
        if path == "blas":
            return torch_ops.blas_dense(x, kernel, bias)
        return torch_ops.matmul_dense(x, kernel, bias)
    if backend == "tensorflow":
        from keras_bert_impl.backends import tf_ops

        kernel, bias = ops.convert_to_tensor(kernel), None if bias is None else ops.convert_to_tensor(bias)
        if tf_ops.transposed_gradient_applies(x, kernel) and cpu_paths.path(backend, "dense") == "transposed_gradient":
            return tf_ops.dense_with_transposed_gradient(x, kernel, bias)
        return tf_ops.matmul_dense(x, kernel, bias)
    y = over_rows(ops.matmul, x, kernel, 1)  # [..., O]
    return y if bias is None else ops.add(y, bias)


def dense_gelu(x, kernel, bias=None):
    """Exact GELU of x @ kernel + bias (`gelu(dense(x, kernel, bias))`): the intermediate layer's product.

    torch at inference (no gradient recorded) where `dense` takes oneDNN's product: one oneDNN product with
    the GELU in its epilogue (`torch_ops.onednn_dense_gelu`); elsewhere `dense`, then `gelu`.

    Examples:

    >>> y = dense_gelu(keras.ops.ones((2, 3, 4)), keras.ops.ones((4, 5)) / 4.0)
    >>> tuple(y.shape), round(float(y[0, 0, 0]), 4)
    ((2, 3, 5), 0.8413)
    """
    if keras.backend.backend() == "torch":
        from keras_bert_impl.backends import torch_ops

        kernel, bias = ops.convert_to_tensor(kernel), None if bias is None else ops.convert_to_tensor(bias)
        if not torch_ops.records_gradient(x, kernel, bias) and _torch_dense_path(x, kernel, bias) == "onednn":
            return torch_ops.onednn_dense_gelu(x, kernel, bias)
    return gelu(dense(x, kernel, bias))


def _torch_dense_path(x, kernel, bias):
    """torch's product of these tensors: "onednn" or "blas", the path `cpu_paths` chooses for float32 on an
    x86-64 CPU (`dense` where a gradient is recorded, `dense_inference` where none is); else None
    (`torch.matmul`)."""
    from keras_bert_impl.backends import torch_ops

    if not torch_ops.onednn_dense_applies(x, kernel, bias):
        return None
    return cpu_paths.path("torch", "dense" if torch_ops.records_gradient(x, kernel, bias) else "dense_inference")


def dense_transposed(x, matrix):
    """x @ matrix^T: [B, P, H] x [V, H] -> [B, P, V] (the masked-LM head's product with the word embeddings).

    torch: `dense`'s products (oneDNN's in float32 on the CPU); elsewhere one einsum.

    Examples:

    >>> tuple(dense_transposed(keras.ops.ones((2, 3, 4)), keras.ops.ones((7, 4))).shape)
    (2, 3, 7)
    """
    if keras.backend.backend() == "torch":
        return dense(x, ops.transpose(matrix))
    return ops.einsum("bph,vh->bpv", x, matrix)


def over_rows(product, inputs, kernel, contracted_axes):
    """`product(rows, kernel_2d)` of the input as [rows, in] and the kernel as [in, out] (`in`: the input's
    last k axes, which the kernel's first k contract), returned as inputs.shape[:-k] + kernel.shape[k:].

    Examples:

    >>> y = over_rows(keras.ops.matmul, keras.ops.ones((2, 3, 2, 4)), keras.ops.ones((2, 4, 5)), 2)
    >>> tuple(y.shape)
    (2, 3, 5)
    """
    contracted = math.prod(kernel.shape[:contracted_axes])
    rows = product(ops.reshape(inputs, (-1, contracted)), ops.reshape(kernel, (contracted, -1)))  # [N, out]
    return ops.reshape(rows, (*ops.shape(inputs)[:-contracted_axes], *kernel.shape[contracted_axes:]))


def float32_epilogue(compute_dtype, training):
    """Whether a dense layer under this compute dtype takes its product with a float32 result and adds its
    bias and applies its activation in float32 (`einsum_float32_result`): under bfloat16 on JAX's CPU, and
    on TensorFlow at inference (in training, TensorFlow's gradient of that path is many times slower than
    Keras' own bfloat16 call).

    Examples:

    >>> float32_epilogue("float32", training=False)
    False
    """
    if compute_dtype != "bfloat16":
        return False
    backend = keras.backend.backend()
    if backend == "jax":
        from keras_bert_impl.backends import jax_ops

        return jax_ops.on_cpu()
    return backend == "tensorflow" and not training


def einsum_float32_result(equation, x, kernel):
    """einsum of bfloat16 operands with a float32 result: accumulated in float32 on JAX (XLA's dot asked
    for a float32 result; keras.ops.einsum has no `preferred_element_type`), cast from the bfloat16 product
    elsewhere."""
    if keras.backend.backend() == "jax":
        from keras_bert_impl.backends import jax_ops

        return jax_ops.einsum_float32_result(equation, x, kernel)
    return ops.cast(ops.einsum(equation, x, kernel), "float32")


def dense_runs_over_rows(compute_dtype):
    """Whether `BertDense` computes through `dense` (else through Keras' own Dense call): on torch in every
    dtype, and in float32 on every backend.

    Examples:

    >>> dense_runs_over_rows("float32")
    True
    """
    return keras.backend.backend() == "torch" or compute_dtype == "float32"


# ------------------------------------------------------------------------------------------- activations
def gelu(x):
    """Exact GELU, x * Phi(x) with Phi(x) = (1 + erf(x / sqrt(2))) / 2.

    JAX: the erf form (`jax_ops.gelu`; Keras' is JAX's erfc form); TensorFlow: its derivative
    Phi(x) + x * phi(x) written out (`tf_ops.gelu`), and for a LiteRT export Keras' exact GELU
    (`tf.nn.gelu`, which LiteRT's converter writes as its builtin GELU); torch: Keras' exact GELU.

    Examples:

    >>> round(float(gelu(keras.ops.convert_to_tensor(1.0))), 4)
    0.8413
    """
    backend = keras.backend.backend()
    if backend == "jax":
        from keras_bert_impl.backends import jax_ops

        return jax_ops.gelu(x)
    if backend == "tensorflow" and current_export_target() != "litert":
        from keras_bert_impl.backends import tf_ops

        return tf_ops.gelu(x)
    return keras.activations.gelu(x, approximate=False)


def dropout(x, rate, keras_dropout):
    """`x` with each element zeroed with probability `rate` and the others scaled by 1 / (1 - rate), in
    training; `keras_dropout()` computes Keras' own dropout of `x`.

    torch: its own mask from torch's default generator (`torch_ops.dropout`); JAX on its CPU in one process
    without a Keras distribution: Keras' dropout with the bits of JAX's original threefry layout
    (`jax_ops.unpartitioned_threefry`); elsewhere Keras' dropout.

    Examples:

    >>> y = dropout(keras.ops.ones((4, 100)), 0.5, lambda: keras.random.dropout(keras.ops.ones((4, 100)), 0.5))
    >>> sorted(set(keras.ops.convert_to_numpy(y).ravel().tolist()))
    [0.0, 2.0]
    """
    backend = keras.backend.backend()
    if backend == "torch":
        from keras_bert_impl.backends import torch_ops

        return torch_ops.dropout(x, rate)
    if backend == "jax":
        from keras_bert_impl.backends import jax_ops

        if jax_ops.draws_faster_unpartitioned():
            with jax_ops.unpartitioned_threefry():
                return keras_dropout()
    return keras_dropout()


# --------------------------------------------------------------------------------------------- attention
def fused_attention_applies(q):
    """Whether attention without dropout on the probabilities runs as one fused kernel for queries `q`
    (torch: SDPA; elsewhere `keras.ops.dot_product_attention`): off the CPU (torch on a CUDA GPU; JAX off its CPU),
    and elsewhere where `cpu_paths` chooses "fused" (torch's CPU: SDPA's CPU kernel, on both kinds of CPU).

    Elsewhere `dot_product_attention` is a composition of the same products and softmax: TensorFlow's (on
    every device, where `cpu_paths`' choice applies as well) transposes to [batch, heads, seq, head_size] and
    back; JAX's on its CPU lays the probabilities and the context out through extra transposes and copies.
    There `attention` computes the products itself.
    """
    backend = keras.backend.backend()
    if backend == "torch" and q.is_cuda:
        return True
    if backend == "jax":
        from keras_bert_impl.backends import jax_ops

        if not jax_ops.on_cpu():
            return True
    return cpu_paths.path(backend, "attention") == "fused"


def attention(q, k, v, bias, dropout=None, training=None):
    """softmax(q k^T / sqrt(d) + bias) v per head, with `dropout` on the probabilities in training: the
    context [B, R, A, d] of queries q [B, R, A, d], keys and values k, v [B, T, A, d] and an additive bias
    of q's dtype broadcastable to [B, A, R, T].

    Args:
        dropout: None (inference, or no dropout), else the dropout layer applied to the probabilities (its
            `rate` is read by the fused kernel that applies it itself).
        training: passed to `dropout`.

    The paths: with dropout on a CUDA GPU (torch) one SDPA kernel that applies it
    (`torch_ops.scaled_dot_product_attention`); without dropout on a CUDA GPU under JAX in bfloat16 or float16,
    cuDNN's fused attention (`jax_ops.cudnn_attention_applies`; `jax.nn.dot_product_attention` takes no
    dropout); without dropout, where `fused_attention_applies`, one SDPA kernel over the inputs' views on
    torch (`torch_ops.scaled_dot_product_attention`), `keras.ops.dot_product_attention` elsewhere; else the
    queries scaled (before the product: [B, R, A, d] is half as many numbers as the logits at R = T), the
    product with the keys, softmax in float32 (for mixed precision), dropout, the product with the values
    (the "explicit" path of `cpu_paths`); on torch the products are
    `torch.matmul` over [B, A, ...] views, and on JAX without dropout the probabilities are kept out of the
    next dot's fusion (`jax_ops.unfused`).

    Examples:

    >>> q = keras.ops.ones((1, 3, 2, 4))
    >>> tuple(attention(q, q, q, keras.ops.zeros((1, 1, 1, 3))).shape)
    (1, 3, 2, 4)
    """
    backend = keras.backend.backend()
    if dropout is not None and backend == "torch":
        from keras_bert_impl.backends import torch_ops

        if torch_ops.fused_dropout_attention_applies(q):
            return torch_ops.scaled_dot_product_attention(q, k, v, bias, dropout.rate)
    if dropout is None and backend == "jax":
        from keras_bert_impl.backends import jax_ops

        if jax_ops.cudnn_attention_applies(q):
            return jax_ops.dot_product_attention(q, k, v, bias, implementation="cudnn")  # [B, R, A, d]
    if dropout is None and fused_attention_applies(q):
        if backend == "torch":
            from keras_bert_impl.backends import torch_ops

            return torch_ops.scaled_dot_product_attention(q, k, v, bias, 0.0)  # [B, R, A, d]
        return ops.dot_product_attention(q, k, v, bias=bias)  # [B, R, A, d]
    q = q * ops.cast(1.0 / math.sqrt(q.shape[-1]), q.dtype)
    logits = _attention_logits(k, q) + bias  # [B, A, R, T]
    probs = ops.cast(ops.softmax(ops.cast(logits, "float32"), axis=-1), q.dtype)
    if dropout is not None:
        probs = dropout(probs, training=training)
    elif backend == "jax":
        from keras_bert_impl.backends import jax_ops

        probs = jax_ops.unfused(probs)
    return _attention_context(probs, v)  # [B, R, A, d]


def _attention_logits(k, q):
    """[B, A, R, T] logits from keys [B, T, A, d] and (scaled) queries [B, R, A, d]."""
    if keras.backend.backend() == "torch":
        from keras_bert_impl.backends import torch_ops

        return torch_ops.attention_logits(k, q)
    return ops.einsum("bsnh,btnh->bnts", k, q)


def _attention_context(probs, v):
    """[B, R, A, d] context from probabilities [B, A, R, T] and values [B, T, A, d]."""
    if keras.backend.backend() == "torch":
        from keras_bert_impl.backends import torch_ops

        return torch_ops.attention_context(probs, v)
    return ops.einsum("bnts,bsnh->btnh", probs, v)


def split_rows(hidden_states, split_at):
    """[B, T, H] as its first `split_at` rows [B, n, H] and the others [B, T - n, H], for any T.

    TensorFlow: `tf_ops.split_rows` (keras.ops.split there needs a static T, which a functional graph or a
    SavedModel signature leaves unknown); elsewhere keras.ops.split. One split rather than two slices: its
    gradient is one concatenation.

    Examples:

    >>> first, rest = split_rows(keras.ops.ones((2, 5, 3)), 1)
    >>> tuple(first.shape), tuple(rest.shape)
    ((2, 1, 3), (2, 4, 3))
    """
    if keras.backend.backend() == "tensorflow":
        from keras_bert_impl.backends import tf_ops

        return tf_ops.split_rows(hidden_states, split_at)
    return ops.split(hidden_states, [split_at], axis=1)


def computes_whole_then_splits(training):
    """Whether an encoder block asked for two parts of its rows (`split_at`) computes all rows as one and
    slices them: on torch outside training.

    Eager torch computes every part whether read or not; the parts pay off only in the backward pass, which
    skips a part the loss does not read (a sentence head's other rows), so torch splits in training only.
    """
    return keras.backend.backend() == "torch" and not training


# -------------------------------------------------------------------------------------------- optimizers
def clip_by_global_norm(grads, clip_norm, keras_clip):
    """`grads` scaled so that their global norm is at most `clip_norm` (NaN for a non-finite norm), as Keras'
    global-norm clipping `keras_clip(grads)` computes it: on torch in one pass (`torch._foreach_norm`)."""
    if keras.backend.backend() == "torch":
        from keras_bert_impl.backends import torch_adamw

        return torch_adamw.clip_by_global_norm(grads, clip_norm)
    return keras_clip(grads)


def adam_weight_decay_update(optimizer, grads, variables, learning_rate, keras_update):
    """One `AdamWeightDecay` step of `optimizer` on `variables`: on torch through its fused AdamW kernel
    where every variable and gradient is a float32 tensor on one CPU or CUDA device
    (`torch_adamw.supports_fused_update`), else Keras' per-variable loop `keras_update()`."""
    if keras.backend.backend() == "torch":
        from keras_bert_impl.backends import torch_adamw

        if torch_adamw.supports_fused_update(grads, variables):
            return torch_adamw.adam_weight_decay_update(optimizer, grads, variables, learning_rate)
    return keras_update()


# ------------------------------------------------------------------------------------------ random state
def random_generator_states():
    """The states of the backend's own random generators, which its dropout draws from besides Keras' seed
    generators, as `{name: numpy array}`: on torch `torch_cpu` and `torch_cuda/<i>`; none elsewhere."""
    if keras.backend.backend() == "torch":
        from keras_bert_impl.backends import torch_ops

        return torch_ops.generator_states()
    return {}


def set_random_generator_states(states):
    """Sets the states `random_generator_states()` returned (other names in `states` are left alone)."""
    if keras.backend.backend() == "torch":
        from keras_bert_impl.backends import torch_ops

        torch_ops.set_generator_states(states)
