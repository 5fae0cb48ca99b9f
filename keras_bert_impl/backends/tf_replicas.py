"""The TensorFlow-backend sums over the replicas of a tf.distribute strategy, for losses and clipping that
must equal the single-device computation.

On JAX and PyTorch, and outside a replica context, `replica_sum` returns its input and
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


def input_spec_batch(strategy, epoch_iterator):
    """The `tf.TensorSpec` structure of the batches of Keras' TensorFlow `EpochIterator`, for the
    symbolic build that `fit` runs under a tf.distribute strategy; None without a strategy.

    Keras 3.15's TensorFlow trainer reads those shapes by taking the first batch off the distributed
    iterator (and, under MultiWorkerMirroredStrategy, by `strategy.reduce("MEAN", batch)`, which fails
    for a dict); the infinite iterator of `fit(steps_per_epoch=...)` is not restarted afterwards, so
    training would begin at the second batch. The dataset's `element_spec` gives the same shapes and
    dtypes without reading a batch. `BertTaskModel` passes it as the `data_batch` of that build.
    """
    if keras.backend.backend() != "tensorflow" or strategy is None:
        return None
    dataset = epoch_iterator.data_adapter.get_tf_dataset()
    return dataset.element_spec


def fix_multi_worker_metric_reduction():
    """Makes Keras' TensorFlow trainer average the replicas' metrics under MultiWorkerMirroredStrategy
    as it does under MirroredStrategy.

    Keras 3.15's `reduce_per_replica` reduces each metric of a multi-worker step with
    `strategy.reduce("MEAN", value, axis=0)`, which fails for the scalar metrics every model returns
    ("Invalid reduction dimension 0 for input with 0 dimensions"); on one worker it takes the mean of the
    replicas' values, which is `strategy.reduce("MEAN", value, axis=None)` over the replicas of every
    worker. This replaces the trainer module's function by one that does that for "auto"/"mean" under
    a multi-worker strategy and calls Keras' own otherwise. Idempotent; TensorFlow backend only.
    """
    import tensorflow as tf
    from keras.src.backend.tensorflow import trainer

    original = trainer.reduce_per_replica
    if getattr(original, "_keras_bert_impl_fixed", False):
        return

    def reduce_per_replica(values, strategy, reduction):
        if reduction in ("auto", "mean") and trainer._collective_all_reduce_multi_worker(strategy):
            return tf.nest.map_structure(lambda v: strategy.reduce("MEAN", v, axis=None), values)
        return original(values, strategy, reduction)

    reduce_per_replica._keras_bert_impl_fixed = True
    trainer.reduce_per_replica = reduce_per_replica
