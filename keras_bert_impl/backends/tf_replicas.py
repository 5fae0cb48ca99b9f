"""The TensorFlow-backend sums and gathers over the replicas of a tf.distribute strategy, for losses and
clipping that must equal the single-device computation.

On JAX and PyTorch, and outside a replica context, `replica_sum` and `replica_gather` return their input and
`num_replicas_in_sync` is 1: these functions are safe to call from backend-neutral code. tensorflow is
imported only under the TensorFlow backend.
"""

import keras


def replica_sum(value):
    """Sum of `value` (a tensor or a list of tensors) over the replicas of a tf.distribute strategy,
    without gradient; `value` itself elsewhere.

    Losses normalized by a global count (the masked-LM weight sum, the global batch) use it so that each
    replica returns its exact share of the single-device loss.
    """
    if keras.backend.backend() != "tensorflow":
        return value
    import tensorflow as tf

    context = tf.distribute.get_replica_context()
    if context is None or context.num_replicas_in_sync == 1:
        return value
    return tf.nest.map_structure(tf.stop_gradient, context.all_reduce(tf.distribute.ReduceOp.SUM, value))


def num_replicas_in_sync():
    """Replicas of the current tf.distribute strategy (1 outside one, and on JAX and torch)."""
    if keras.backend.backend() != "tensorflow":
        return 1
    import tensorflow as tf

    return tf.distribute.get_strategy().num_replicas_in_sync


def replica_gather(value):
    """`value` [n, ...] of every replica of a tf.distribute strategy, concatenated along axis 0 in replica order
    (`ReplicaContext.all_gather`, whose gradient sums each replica's share over the replicas: a loss over the
    gathered rows trains every replica's rows); `value` itself elsewhere.

    In-batch negatives use it so that each replica's examples are scored against the whole global batch, as
    one device scores them. (JAX's data parallelism computes on the global batch already.)
    """
    if keras.backend.backend() != "tensorflow":
        return value
    import tensorflow as tf

    context = tf.distribute.get_replica_context()
    if context is None or context.num_replicas_in_sync == 1:
        return value
    return context.all_gather(value, axis=0)
