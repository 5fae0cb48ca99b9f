"""Backend-specific fast paths, one small module per backend. Everything else in the package is keras and
keras.ops only.

The rule: backend-neutral code imports a module of this folder only inside a branch on
`keras.backend.backend()` naming that module's backend, and only where the keras.ops path computes the
same result more slowly (or, for `tf_replicas`, is a no-op outside a tf.distribute replica context). The
tests check each fast path against the keras.ops path.

| module | backend | used by |
| --- | --- | --- |
| `jax_ops` | JAX | `layers/dense.py`: bfloat16 matmul with a float32 result on JAX's CPU; `layers/dropout.py`: the mask's bits from the original threefry layout on one CPU process; `layers/activations.py`: exact GELU in its erf form; `layers/attention.py`: whether JAX runs on its CPU (no fused attention kernel there) |
| `torch_ops` | PyTorch | `layers/dense.py`, `layers/masked_lm_head.py`: float32 dense products in oneDNN instead of MKL's sgemm; `layers/dropout.py`: dropout's mask from float32 uniforms instead of `bernoulli_` on the CPU, CUDA's dropout kernel on a GPU; `layers/attention.py`: the attention's two products as `torch.matmul` over [batch, heads, ...] views, and attention with its dropout in one SDPA kernel on a GPU |
| `torch_adamw` | PyTorch | `training/optimization.py`: torch's fused AdamW kernel (CPU and CUDA), multi-tensor clipping |
| `tf_ops` | TensorFlow | `layers/activations.py`: exact GELU with its derivative written out; `layers/dense.py`: float32 dense products whose input gradient reads the kernel's transpose written out, on the CPU; `layers/attention.py`: a split of the rows for any sequence length |
| `tf_replicas` | TensorFlow | `models/pretrainer.py`, `training/optimization.py`: sums over tf.distribute replicas |
"""
