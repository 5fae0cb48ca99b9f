"""The PyTorch-backend fast path of `AdamWeightDecay`: torch's fused AdamW kernel and multi-tensor clipping.

PyTorch by nature: `keras_bert_impl.backends` imports this module only when KERAS_BACKEND is torch.

Why: Keras runs a subclass of `keras.optimizers.Optimizer` on torch as a Python loop over the variables,
each update a dozen separate elementwise ops, i.e. a dozen passes over every parameter (Keras itself swaps
its own Adam/AdamW for `torch._foreach_*` versions, but a subclass does not get them), and on a GPU as
thousands of kernel launches a step. `torch._fused_adamw_` does the whole update in one pass over the
memory, and `torch._foreach_norm` computes the global norm in one pass (the step times on a CPU and a GPU
are in docs/performance.md).

The math is the original's (see `AdamWeightDecay`): torch's fused AdamW computes

    w = w * (1 - lr * weight_decay)
    m = beta_1 m + (1 - beta_1) g;   v = beta_2 v + (1 - beta_2) g^2
    w = w - lr * (m / bc1) / (sqrt(v / bc2) + epsilon),     bc_i = 1 - beta_i ** step

which is w - lr * (m / (sqrt(v) + epsilon) + weight_decay * w) when bc1 = bc2 = 1. The original BERT
optimizer has no bias correction; the kernel always applies it, so without bias correction the step it is
given is one where beta_i ** step underflows to exactly 0 (bc_i == 1.0 exactly).
"""

import torch

# beta ** _NO_BIAS_CORRECTION_STEP == 0.0 for every beta < 1 - 1e-4 (0.9999 ** 1e7 = e^-1000): bc = 1 exactly.
_NO_BIAS_CORRECTION_STEP = 1e7


@torch.no_grad()
def clip_by_global_norm(grads, clip_norm):
    """Keras' `clip_by_global_norm` (also NaN for a non-finite norm), scaling the gradients in place."""
    present = [g for g in grads if g is not None]
    if not present:
        return grads
    global_norm = torch.linalg.vector_norm(torch.stack(torch._foreach_norm(present)))
    # clip_norm / max(norm, clip_norm); `+ (norm - norm)` turns an inf or NaN norm into a NaN scale.
    scale = clip_norm / torch.clamp(global_norm, min=clip_norm) + (global_norm - global_norm)
    torch._foreach_mul_(present, scale)
    return grads


def supports_fused_update(grads, variables):
    """Whether every variable and gradient is a float32 tensor on one CPU or CUDA device, the case the fused
    path is written and tested for (anything else takes Keras' per-variable update)."""
    tensors = [v.value for v in variables] + [g for g in grads]
    return (all(t is not None and t.dtype == torch.float32 for t in tensors)
            and len({t.device for t in tensors}) == 1 and tensors[0].device.type in ("cpu", "cuda"))


@torch.no_grad()
def adam_weight_decay_update(optimizer, grads, variables, learning_rate):
    """One `AdamWeightDecay` step on every variable, through `torch._fused_adamw_` (two calls: the decayed
    variables and the excluded ones)."""
    lr = float(learning_rate)
    # `iterations` counts updates: a variable, or under gradient accumulation a tensor (batches // N).
    iterations = getattr(optimizer.iterations, "value", optimizer.iterations)
    step = float(iterations + 1) if optimizer.bias_correction else _NO_BIAS_CORRECTION_STEP
    groups = {True: ([], [], [], []), False: ([], [], [], [])}
    for grad, variable in zip(grads, variables):
        index = optimizer.variable_index(variable)
        params, gs, ms, vs = groups[optimizer._do_use_weight_decay(variable)]
        params.append(variable.value)
        gs.append(grad)
        ms.append(optimizer._momentums[index].value)
        vs.append(optimizer._velocities[index].value)
    state_step = torch.tensor(step, device=variables[0].value.device)  # the kernel reads each variable's step
    for decayed, (params, gs, ms, vs) in groups.items():
        if not params:
            continue
        torch._fused_adamw_(
            params, gs, ms, vs, [], [state_step] * len(params),
            lr=lr, beta1=optimizer.beta_1, beta2=optimizer.beta_2,
            weight_decay=optimizer.weight_decay_rate if decayed else 0.0,
            eps=optimizer.epsilon, amsgrad=False, maximize=False,
        )
