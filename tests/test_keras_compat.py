"""keras_bert_impl/utils/keras_compat.py: every Keras internal it relies on still exists with the signature it
uses, and each of its functions still does what it says. A Keras upgrade that renames or changes one of them
fails here, naming it (tests/test_architecture.py keeps every other module off Keras' internals)."""

import importlib
import inspect
import os

import keras
import numpy as np
import pytest

from keras_bert_impl.layers.dropout import BertDropout
from keras_bert_impl.layers.transformer_encoder import BertEncoderBlock
from keras_bert_impl.utils import keras_compat
from tests.backend_utils import to_numpy

TENSORFLOW_ONLY = pytest.mark.skipif(keras.backend.backend() != "tensorflow",
                                     reason="a hook of Keras' TensorFlow trainer")


def _parameters(function):
    return list(inspect.signature(function).parameters)


# (module, attribute path, the parameters keras_compat calls it with, in order)
RELIED_ON = [
    ("keras", "Layer._flatten_layers", ["self", "include_self", "recursive"]),
    ("keras", "optimizers.Optimizer._clip_gradients", ["self", "grads"]),
    ("keras", "optimizers.Optimizer._backend_update_step", ["self", "grads", "trainable_variables", "learning_rate"]),
    ("keras", "optimizers.Optimizer._get_variable_index", ["self", "variable"]),
    ("keras.src.saving.saving_lib", "_save_state",
     ["saveable", "weights_store", "assets_store", "inner_path", "visited_saveables"]),
    ("keras.src.saving.saving_lib", "H5IOStore.__init__", ["self", "path_or_io", "archive", "mode"]),
    ("keras.src.saving.saving_lib", "H5IOStore._get_h5_file", ["self", "path_or_io", "mode"]),
    ("keras.src.saving.saving_lib", "H5IOStore.close", ["self"]),
    ("keras.src.backend.common.global_state", "get_global_attribute", ["name", "default", "set_to_default"]),
    ("keras.src.random.seed_generator", "global_seed_generator", []),
]


@pytest.mark.parametrize("module, path, parameters", RELIED_ON, ids=[f"{m}:{p}" for m, p, _ in RELIED_ON])
def test_every_keras_internal_keras_compat_calls_exists_with_its_parameters(module, path, parameters):
    target = importlib.import_module(module)
    for part in path.split("."):
        assert hasattr(target, part), f"Keras {keras.__version__} has no {module}.{path}"
        target = getattr(target, part)
    assert _parameters(target) == parameters, f"{module}.{path}{inspect.signature(target)}"


@TENSORFLOW_ONLY
def test_the_tensorflow_trainer_hooks_exist_with_their_parameters():
    from keras.src.backend.tensorflow import trainer

    assert _parameters(keras.Model._maybe_symbolic_build) == ["self", "iterator", "data_batch"]
    assert _parameters(trainer.reduce_per_replica) == ["values", "strategy", "reduction"]
    assert _parameters(trainer._collective_all_reduce_multi_worker) == ["strategy"]
    assert hasattr(keras.Model(), "_distribute_strategy")
    assert "data_adapter" in inspect.getsource(trainer.TFEpochIterator.__init__)


def test_the_symbolic_build_hook_is_the_tensorflow_trainers_only():
    """`ElementSpecSymbolicBuild` overrides a hook that only Keras' TensorFlow trainer calls; were another
    backend's trainer to get it, the override would need checking there."""
    assert hasattr(keras.Model, "_maybe_symbolic_build") == (keras.backend.backend() == "tensorflow")


def test_flatten_layers_walks_the_sublayers_of_custom_layers():
    block = BertEncoderBlock(hidden_size=8, num_heads=2, intermediate_size=16, name="block")
    names = [layer.name for layer in keras_compat.flatten_layers(block)]
    assert names[0] == "block" and {"attention", "query", "attention_probs_dropout", "output_dense"} <= set(names)
    assert "block" not in [layer.name for layer in keras_compat.flatten_layers(block, include_self=False)]
    assert [layer.name for layer in keras_compat.flatten_layers(block, recursive=False)][:2] == ["block", "attention"]


def test_seed_generators_are_a_dropout_layers_own():
    layer = BertDropout(0.5, seed=3)
    (generator,) = keras_compat.seed_generators(layer)
    assert isinstance(generator, keras.random.SeedGenerator) and keras_compat.seed_generators(keras.layers.Dense(1)) == []
    before = to_numpy(generator.state.value).copy()
    layer(np.ones((2, 4), "float32"), training=True)  # a seeded dropout draws from its generator
    assert not np.array_equal(before, to_numpy(generator.state.value))


def test_the_global_seed_generator_is_the_one_unseeded_draws_advance():
    generator = keras_compat.keras_global_seed_generator(create=True)
    assert keras_compat.keras_global_seed_generator() is generator
    before = to_numpy(generator.state.value).copy()
    keras.random.uniform((2,))
    assert not np.array_equal(before, to_numpy(generator.state.value))


def test_calls_in_graph_only_keeps_a_shared_layers_nodes_of_one_model_for_the_block():
    dense = keras.layers.Dense(3, name="shared")
    inputs = keras.Input((4,))
    first = keras.Model(inputs, dense(inputs))
    other_inputs = keras.Input((2, 4))
    keras.Model(other_inputs, dense(other_inputs))  # the latest call: [batch, 2, 3]
    nodes = list(dense._inbound_nodes)
    assert len(nodes) == 2
    with keras_compat.calls_in_graph_only(first):
        assert len(dense._inbound_nodes) == 1 and tuple(dense.output.shape) == (None, 3)
    assert dense._inbound_nodes == nodes


