"""The random states that training consumes, read from a model and set back, so that a run resumed from a
checkpoint draws the same dropout masks as the uninterrupted run.

They are: the state (seed, counter) of each `keras.random.SeedGenerator` of the model's layers (the dropout
masks on TensorFlow and JAX; `model.save_weights` leaves them out), Keras' global seed generator
(`keras.random.*` with `seed=None`), and the backend's own generators (`backends.random_generator_states`:
torch's, which its dropout draws from). `training/checkpoint_store.py` writes them into every checkpoint,
under the HDF5 group `random_state`, and restores them with the weights.
"""

import keras
import numpy as np

from keras_bert_impl import backends
from keras_bert_impl.utils import keras_compat

RANDOM_STATE_GROUP = "random_state"


def _model_seed_generators(model):
    """The `keras.random.SeedGenerator`s of `model`'s layers (dropout's), in a fixed order."""
    generators, seen = [], set()
    for layer in keras_compat.flatten_layers(model):
        for generator in keras_compat.seed_generators(layer):
            if id(generator) not in seen:
                seen.add(id(generator))
                generators.append(generator)
    return generators


def random_states(model):
    """Every random state `fit` consumes, as `{name: numpy array}`.

    `seed_generator/<i>`: the state of each `SeedGenerator` of the model's layers; `global_seed_generator`:
    Keras' global one, once created; then `backends.random_generator_states()` (on torch `torch_cpu` and
    `torch_cuda/<i>`). The input position is the step (see `training/resumable.py`).

    Examples:

    >>> model = keras.Sequential([keras.Input((2,)), keras.layers.Dropout(0.1), keras.layers.Dense(1)])
    >>> sorted(name for name in random_states(model) if name.startswith("seed_generator"))
    ['seed_generator/0']
    """
    states = {}
    for i, generator in enumerate(_model_seed_generators(model)):
        states[f"seed_generator/{i}"] = np.asarray(keras.ops.convert_to_numpy(generator.state.value))
    global_generator = keras_compat.keras_global_seed_generator()
    if global_generator is not None:
        states["global_seed_generator"] = np.asarray(keras.ops.convert_to_numpy(global_generator.state.value))
    states.update(backends.random_generator_states())
    return states


def set_random_states(model, states):
    """Sets the random states `random_states(model)` returned (missing names are left as they are).

    Examples:

    >>> model = keras.Sequential([keras.Input((2,)), keras.layers.Dropout(0.1)])
    >>> saved = random_states(model)
    >>> _ = model(np.ones((1, 2)), training=True)  # draws: the seed generator's counter moves on
    >>> set_random_states(model, saved)
    >>> all(np.array_equal(saved[name], now) for name, now in random_states(model).items())
    True
    """
    generators = _model_seed_generators(model)
    saved = sorted(name for name in states if name.startswith("seed_generator/"))
    if saved and len(saved) != len(generators):
        raise ValueError(f"the checkpoint holds {len(saved)} seed generator states; the model has {len(generators)}.")
    for i, generator in enumerate(generators):
        if f"seed_generator/{i}" in states:
            generator.state.assign(states[f"seed_generator/{i}"].astype(generator.state.dtype))
    if "global_seed_generator" in states:
        generator = keras_compat.keras_global_seed_generator(create=True)
        generator.state.assign(states["global_seed_generator"].astype(generator.state.dtype))
    backends.set_random_generator_states(states)


def random_state_datasets(model):
    """`random_states(model)` as the HDF5 datasets of a checkpoint: `{"random_state/<name>": array}`."""
    return {f"{RANDOM_STATE_GROUP}/{name}": value for name, value in random_states(model).items()}


def restore_random_states(model, path):
    """Sets the random states a checkpoint file at `path` holds (none in a file without them)."""
    import h5py

    with h5py.File(path, "r") as f:
        if RANDOM_STATE_GROUP not in f:
            return
        states = {}
        f[RANDOM_STATE_GROUP].visititems(
            lambda name, item: states.__setitem__(name, np.asarray(item)) if isinstance(item, h5py.Dataset) else None
        )
    set_random_states(model, states)


class BackendGeneratorsAtFirstStep(keras.callbacks.Callback):
    """Sets the backend's own generators (torch's) back to the states of `model` when this callback was
    made, just before the first step of `fit`.

    On torch, `fit`'s setup before its first step (the symbolic build of the model on a batch) draws
    from torch's global generator, which Keras' unseeded torch dropout also draws from; an
    uninterrupted run drew it before step 0, a resumed one would draw it after the restore and shift
    every dropout mask after it. (On TensorFlow and JAX the dropout states are the SeedGenerators'
    variables, which nothing but the steps advance; there is nothing to set.)"""

    def __init__(self):
        super().__init__()
        self._states = backends.random_generator_states()

    def on_train_batch_begin(self, batch, logs=None):
        if self._states:
            backends.set_random_generator_states(self._states)
            self._states = {}
