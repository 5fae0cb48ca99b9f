"""The PyTorch backend's fast paths for BERT's layers: the dense products (at inference with the GELU in
the product's epilogue), dropout, the two products of attention, and attention in one SDPA kernel; and the
states of torch's generators.

PyTorch by nature: `keras_bert_impl.backends` imports this module only when KERAS_BACKEND is torch. Each
function computes what its keras.ops counterpart computes; the tests check each against it.
"""

import platform

import torch
from torch.autograd.function import once_differentiable


def onednn_dense_applies(x, kernel, bias):
    """Whether `onednn_dense` computes x @ kernel + bias: float32 tensors on an x86-64 CPU whose torch has
    oneDNN's linear op."""
    return (_ONEDNN_LINEAR and x.device.type == "cpu" and x.dtype == kernel.dtype == torch.float32
            and x.numel() > 0 and kernel.dim() == 2 and (bias is None or bias.dtype == torch.float32))


def onednn_dense(x, kernel, bias=None):
    """x @ kernel + bias over x's last axis: [..., I] x [I, O] (+ [O]) -> [..., O], differentiable.

    Its three products (forward, and the input's and kernel's gradients) run in oneDNN through
    `torch.ops.mkldnn._linear_pointwise`, the op torch.compile's CPU backend emits for a linear layer, where
    `torch.matmul` and `torch.nn.functional.linear` call MKL's sgemm, slower on the AMD CPU of
    docs/performance.md (`benchmarks/torch_dense_paths.py`).
    """
    y = _OneDNNDense.apply(x.reshape(-1, x.shape[-1]), kernel, bias)  # [N, O]
    return y.reshape(*x.shape[:-1], kernel.shape[-1])


def onednn_dense_gelu(x, kernel, bias=None):
    """Exact GELU of x @ kernel + bias in one oneDNN product, the GELU (erf form) in its epilogue: for
    inference (no gradient). `onednn_dense` followed by torch's exact GELU to float32 rounding, without a
    pass over the [rows, O] product (tests/test_cpu_paths.py)."""
    y = torch.ops.mkldnn._linear_pointwise(x.reshape(-1, x.shape[-1]), kernel.t(), bias, "gelu", [], "none")  # [N, O]
    return y.reshape(*x.shape[:-1], kernel.shape[-1])


def records_gradient(*tensors):
    """Whether autograd records a product of `tensors` (None for an absent one): grad mode on and one of them
    requiring a gradient (training; Keras' predict runs under `torch.no_grad`)."""
    return torch.is_grad_enabled() and any(t is not None and t.requires_grad for t in tensors)


def blas_dense(x, kernel, bias=None):
    """x @ kernel + bias over x's last axis as one `torch.addmm` (`torch.mm` without a bias) over [rows, I]:
    MKL's sgemm with the bias in its epilogue, and MKL's products for the two gradients (autograd's). Faster
    than `onednn_dense` without a gradient on the AVX2 CPU of docs/performance.md, slower on the AVX-512 ones
    (docs/performance.md, "Paths chosen by the CPU")."""
    rows = x.reshape(-1, x.shape[-1])  # [N, I]
    y = torch.mm(rows, kernel) if bias is None else torch.addmm(bias, rows, kernel)  # [N, O]
    return y.reshape(*x.shape[:-1], kernel.shape[-1])


def matmul_dense(x, kernel, bias=None):
    """x @ kernel + bias over x's last axis through `torch.matmul` (torch's bfloat16 CPU matmul calls oneDNN)."""
    y = torch.matmul(x, kernel)
    return y if bias is None else y + bias


# oneDNN's linear op, on an x86-64 CPU (where it was measured).
_ONEDNN_LINEAR = (platform.machine().lower() in ("x86_64", "amd64") and torch.backends.mkldnn.is_available()
                  and hasattr(torch.ops.mkldnn, "_linear_pointwise"))


def _onednn_matmul(a, b_transposed, bias=None):
    """a @ b_transposed.T (+ bias) in oneDNN: [N, I] x [O, I] -> [N, O] (strided views are read as they are)."""
    return torch.ops.mkldnn._linear_pointwise(a, b_transposed, bias, "none", [], "")


