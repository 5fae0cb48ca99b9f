"""The private Keras APIs this package relies on, in one module (written against Keras 3.15).

Each function or class here stands for one thing Keras does only through `keras.src` or a `_`-prefixed
attribute; the rest of the package calls these and never reaches into Keras' internals
(`tests/test_architecture.py` checks it). `tests/test_keras_compat.py` checks that every internal used here
still exists with the signature used here, and that each function still does what its docstring says, so
a Keras upgrade that changes one fails there, naming it.

| here | Keras internal | used by |
| --- | --- | --- |
| `flatten_layers` | `Layer._flatten_layers` | models (quantized layers, frozen backbone), checkpoints/model_io.py, training/random_state.py |
| `seed_generators` | `Layer._seed_generators` | training/random_state.py |
| `keras_global_seed_generator` | `keras.src.backend.common.global_state`, `keras.src.random.seed_generator` | training/random_state.py |
| `calls_in_graph_only` | `Functional._nodes_by_depth`, `Layer._inbound_nodes` | `BertBackbone.summary` |
| `functional_call`, `is_functional` | `KerasTensor._keras_history`, `Operation._inbound_nodes`, `Node.arguments`, `keras.src.models.functional.Functional` | export/onnx_export.py |
| `ElementSpecSymbolicBuild` | `Model._maybe_symbolic_build`, `Model._distribute_strategy`, the TensorFlow `EpochIterator` | `BertTaskModel` |
| `OptimizerHooks` | `Optimizer._clip_gradients`, `_backend_update_step`, `_get_variable_index` | training/optimization.py, backends/torch_adamw.py |
| `weights_h5_bytes` | `keras.src.saving.saving_lib._save_state`, `H5IOStore` | training/checkpoint_store.py |
| `average_multi_worker_metrics` | `keras.src.backend.tensorflow.trainer` | training/distribute.py |
"""

import collections
import contextlib
import io

import keras


def flatten_layers(layer, include_self=True, recursive=True):
    """The layers inside `layer` (and `layer` itself with `include_self`; nested ones with `recursive`),
    each once, in Keras' tracking order.

    Examples:

    >>> block = keras.layers.Layer(name="block")
    >>> block.inner = keras.layers.Dense(1, name="inner")
    >>> [layer.name for layer in flatten_layers(block)]
    ['block', 'inner']
    """
    return list(layer._flatten_layers(include_self=include_self, recursive=recursive))


def seed_generators(layer):
    """The `keras.random.SeedGenerator`s `layer` tracks itself (a Dropout's), not those of its sublayers.

    Examples:

    >>> len(seed_generators(keras.layers.Dropout(0.1))), len(seed_generators(keras.layers.Dense(1)))
    (1, 0)
    """
    return list(getattr(layer, "_seed_generators", []))


def keras_global_seed_generator(create=False):
    """Keras' global `SeedGenerator` (the one `keras.random.*` draws from with `seed=None`); None when no draw
    has created it yet, unless `create`.

    Examples:

    >>> keras_global_seed_generator(create=True) is keras_global_seed_generator()
    True
    """
    from keras.src.backend.common import global_state
    from keras.src.random import seed_generator

    if create:
        return seed_generator.global_seed_generator()
    return global_state.get_global_attribute("global_seed_generator")


@contextlib.contextmanager
def calls_in_graph_only(model):
    """Within the block, each layer of the functional `model` keeps only its calls inside `model`'s graph
    (those of another model that calls the same layer are set aside), so that `model.summary()` shows the
    output shapes of this graph.

    Keras' summary shows the shape of a layer's latest call, which may be another model's.
    """
    own_nodes = {id(node) for nodes in model._nodes_by_depth.values() for node in nodes}
    all_nodes = {layer: layer._inbound_nodes for layer in model.layers}
    try:
        for layer, nodes in all_nodes.items():
            layer._inbound_nodes = [node for node in nodes if id(node) in own_nodes] or nodes
        yield
    finally:
        for layer, nodes in all_nodes.items():
            layer._inbound_nodes = nodes


# One call of an operation in a functional graph: the operation (a layer, a keras.ops operation, an InputLayer
# or a nested functional model), the arguments it was called with (KerasTensors among them), its output
# tensors (flattened) and a key that tells calls apart (an operation may be called several times).
FunctionalCall = collections.namedtuple("FunctionalCall", ["operation", "args", "kwargs", "outputs", "key"])


def functional_call(tensor):
    """`(call, index)`: the `FunctionalCall` that made the symbolic `tensor` of a functional graph, and the
    tensor's index among its outputs. A graph input's call is its `keras.layers.InputLayer`'s, without
    arguments.

    Examples:

    >>> x = keras.Input((3,), name="x")
    >>> y = keras.layers.Dense(2, name="dense")(x)
    >>> call, index = functional_call(y)
    >>> call.operation.name, call.args[0] is x, index
    ('dense', True, 0)
    >>> type(functional_call(x)[0].operation).__name__
    'InputLayer'
    """
    operation, node_index, tensor_index = tensor._keras_history
    node = operation._inbound_nodes[node_index]
    return FunctionalCall(operation, tuple(node.arguments.args), dict(node.arguments.kwargs), list(node.outputs),
                          id(node)), tensor_index


def is_functional(operation):
    """Whether `operation` is a functional model (a graph of calls from `keras.Input`s to its outputs), as a
    task model or a backbone called as a layer inside another model is.

    Examples:

    >>> x = keras.Input((3,))
    >>> is_functional(keras.Model(x, keras.layers.Dense(2)(x))), is_functional(keras.layers.Dense(2))
    (True, False)
    """
    from keras.src.models.functional import Functional

    return isinstance(operation, Functional)


