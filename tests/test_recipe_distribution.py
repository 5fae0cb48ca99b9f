"""The recipes under `--strategy`, `--tpu` and `--mixed_precision`.

* Every training recipe takes the three flags; pretrain.py also maps the original `--use_tpu`/`--tpu_name`.
* The TPU path, as far as it runs on a CPU: with the strategy resolution replaced by a stand-in TPU
  `Distribution`, run_glue.py trains on batches of one static shape (padded to --max_seq_length, whole
  batches only), in mixed_bfloat16, and pretrain.py evaluates on whole batches.
* Two replicas (MirroredStrategy over 2 logical CPUs on TensorFlow, DataParallel over 2 host devices on JAX)
  split the global --train_batch_size; on PyTorch a multi-device strategy is refused with a clear error.
"""

import importlib.util
import json
import os
import subprocess
import sys

import keras
import numpy as np
import pytest

from keras_bert_impl.training import distribute
from tests.finetuning_files import two_host_devices
from tests.test_run_glue import _mnli_dir, _tiny_config

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BACKEND = keras.backend.backend()


def _recipe(name):
    spec = importlib.util.spec_from_file_location(f"{name}_dist_recipe", os.path.join(REPO, "recipes", f"{name}.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture
def restore_float32():
    yield
    distribute.set_mixed_precision("float32")


def _fake_tpu(calls):
    """A stand-in for get_distribution: records the call, returns a one-replica "tpu" Distribution."""

    def get_distribution(name="auto", tpu=None):
        calls.append((name, tpu))
        if BACKEND == "tensorflow":
            import tensorflow as tf

            return distribute.Distribution("tpu", 1, tf_strategy=tf.distribute.get_strategy())
        return distribute.Distribution("tpu", 1)

    return get_distribution


@pytest.mark.parametrize("name", ["run_glue", "run_ner", "run_squad", "run_swag", "pretrain"])
def test_every_training_recipe_takes_strategy_tpu_and_mixed_precision(name):
    parser = _recipe(name).build_parser()
    defaults = parser.parse_args(["--output_dir=o"] + (["--task_name=sst2"] if name == "run_glue" else []))
    assert (defaults.strategy, defaults.tpu, defaults.mixed_precision) == ("auto", None, "float32")
    args = parser.parse_args(["--output_dir=o", "--strategy=tpu", "--tpu=grpc://10.0.0.2:8470",
                              "--mixed_precision=bfloat16"] + (["--task_name=sst2"] if name == "run_glue" else []))
    assert (args.strategy, args.tpu, args.mixed_precision) == ("tpu", "grpc://10.0.0.2:8470", "bfloat16")
    with pytest.raises(SystemExit):
        parser.parse_args(["--output_dir=o", "--strategy=horovod"])


def _batches(data):
    """The (x, y) batches of one epoch of a tf.data.Dataset or a Keras PyDataset."""
    if hasattr(data, "element_spec"):
        return [(x, y) for x, y in data.as_numpy_iterator()]
    return [data[i] for i in range(len(data))]


def test_glue_recipe_on_the_tpu_path_trains_on_static_whole_batches_in_bfloat16(tmp_path, monkeypatch,
                                                                                 minilm_vocab_file, restore_float32):
    from keras_bert_impl.models.classifier import BertClassifier

    calls, fitted = [], []
    monkeypatch.setattr(distribute, "get_distribution", _fake_tpu(calls))
    original_fit = BertClassifier.fit
    monkeypatch.setattr(BertClassifier, "fit", lambda self, x, **k: fitted.append(x) or original_fit(self, x, **k))
    output_dir = str(tmp_path / "out")
    results = _recipe("run_glue").main([
        "--task_name=MNLI", f"--data_dir={_mnli_dir(tmp_path)}", f"--bert_config_file={_tiny_config(tmp_path)}",
        f"--vocab_file={minilm_vocab_file}", f"--output_dir={output_dir}", "--do_train", "--do_eval",
        "--max_seq_length=32", "--train_batch_size=5", "--num_train_epochs=1", "--strategy=tpu",
        "--tpu=grpc://10.0.0.2:8470", "--mixed_precision=bfloat16", "--verbose=0", "--nosave_model",
    ])
    assert calls == [("tpu", "grpc://10.0.0.2:8470")]
    assert keras.config.dtype_policy().name == "mixed_bfloat16"
    (data,) = fitted
    if BACKEND == "tensorflow":  # the tf.data signature itself is static, as XLA on a TPU needs
        x_spec, y_spec = data.element_spec
        assert {k: tuple(v.shape) for k, v in x_spec.items()} == {
            k: (5, 32) for k in ("token_ids", "segment_ids", "padding_mask")}
        assert tuple(y_spec.shape) == (5,) and int(data.cardinality()) == 2
    batches = _batches(data)  # 12 examples, batches of 5: the remainder of 2 is dropped
    assert [tuple(np.asarray(x["token_ids"]).shape) for x, _ in batches] == [(5, 32), (5, 32)]
    assert 0.0 <= results["accuracy"] <= 1.0 and os.path.isfile(os.path.join(output_dir, "eval_results.json"))


@pytest.mark.tensorflow
def test_pretrain_recipe_use_tpu_selects_the_tpu_strategy_and_evaluates_whole_batches(tmp_path, monkeypatch):
    from keras_bert_impl.data import tf_pretraining_datasets
    from tests.test_pretrain_recipe import recipe_args
    from tests.test_training import write_tiny_data

    data = write_tiny_data(str(tmp_path / "data"))
    calls, dataset_calls = [], []
    monkeypatch.setattr(distribute, "get_distribution", _fake_tpu(calls))
    original = tf_pretraining_datasets.pretraining_dataset
    monkeypatch.setattr(tf_pretraining_datasets, "pretraining_dataset",
                        lambda *a, **k: dataset_calls.append(k) or original(*a, **k))
    argv = [a for a in recipe_args(data, str(tmp_path / "run")) if not a.startswith("--num_train_steps")]
    results = _recipe("pretrain").main(argv + ["--num_train_steps=20", "--use_tpu", "--tpu_name=my-tpu"])
    assert calls == [("tpu", "my-tpu")]
    assert [k["is_training"] for k in dataset_calls] == [True, False]
    assert dataset_calls[-1]["drop_remainder"] is True  # TPU eval needs static shapes too
    assert results["global_step"] == 20 and np.isfinite(results["eval"]["loss"])


_TWO_REPLICA_SCRIPT = """
import json, os, sys
import keras
if keras.backend.backend() == "tensorflow":
    import tensorflow as tf
    cpu = tf.config.list_physical_devices("CPU")[0]
    tf.config.set_logical_device_configuration(cpu, [tf.config.LogicalDeviceConfiguration()] * 2)
import importlib.util
spec = importlib.util.spec_from_file_location("run_glue", os.path.join(sys.argv[1], "recipes", "run_glue.py"))
module = importlib.util.module_from_spec(spec)
spec.loader.exec_module(module)
print("RESULTS", json.dumps(module.main(sys.argv[2:])))
"""


def test_glue_recipe_splits_the_global_batch_over_two_replicas(tmp_path, minilm_vocab_file):
    strategy = {"tensorflow": "mirrored", "jax": "data_parallel", "torch": "mirrored"}[BACKEND]
    output_dir = str(tmp_path / "out")
    argv = ["--task_name=MNLI", f"--data_dir={_mnli_dir(tmp_path)}", f"--bert_config_file={_tiny_config(tmp_path)}",
            f"--vocab_file={minilm_vocab_file}", f"--output_dir={output_dir}", "--do_train", "--do_eval",
            "--max_seq_length=32", "--train_batch_size=4", "--num_train_epochs=1", f"--strategy={strategy}",
            "--verbose=2", "--nosave_model"]
    env = {**os.environ, "KERAS_BACKEND": BACKEND, "TF_CPP_MIN_LOG_LEVEL": "3", "XLA_FLAGS": two_host_devices()}
    proc = subprocess.run([sys.executable, "-c", _TWO_REPLICA_SCRIPT, REPO, *argv], capture_output=True, text=True,
                          timeout=300, env=env, cwd=REPO)
    if BACKEND == "torch":
        assert proc.returncode == 2 and proc.stderr.count("\n") == 1, proc.stderr[-3000:]
        assert "--strategy 'mirrored' needs the TensorFlow or JAX backend" in proc.stderr
        return
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert f"{strategy}: 2 replicas x 2 = global batch 4" in proc.stdout
    assert "3/3" in proc.stdout  # 12 examples in global batches of 4
    results = json.loads(proc.stdout.split("RESULTS ", 1)[1].splitlines()[0])
    assert 0.0 <= results["accuracy"] <= 1.0 and 0.0 <= results["mm_accuracy"] <= 1.0


def test_fine_tuning_recipes_refuse_the_protocol_over_several_processes(tmp_path, monkeypatch, capsys):
    # What get_distribution returns on process 1 of a 2-process JAX job.
    monkeypatch.setattr(distribute, "get_distribution",
                        lambda *a, **k: distribute.Distribution("data_parallel", 2, keras_distribution=object(),
                                                                    is_chief=False, num_processes=2))
    argv = ["--task_name=sst2", f"--data_dir={tmp_path}", f"--output_dir={tmp_path / 'out'}", "--do_train"]
    with pytest.raises(SystemExit) as exit_info:
        _recipe("run_glue").main(argv + ["--strategy=data_parallel", "--num_restarts=2"])
    assert exit_info.value.code == 2
    assert capsys.readouterr().err.strip() == (
        "error: --learning_rate_grid / --num_restarts run in one process: start one JAX process (a worker would not "
        "see the runs the chief has finished).")
    with pytest.raises(SystemExit) as exit_info:
        _recipe("run_glue").main(argv + ["--strategy=multiworker", "--num_restarts=2"])
    assert exit_info.value.code == 2
    assert capsys.readouterr().err.strip() == (
        "error: --learning_rate_grid / --num_restarts run in one process: leave out --strategy=multiworker (a worker "
        "would not see the runs the chief has finished).")
    assert not os.path.exists(tmp_path / "out")
