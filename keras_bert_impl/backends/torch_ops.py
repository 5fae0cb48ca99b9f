"""The PyTorch backend's fast paths for BERT's layers: dropout and the two products of attention.

PyTorch by nature: the layers import this module only when KERAS_BACKEND is torch. Each function computes
what its keras.ops counterpart computes; the tests check each against it.
"""

import torch


def dropout(x, rate):
    """`x` with each element zeroed with probability `rate` and the others scaled by 1 / (1 - rate).

    The keep mask is `uniform >= rate` over float32 uniforms from torch's default generator (the one
    `torch.nn.functional.dropout` draws from, which Keras' unseeded dropout calls), whatever `x`'s dtype:
    bfloat16 uniforms have 8 significant bits, and `rand_like` of a bfloat16 tensor drops 10.2% at rate
    0.1 (4M draws). On this 2-core CPU a
    [16, 8, 128, 128] mask takes 8.0 ms this way and 12.4 ms through `torch.bernoulli_`, which
    `torch.nn.functional.dropout` calls (13.5 ms with its multiply; docs/performance.md).
    """
    keep = torch.rand(x.shape, dtype=torch.float32, device=x.device) >= rate
    return torch.where(keep, x * (1.0 / (1.0 - rate)), 0.0)


def attention_logits(k, q):
    """q . k over the head dimension: [B, A, R, T] from k [B, T, A, d] and q [B, R, A, d].

    `torch.einsum("bsnh,btnh->bnts", k, q)` computes the same; on the CPU its batched product over these
    strided views is slower than `torch.matmul` over [B, A, R, d] x [B, A, d, T] (a bert_small attention's
    forward and backward with dropout: 35.0 ms against 40.3 ms).
    """
    return torch.matmul(q.permute(0, 2, 1, 3), k.permute(0, 2, 3, 1))


def attention_context(probs, v):
    """The probability-weighted values: [B, R, A, d] from probs [B, A, R, T] and v [B, T, A, d]."""
    return torch.matmul(probs, v.permute(0, 2, 1, 3)).permute(0, 2, 1, 3)