def test_the_symbolic_build_reads_the_element_spec_under_a_strategy_only():
    class Recorder:
        def _maybe_symbolic_build(self, iterator=None, data_batch=None):
            return iterator, data_batch

    class Probe(keras_compat.ElementSpecSymbolicBuild, Recorder):
        pass

    class Dataset:
        element_spec = "the element spec"

    class Adapter:
        def get_tf_dataset(self):
            return Dataset()

    class EpochIterator:
        data_adapter = Adapter()

    iterator, probe = EpochIterator(), Probe()
    probe._distribute_strategy = None
    assert probe._maybe_symbolic_build(iterator=iterator) == (iterator, None)
    probe._distribute_strategy = "a strategy"
    assert probe._maybe_symbolic_build(iterator=iterator) == (None, "the element spec")
    assert probe._maybe_symbolic_build(data_batch="a batch") == (None, "a batch")


def test_optimizer_hooks_are_called_by_apply_gradients_and_default_to_keras_steps():
    calls = []

    class Sgd(keras_compat.OptimizerHooks):
        def update_step(self, gradient, variable, learning_rate):
            calls.append(("update_step", self.variable_index(variable)))
            variable.assign(variable - learning_rate * gradient)

        def clip_gradients(self, grads):
            calls.append("clip_gradients")
            return super().clip_gradients(grads)

        def update_variables(self, grads, variables, learning_rate):
            calls.append("update_variables")
            return super().update_variables(grads, variables, learning_rate)

    a, b = keras.Variable(np.ones(2, "float32")), keras.Variable(np.zeros(1, "float32"))
    optimizer = Sgd(learning_rate=0.5, global_clipnorm=1.0, name="sgd")
    grads = [keras.ops.convert_to_tensor(np.array(g, "float32")) for g in ([3.0, 0.0], [4.0])]
    optimizer.apply_gradients(zip(grads, [a, b]))
    # Keras' clipping (global norm 5 -> 1) and Keras' per-variable loop, with the variables' slot indices.
    np.testing.assert_allclose(to_numpy(a), [1 - 0.5 * 0.6, 1.0], rtol=1e-6)
    np.testing.assert_allclose(to_numpy(b), [-0.5 * 0.8], rtol=1e-6)
    assert calls[:2] == ["clip_gradients", "update_variables"]
    assert sorted(c for c in calls[2:]) == [("update_step", 0), ("update_step", 1)]


def test_weights_h5_bytes_is_the_save_weights_file_without_the_skipped_objects_plus_extra_datasets(tmp_path):
    import h5py

    model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(2, kernel_initializer="random_normal")])
    model.compile(optimizer="adam", loss="mse")
    model.fit(np.ones((4, 3)), np.ones((4, 2)), verbose=0)
    path = os.path.join(tmp_path, "a.weights.h5")
    with open(path, "wb") as f:
        f.write(keras_compat.weights_h5_bytes(model, extra_datasets={"extra/step": np.arange(3)}))
    expected = str(tmp_path / "expected.weights.h5")
    model.save_weights(expected)
    with h5py.File(path) as ours, h5py.File(expected) as theirs:
        assert set(ours) == set(theirs) | {"extra"} and list(ours["extra/step"]) == [0, 1, 2]
        assert "optimizer" in ours
    restored = keras.Sequential([keras.Input((3,)), keras.layers.Dense(2)])
    restored.load_weights(path)
    for a, b in zip(restored.get_weights(), model.get_weights()):
        np.testing.assert_array_equal(a, b)
    with open(path, "wb") as f:
        f.write(keras_compat.weights_h5_bytes(model, skipped=[model.optimizer]))
    with h5py.File(path) as ours:
        assert "optimizer" not in ours and "layers" in ours


@TENSORFLOW_ONLY
@pytest.mark.tensorflow
def test_average_multi_worker_metrics_replaces_the_trainers_reduction_once(monkeypatch):
    from keras.src.backend.tensorflow import trainer

    original = trainer.reduce_per_replica
    monkeypatch.setattr(trainer, "reduce_per_replica", original)  # put back afterwards
    keras_compat.average_multi_worker_metrics()
    replaced = trainer.reduce_per_replica
    keras_compat.average_multi_worker_metrics()
    assert replaced is trainer.reduce_per_replica and replaced is not original
    import tensorflow as tf

    # Outside a multi-worker strategy, Keras' own reduction.
    strategy = tf.distribute.get_strategy()
    value = {"loss": tf.constant(2.0)}
    assert float(replaced(value, strategy, "auto")["loss"]) == float(original(value, strategy, "auto")["loss"])


def test_functional_call_gives_each_calls_arguments_and_outputs_and_tells_nested_models_apart():
    inner_input = keras.Input((4,), name="inner_x")
    inner = keras.Model(inner_input, keras.layers.Dense(3, name="inner_dense")(inner_input), name="inner")
    x = keras.Input((4,), name="x")
    shared = keras.layers.Dense(4, name="shared")
    first, second = shared(x), shared(x)
    y = inner(keras.ops.concatenate([first, second], axis=-1)[:, :4], training=False)
    call, index = keras_compat.functional_call(y)
    assert call.operation is inner and keras_compat.is_functional(call.operation) and index == 0
    assert call.kwargs["training"] is False
    sliced, _ = keras_compat.functional_call(call.args[0])
    assert type(sliced.operation).__name__ == "GetItem" and not keras_compat.is_functional(sliced.operation)
    concatenated, _ = keras_compat.functional_call(sliced.args[0])
    calls = [keras_compat.functional_call(t)[0] for t in concatenated.args[0]]
    assert [c.operation for c in calls] == [shared, shared] and calls[0].key != calls[1].key
    assert calls[0].outputs == [first] and calls[1].outputs == [second]
    assert keras_compat.functional_call(inner.output)[0].operation.name == "inner_dense"