class ElementSpecSymbolicBuild:
    """A `keras.Model` mixin: under a tf.distribute strategy, the symbolic build that the TensorFlow trainer's
    `fit` runs before its first step reads the dataset's `element_spec` instead of a batch.

    Keras 3.15's TensorFlow trainer reads those shapes by taking the first batch off the distributed
    iterator (and, under MultiWorkerMirroredStrategy, by `strategy.reduce("MEAN", batch)`, which fails for a
    dict); the infinite iterator of `fit(steps_per_epoch=...)` is not restarted afterwards, so training would
    begin at the second batch. The element spec gives the same shapes and dtypes without reading a batch.
    Without a strategy, and on JAX and torch (which do not call this hook), Keras' build is unchanged.
    """

    def _maybe_symbolic_build(self, iterator=None, data_batch=None):
        strategy = getattr(self, "_distribute_strategy", None)
        if iterator is not None and data_batch is None and strategy is not None:
            iterator, data_batch = None, iterator.data_adapter.get_tf_dataset().element_spec
        return super()._maybe_symbolic_build(iterator=iterator, data_batch=data_batch)


class OptimizerHooks(keras.optimizers.Optimizer):
    """`keras.optimizers.Optimizer` with the steps of `apply_gradients` that a subclass overrides, under
    names of this package:

    - `clip_gradients(grads)`: the clipping of the gradients (`clipnorm`, `global_clipnorm`, ...); Keras' own
      is `keras_clip_gradients`.
    - `update_variables(grads, variables, learning_rate)`: the update of every variable; Keras' own (which
      calls `update_step` per variable) is `keras_update_variables`.
    - `variable_index(variable)`: the index of a variable in the lists of slots `build` made.
    """

    def _clip_gradients(self, grads):
        return self.clip_gradients(grads)

    def clip_gradients(self, grads):
        return self.keras_clip_gradients(grads)

    def keras_clip_gradients(self, grads):
        return super()._clip_gradients(grads)

    def _backend_update_step(self, grads, trainable_variables, learning_rate):
        return self.update_variables(grads, trainable_variables, learning_rate)

    def update_variables(self, grads, variables, learning_rate):
        return self.keras_update_variables(grads, variables, learning_rate)

    def keras_update_variables(self, grads, variables, learning_rate):
        return super()._backend_update_step(grads, variables, learning_rate)

    def variable_index(self, variable):
        return self._get_variable_index(variable)


def weights_h5_bytes(model, skipped=(), extra_datasets=None):
    """The bytes of the `.weights.h5` file `model.save_weights` writes, leaving out the objects `skipped`
    (e.g. the optimizer), plus one HDF5 dataset per item of `extra_datasets` ({path: array}).

    The file is built in memory by HDF5's own "core" driver. Why not the `io.BytesIO` that Keras' writer
    accepts: h5py then reads and writes through Python callbacks, which corrupted the heap ("corrupted size
    vs. prev_size", SIGABRT) in a TensorFlow training process; the core driver keeps the file in C memory and
    hands back its image.

    Examples:

    >>> import numpy as np
    >>> model = keras.Sequential([keras.Input((2,)), keras.layers.Dense(1)])
    >>> data = weights_h5_bytes(model, extra_datasets={"extra/x": np.arange(3)})
    >>> data[:8] == b"\\x89HDF\\r\\n\\x1a\\n"
    True
    """
    from keras.src.saving import saving_lib

    class MemoryH5Store(saving_lib.H5IOStore):
        # The `io.BytesIO` given to the constructor only satisfies its type check; nothing is written to it.
        def _get_h5_file(self, path_or_io, mode=None):
            import h5py

            return h5py.File(f"memory-{id(self)}.h5", mode="w", driver="core", backing_store=False)

    store = MemoryH5Store(io.BytesIO(), mode="w")
    try:
        saving_lib._save_state(model, weights_store=store, assets_store=None, inner_path="",
                               visited_saveables={id(obj) for obj in skipped})
        for path, value in (extra_datasets or {}).items():
            store.h5_file.create_dataset(path, data=value)
        store.h5_file.flush()
        return bytes(store.h5_file.id.get_file_image())
    finally:
        store.close()


def average_multi_worker_metrics():
    """Makes Keras' TensorFlow trainer average the replicas' metrics under MultiWorkerMirroredStrategy as it
    does under MirroredStrategy.

    Keras 3.15's `reduce_per_replica` reduces each metric of a multi-worker step with
    `strategy.reduce("MEAN", value, axis=0)`, which fails for the scalar metrics every model returns
    ("Invalid reduction dimension 0 for input with 0 dimensions"); on one worker it takes the mean of the
    replicas' values, which is `strategy.reduce("MEAN", value, axis=None)` over the replicas of every
    worker. This replaces the trainer module's function by one that does that for "auto"/"mean" under a
    multi-worker strategy and calls Keras' own otherwise. Idempotent; TensorFlow backend only.
    """
    import tensorflow as tf
    from keras.src.backend.tensorflow import trainer

    original = trainer.reduce_per_replica
    if getattr(original, "averages_multi_worker_metrics", False):
        return

    def reduce_per_replica(values, strategy, reduction):
        if reduction in ("auto", "mean") and trainer._collective_all_reduce_multi_worker(strategy):
            return tf.nest.map_structure(lambda v: strategy.reduce("MEAN", v, axis=None), values)
        return original(values, strategy, reduction)

    reduce_per_replica.averages_multi_worker_metrics = True
    trainer.reduce_per_replica = reduce_per_replica
