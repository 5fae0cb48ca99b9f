"""BERT's weight initializer, and building a model whose weights a checkpoint is about to give.

`truncated_normal(stddev)` initializes every BERT kernel and embedding table: a normal distribution of
standard deviation `initializer_range` cut at two standard deviations (the original's `create_initializer`).

Inside `skip_initial_draws()`, the initializers it returns give zeros instead of drawing. `from_pretrained`
builds its backbone there and then assigns every weight from the checkpoint. The draws it skips are most of
the build's time; the figures are in docs/performance.md ("Loading a checkpoint").

Each initializer still takes its seed when it is made, from Keras' global seed as before. So:
- the weights made after the scope (a task model's new head) get the draws they get without it;
- `draw_initial_kernel` gives a weight the checkpoint lacks (a pooler) the value a build without the scope
  draws for it.
"""

import contextlib
import threading

import keras

_state = threading.local()


@keras.saving.register_keras_serializable(package="keras_bert_impl")
class BertTruncatedNormal(keras.initializers.TruncatedNormal):
    """`keras.initializers.TruncatedNormal`, which gives zeros inside `skip_initial_draws()`.

    >>> import keras
    >>> initializer = BertTruncatedNormal(stddev=0.02, seed=1)
    >>> with skip_initial_draws():
    ...     print(keras.ops.convert_to_numpy(initializer((2, 3))).tolist())
    [[0.0, 0.0, 0.0], [0.0, 0.0, 0.0]]
    >>> bool(abs(keras.ops.convert_to_numpy(initializer((2, 3)))).max() <= 0.04)
    True
    """

    def __call__(self, shape, dtype=None):
        if getattr(_state, "skip", False):
            return keras.ops.zeros(shape, dtype=dtype)
        return super().__call__(shape, dtype=dtype)


def truncated_normal(stddev):
    """BERT's initializer of kernels and embedding tables (unseeded: Keras' global seed gives its seed)."""
    return BertTruncatedNormal(stddev=stddev)


@contextlib.contextmanager
def skip_initial_draws():
    """Within this thread's block, `BertTruncatedNormal` initializers give zeros instead of drawing: build a
    model here only when every weight they initialize is assigned next (or redrawn: `draw_initial_kernel`)."""
    previous = getattr(_state, "skip", False)
    _state.skip = True
    try:
        yield
    finally:
        _state.skip = previous


def draw_initial_kernel(layer):
    """Assigns `layer.kernel` (a Dense-like layer built inside `skip_initial_draws()`) the draw of its
    `kernel_initializer`: the value a build outside the scope gives it."""
    layer.kernel.assign(layer.kernel_initializer(tuple(layer.kernel.shape), dtype=layer.kernel.dtype))
