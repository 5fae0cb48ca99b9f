"""A plain numpy rendition of google-research/bert modeling.py's math: the reference for layer tests."""

import math

import numpy as np
from scipy.special import erf


def layer_norm(x, gamma, beta, eps):
    mean = x.mean(-1, keepdims=True)
    var = ((x - mean) ** 2).mean(-1, keepdims=True)
    return (x - mean) / np.sqrt(var + eps) * gamma + beta


def gelu(x):
    return 0.5 * x * (1.0 + erf(x / math.sqrt(2.0)))


def gelu_tanh(x):
    return 0.5 * x * (1.0 + np.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x**3)))


def softmax(x):
    e = np.exp(x - x.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def self_attention(x, padding_mask, wq, bq, wk, bk, wv, bv, wo, bo, num_heads):
    """x [B, T, H]; w* are [in, out] matrices; returns [B, T, H]."""
    batch, seq, hidden = x.shape
    d = hidden // num_heads

    def heads(t):  # [B, T, H] -> [B, A, T, d]
        return t.reshape(batch, seq, num_heads, d).transpose(0, 2, 1, 3)

    q, k, v = heads(x @ wq + bq), heads(x @ wk + bk), heads(x @ wv + bv)
    bias = (1.0 - padding_mask[:, None, None, :]) * -10000.0
    probs = softmax(q @ k.transpose(0, 1, 3, 2) / math.sqrt(d) + bias)  # [B, A, T, T]
    context = (probs @ v).transpose(0, 2, 1, 3).reshape(batch, seq, hidden)
    return context @ wo + bo