class _OneDNNDense(torch.autograd.Function):
    """y = x @ kernel + bias for a 2D x, its gradients computed in oneDNN as well (see `onednn_dense`)."""

    @staticmethod
    def forward(ctx, x, kernel, bias):  # x [N, I], kernel [I, O], bias [O] or None
        ctx.save_for_backward(x, kernel)
        ctx.has_bias = bias is not None
        return _onednn_matmul(x, kernel.t(), bias)  # [N, O]

    @staticmethod
    @once_differentiable
    def backward(ctx, dy):  # dy [N, O]
        x, kernel = ctx.saved_tensors
        dx = _onednn_matmul(dy, kernel) if ctx.needs_input_grad[0] else None  # dy @ kernel.T: [N, I]
        dkernel = _onednn_matmul(x.t(), dy.t()) if ctx.needs_input_grad[1] else None  # x.T @ dy: [I, O]
        dbias = dy.sum(0) if ctx.has_bias and ctx.needs_input_grad[2] else None  # [O]
        return dx, dkernel, dbias


def dropout(x, rate):
    """`x` with each element zeroed with probability `rate` and the others scaled by 1 / (1 - rate).

    The keep mask is `uniform >= rate` over float32 uniforms from torch's default generator (the one
    `torch.nn.functional.dropout` draws from, which Keras' unseeded dropout calls), whatever `x`'s dtype:
    bfloat16 uniforms have 8 significant bits, too few for the rate (tests/test_layers.py checks the rate for
    bfloat16 values). On the CPU this mask is cheaper than `torch.bernoulli_`, which
    `torch.nn.functional.dropout` calls (docs/performance.md).
    """
    if x.is_cuda:
        # CUDA's dropout kernel draws float32 uniforms for every dtype and masks and scales in one pass.
        return torch.nn.functional.dropout(x, rate, training=True)
    keep = torch.rand(x.shape, dtype=torch.float32, device=x.device) >= rate
    return torch.where(keep, x * (1.0 / (1.0 - rate)), 0.0)


def attention_logits(k, q):
    """q . k over the head dimension: [B, A, R, T] from k [B, T, A, d] and q [B, R, A, d].

    `torch.einsum("bsnh,btnh->bnts", k, q)` computes the same; on the CPU its batched product over these
    strided views is slower than `torch.matmul` over [B, A, R, d] x [B, A, d, T] (docs/performance.md).
    """
    return torch.matmul(q.permute(0, 2, 1, 3), k.permute(0, 2, 3, 1))


def attention_context(probs, v):
    """The probability-weighted values: [B, R, A, d] from probs [B, A, R, T] and v [B, T, A, d]."""
    return torch.matmul(probs, v.permute(0, 2, 1, 3)).permute(0, 2, 1, 3)


def fused_dropout_attention_applies(q):
    """Whether training attention (dropout on the probabilities) runs as one SDPA kernel: on a CUDA GPU.

    There it is faster than the products, softmax and dropout apart (docs/performance.md, "On a GPU"). On
    the CPU torch's SDPA with dropout is its math path, the same products and softmax with
    `torch.nn.functional.dropout`'s slower mask (`dropout` above).
    """
    return q.is_cuda


def scaled_dot_product_attention(q, k, v, bias, rate=0.0):
    """dropout(softmax(q k^T / sqrt(d) + bias), rate) v in one `scaled_dot_product_attention` call over the
    inputs' [B, A, ., d] views (no copies; `keras.ops.dot_product_attention` makes each contiguous first),
    which draws a dropout mask from torch's default generator of q's device: [B, R, A, d] from q [B, R, A, d],
    k and v [B, T, A, d] and an additive bias [B, 1, 1 or R, T] of q's dtype."""
    context = torch.nn.functional.scaled_dot_product_attention(
        q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2), attn_mask=bias, dropout_p=rate)  # [B, A, R, d]
    return context.transpose(1, 2)


def generator_states():
    """torch's global generators, which `dropout` and SDPA's dropout draw from: `torch_cpu` and, with CUDA,
    `torch_cuda/<i>` per device, as numpy arrays."""
    states = {"torch_cpu": torch.get_rng_state().numpy()}
    if torch.cuda.is_available():
        for i, state in enumerate(torch.cuda.get_rng_state_all()):
            states[f"torch_cuda/{i}"] = state.cpu().numpy()
    return states


def set_generator_states(states):
    """Sets the generators `generator_states` read (the CUDA ones only on as many devices as were saved)."""
    if "torch_cpu" in states:
        torch.set_rng_state(torch.from_numpy(states["torch_cpu"].copy()))
    cuda = sorted(name for name in states if name.startswith("torch_cuda/"))
    if cuda and torch.cuda.is_available() and len(cuda) == torch.cuda.device_count():
        torch.cuda.set_rng_state_all([torch.from_numpy(states[f"torch_cuda/{i}"].copy()) for i in range(len(cuda))])
