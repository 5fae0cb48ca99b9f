"""The names a run picks its distribution strategy and its precision by (`--strategy`, `--mixed_precision`),
and the three settings of every training recipe that name them (`strategy_setting`, `tpu_setting`,
`mixed_precision_setting`: the fields of the recipes' configs).

A module without Keras, so that the recipes build their flags from their configs (`runners.flags`) and
answer `--help` without importing Keras or TensorFlow; `training.distribute` acts on the names.
"""

from keras_bert_impl.utils.settings import one_of, setting

# `distribute.get_distribution(name)`: the strategies by name.
STRATEGY_NAMES = ("auto", "tpu", "mirrored", "multiworker", "gpu", "cpu", "data_parallel")
# --mixed_precision -> Keras' dtype policy.
MIXED_PRECISION = {"float32": "float32", "bfloat16": "mixed_bfloat16", "float16": "mixed_float16"}


def strategy_setting():
    """The `strategy` field of a config (`--strategy`): where the run trains, not what it learns."""
    return setting("auto", one_of(STRATEGY_NAMES), "Distribution strategy.", shapes_weights=False)


def tpu_setting():
    """The `tpu` field of a config (`--tpu`)."""
    return setting(None, help="TPU name or grpc:// address (Colab: leave empty).", shapes_weights=False)


def mixed_precision_setting():
    """The `mixed_precision` field of a config (`--mixed_precision`): the compute dtype shapes the weights."""
    return setting("float32", one_of(tuple(MIXED_PRECISION)), "Compute dtype policy.")
