"""recipes/pretrain.py: SIGKILL + rerun resumes to the full step count, final weights, metrics.json, flags.

Runs on every backend (the subprocess inherits KERAS_BACKEND). The tiny config and TFRecords come
from tests/test_training.py.
"""

import importlib.util
import json
import os
import signal
import subprocess
import sys
import time

import h5py
import keras
import numpy as np
import pytest

from keras_bert_impl.training import resumable as training
from keras_bert_impl.models.pretrainer import BertPretrainer
from tests.test_training import MAX_PREDICTIONS, SEQ_LEN, tiny_dataset, write_tiny_data

RECIPE = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "recipes", "pretrain.py")
NUM_TRAIN_STEPS = 120


def load_recipe():
    spec = importlib.util.spec_from_file_location("pretrain_recipe", RECIPE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    return write_tiny_data(str(tmp_path_factory.mktemp("tiny_data")))


def recipe_args(data, output_dir):
    return [
        f"--input_file={data['train']}",
        f"--eval_input_file={data['eval']}",
        f"--bert_config_file={data['config']}",
        f"--output_dir={output_dir}",
        "--do_train=True",
        "--do_eval=True",
        f"--max_seq_length={SEQ_LEN}",
        f"--max_predictions_per_seq={MAX_PREDICTIONS}",
        "--train_batch_size=4",
        "--eval_batch_size=4",
        "--max_eval_steps=5",
        f"--num_train_steps={NUM_TRAIN_STEPS}",
        "--num_warmup_steps=10",
        "--learning_rate=1e-3",
        "--save_checkpoints_steps=20",
        "--iterations_per_loop=20",
        "--keep_checkpoint_max=3",
        "--seed=1",
        "--verbose=2",
    ]


def test_sigkill_then_rerun_resumes_weights_optimizer_and_step(data, tmp_path, monkeypatch):
    """(a)-(d): kill -9 after a checkpoint, rerun the same command: the step counter and the AdamW
    moments come back from the latest complete checkpoint, training ends at exactly num_train_steps,
    final/ reloads with from_pretrained to the same outputs, metrics.json holds train + eval metrics."""
    out = str(tmp_path / "run")
    checkpoint_dir = os.path.join(out, training.CHECKPOINT_SUBDIR)
    args = recipe_args(data, out)

    # 1. Launch the recipe, wait for its first checkpoint, SIGKILL it mid-run.
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3")
    process = subprocess.Popen(
        [sys.executable, RECIPE, *args], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )
    deadline = time.time() + 240
    while not training.list_checkpoints(checkpoint_dir):
        if process.poll() is not None:
            pytest.fail(f"the recipe exited early ({process.returncode}):\n{process.stderr.read().decode()[-3000:]}")
        assert time.time() < deadline, "no checkpoint within 240 s"
        time.sleep(0.05)
    process.send_signal(signal.SIGKILL)
    process.wait()
    process.stderr.close()
    assert process.returncode == -signal.SIGKILL  # killed mid-run, not finished
    # What a kill during a checkpoint write would have left: it must be ignored (and removed) on resume.
    with open(os.path.join(checkpoint_dir, ".tmp-ckpt-99999999-1.weights.h5"), "wb") as f:
        f.write(b"\x89HDF\r\n partial")
    killed_step, killed_path = training.list_checkpoints(checkpoint_dir)[-1]
    assert 0 < killed_step < NUM_TRAIN_STEPS and killed_step % 20 == 0
    assert not os.path.exists(os.path.join(out, "metrics.json"))
    with h5py.File(killed_path, "r") as f:
        stored = f["optimizer"]["vars"]
        stored_optimizer = [np.asarray(stored[str(i)]) for i in range(len(stored))]

    # 2. Run the same command again (in-process, to look at the model right after the restore).
    captured = {}
    original_restore = training.restore_latest_checkpoint

    def spy(model, directory):
        step = original_restore(model, directory)
        captured["model"] = model
        captured["step"] = step
        captured["optimizer"] = [keras.ops.convert_to_numpy(v) for v in model.optimizer.variables]
        return step

    monkeypatch.setattr(training, "restore_latest_checkpoint", spy)
    results = load_recipe().main(args)

    # Step counter and optimizer state (iterations, AdamW moments) restored from the killed run's checkpoint.
    assert captured["step"] == killed_step
    model = captured["model"]
    iterations_index = [i for i, v in enumerate(model.optimizer.variables) if v is model.optimizer.iterations]
    assert len(iterations_index) == 1 and int(captured["optimizer"][iterations_index[0]]) == killed_step
    assert len(captured["optimizer"]) == len(stored_optimizer) == 1 + 2 * len(model.trainable_variables)
    for restored, saved in zip(captured["optimizer"], stored_optimizer):
        np.testing.assert_array_equal(restored, saved)
    assert max(np.abs(m).max() for m in stored_optimizer[1:]) > 0  # the moments are not trivially zero
    assert not any(name.startswith(".tmp-") for name in os.listdir(checkpoint_dir))

    # The full step count, exactly.
    assert int(keras.ops.convert_to_numpy(model.optimizer.iterations)) == NUM_TRAIN_STEPS
    assert [s for s, _ in training.list_checkpoints(checkpoint_dir)][-1] == NUM_TRAIN_STEPS
    assert len(training.list_checkpoints(checkpoint_dir)) == 3  # --keep_checkpoint_max

    # (d) metrics.json: what main returned, with the step accounting, last train loop and eval metrics.
    with open(os.path.join(out, "metrics.json")) as f:
        metrics = json.load(f)
    assert metrics == json.loads(json.dumps(results))
    assert metrics["backend"] == keras.backend.backend()
    assert metrics["initial_step"] == killed_step and metrics["global_step"] == NUM_TRAIN_STEPS
    assert metrics["num_train_steps"] == NUM_TRAIN_STEPS
    assert metrics["train"]["step"] == NUM_TRAIN_STEPS
    expected = {"loss", "masked_lm_accuracy", "masked_lm_loss", "next_sentence_accuracy", "next_sentence_loss"}
    assert expected <= set(metrics["train"]) and expected <= set(metrics["eval"])
    for name in ("masked_lm_accuracy", "next_sentence_accuracy"):
        assert 0.0 <= metrics["eval"][name] <= 1.0
    assert metrics["eval"]["loss"] == pytest.approx(
        metrics["eval"]["masked_lm_loss"] + metrics["eval"]["next_sentence_loss"], rel=1e-4
    )
    # The training curve spans both runs on one step axis.
    log_steps = [r["step"] for r in training.read_metrics_log(os.path.join(out, "train_log.jsonl"))]
    assert log_steps[-1] == NUM_TRAIN_STEPS and log_steps == sorted(log_steps)

    # (c) The final weights reload with from_pretrained and give the same outputs.
    reloaded = BertPretrainer.from_pretrained(os.path.join(out, "final"))
    x, _ = next(iter(tiny_dataset(data["eval"], is_training=False)))
    x = {k: keras.ops.convert_to_numpy(v) for k, v in x.items()}
    expected_outputs = model(x, training=False)
    actual_outputs = reloaded(x, training=False)
    for name in ("masked_lm_logits", "next_sentence_logits"):
        np.testing.assert_allclose(
            keras.ops.convert_to_numpy(actual_outputs[name]),
            keras.ops.convert_to_numpy(expected_outputs[name]),
            rtol=1e-5,
            atol=1e-5,
        )


def test_rerun_after_completion_trains_nothing_and_eval_only(data, tmp_path):
    """A finished run run again keeps its step; --nodo_train --do_eval evaluates the latest checkpoint."""
    out = str(tmp_path / "run")
    args = recipe_args(data, out)
    args[args.index(f"--num_train_steps={NUM_TRAIN_STEPS}")] = "--num_train_steps=20"
    recipe = load_recipe()
    first = recipe.main(args)
    assert first["initial_step"] == 0 and first["global_step"] == 20
    again = recipe.main(args)
    assert again["initial_step"] == again["global_step"] == 20
    eval_only = recipe.main(args + ["--nodo_train"])
    assert eval_only["global_step"] == 20 and "train" not in eval_only
    assert eval_only["eval"] == pytest.approx(first["eval"], rel=1e-5)


def test_flags_parse_like_run_pretraining():
    """(e) The original's flag names, defaults and absl boolean spellings."""
    parser = load_recipe().build_parser()
    defaults = parser.parse_args(["--output_dir=o"])
    original_defaults = {
        "bert_config_file": None,
        "input_file": None,
        "init_checkpoint": None,
        "max_seq_length": 128,
        "max_predictions_per_seq": 20,
        "do_train": False,
        "do_eval": False,
        "train_batch_size": 32,
        "eval_batch_size": 8,
        "learning_rate": 5e-5,
        "num_train_steps": 100000,
        "num_warmup_steps": 10000,
        "save_checkpoints_steps": 1000,
        "iterations_per_loop": 1000,
        "max_eval_steps": 100,
        "use_tpu": False,
        "tpu_name": None,
        "num_tpu_cores": 8,
    }
    assert {k: getattr(defaults, k) for k in original_defaults} == original_defaults

    # The README command of google-research/bert.
    args = parser.parse_args(
        "--input_file=/tmp/tf_examples.tfrecord --output_dir=/tmp/pretraining_output --do_train=True "
        "--do_eval=True --bert_config_file=cfg/bert_config.json --init_checkpoint=cfg/bert_model.ckpt "
        "--train_batch_size=32 --max_seq_length=128 --max_predictions_per_seq=20 --num_train_steps=20 "
        "--num_warmup_steps=10 --learning_rate=2e-5".split()
    )
    assert (args.do_train, args.do_eval, args.num_train_steps, args.num_warmup_steps) == (True, True, 20, 10)
    assert (args.learning_rate, args.init_checkpoint) == (2e-5, "cfg/bert_model.ckpt")
    assert parser.parse_args(["--output_dir=o", "--do_train"]).do_train is True
    assert parser.parse_args(["--output_dir=o", "--nodo_eval"]).do_eval is False
    assert parser.parse_args(["--output_dir=o", "--do_eval=false"]).do_eval is False
    extras = parser.parse_args(["--output_dir=o", "--config=bert_tiny", "--optimizer=lamb", "--steps_per_execution=4"])
    assert (extras.config, extras.optimizer, extras.steps_per_execution) == ("bert_tiny", "lamb", 4)
    with pytest.raises(SystemExit):
        parser.parse_args(["--output_dir=o", "--optimizer=sgd"])
    with pytest.raises(ValueError, match="do_train` or `do_eval"):
        load_recipe().main(["--output_dir=o", "--input_file=x"])
