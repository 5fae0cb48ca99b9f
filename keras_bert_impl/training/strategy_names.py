"""The names a run picks its distribution strategy and its precision by (`--strategy`, `--mixed_precision`).

A module without Keras, so that the recipes build their flags (`runners.flags.add_distribution_flags`) and
answer `--help` without importing Keras or TensorFlow; `training.distribute` acts on the names.
"""

# `distribute.get_distribution(name)`: the strategies by name.
STRATEGY_NAMES = ("auto", "tpu", "mirrored", "multiworker", "gpu", "cpu", "data_parallel")
# --mixed_precision -> Keras' dtype policy.
MIXED_PRECISION = {"float32": "float32", "bfloat16": "mixed_bfloat16", "float16": "mixed_float16"}
