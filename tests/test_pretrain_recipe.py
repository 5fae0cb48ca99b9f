"""recipes/pretrain.py: three SIGKILLs + rerun end bitwise equal to an uninterrupted run; so does a run stopped
by Ctrl-C (SIGINT), which exits 130 within one step with a checkpoint of that step; a rerun with other training
flags (batch size, learning rate) is refused naming each; final weights, metrics.json, flags.

Runs on every backend (the subprocess inherits KERAS_BACKEND). The tiny config and TFRecords come
from tests/test_training.py.
"""

import importlib.util
import json
import os
import re
import signal
import subprocess
import sys
import time

import h5py
import keras
import numpy as np
import pytest

from keras_bert_impl.training import checkpoint_store, metrics_log
from keras_bert_impl.models.pretrainer import BertPretrainer
from tests.finetuning_files import signal_when
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


def checkpoint_arrays(path):
    """{dataset name: array} of every dataset of a checkpoint file (weights, optimizer, random states)."""
    arrays = {}
    with h5py.File(path, "r") as f:
        f.visititems(lambda name, item: arrays.__setitem__(name, np.asarray(item)) if isinstance(item, h5py.Dataset) else None)
    return arrays


def start_and_kill(args, checkpoint_dir, rng):
    """Starts the recipe, waits for two checkpoints newer than the newest one there, lets it run a random
    part of the time between those two more (a kill may land mid-write, and before the run's next
    checkpoint but one whatever the speed of the machine), SIGKILLs it; returns the newest checkpoint's
    step then."""
    newest = [step for step, _ in checkpoint_store.list_checkpoints(checkpoint_dir)][-1:]
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3")
    process = subprocess.Popen(
        [sys.executable, RECIPE, *args], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )
    deadline = time.time() + 240
    seen_at = []  # when each of the two new checkpoints appeared
    while len(seen_at) < 2:
        if process.poll() is not None:
            pytest.fail(f"the recipe exited early ({process.returncode}):\n{process.stderr.read().decode()[-3000:]}")
        assert time.time() < deadline, "no new checkpoint within 240 s"
        latest = [step for step, _ in checkpoint_store.list_checkpoints(checkpoint_dir)][-1:]
        if latest != newest:
            newest = latest
            seen_at.append(time.time())
        time.sleep(0.005)
    time.sleep(rng.uniform(0.0, seen_at[1] - seen_at[0]))
    process.send_signal(signal.SIGKILL)
    process.wait()
    process.stderr.close()
    assert process.returncode == -signal.SIGKILL, "the run finished before it was killed"
    return checkpoint_store.list_checkpoints(checkpoint_dir)[-1][0]


@pytest.mark.large
def test_three_sigkills_with_dropout_end_bitwise_identical_to_an_uninterrupted_run(data, tmp_path, monkeypatch):
    """kill -9 three times at random moments (dropout 0.1 on hidden states and attention), rerun the
    same command: every weight, AdamW moment and random state of the final checkpoint equals the
    uninterrupted run's bit for bit; the step counter and moments come back from the latest complete
    checkpoint; final/ reloads with from_pretrained; metrics.json holds train + eval metrics."""
    import random

    rng = random.Random()
    # Short loops, so that a kill lands after the first few checkpoints and the run is far from done.
    args = lambda out: [a for a in recipe_args(data, out) if not a.startswith(("--save_checkpoints_steps",
                        "--iterations_per_loop", "--verbose"))] + [
        "--save_checkpoints_steps=10", "--iterations_per_loop=10", "--verbose=0"]
    assert tiny_config_dropout(data["config"]) == (0.1, 0.1)

    reference_out = str(tmp_path / "uninterrupted")
    reference = load_recipe().main(args(reference_out))
    reference_checkpoint = checkpoint_store.list_checkpoints(os.path.join(reference_out, checkpoint_store.CHECKPOINT_SUBDIR))[-1]
    assert reference["initial_step"] == 0 and reference_checkpoint[0] == NUM_TRAIN_STEPS

    out = str(tmp_path / "run")
    checkpoint_dir = os.path.join(out, checkpoint_store.CHECKPOINT_SUBDIR)
    killed_steps = [start_and_kill(args(out), checkpoint_dir, rng) for _ in range(3)]
    assert 0 < killed_steps[0] <= killed_steps[1] <= killed_steps[2] < NUM_TRAIN_STEPS, killed_steps
    killed_step, killed_path = checkpoint_store.list_checkpoints(checkpoint_dir)[-1]
    stored = checkpoint_arrays(killed_path)
    assert any(name.startswith("random_state/seed_generator/") for name in stored) or "random_state/torch_cpu" in stored
    assert not os.path.exists(os.path.join(out, "metrics.json"))

    # The same command again (in-process, to look at the model right after the restore).
    captured = {}
    original_restore = checkpoint_store.restore_latest_checkpoint

    def spy(model, directory):
        step = original_restore(model, directory)
        captured["model"] = model
        captured["step"] = step
        captured["optimizer"] = [keras.ops.convert_to_numpy(v) for v in model.optimizer.variables]
        return step

    monkeypatch.setattr(checkpoint_store, "restore_latest_checkpoint", spy)
    results = load_recipe().main(args(out))

    # Step counter and optimizer state (iterations, AdamW moments) restored from the last killed run's checkpoint.
    assert captured["step"] == killed_step
    model = captured["model"]
    stored_optimizer = [stored[f"optimizer/vars/{i}"] for i in range(len(model.optimizer.variables))]
    assert len(captured["optimizer"]) == 1 + 2 * len(model.trainable_variables)
    for restored, saved in zip(captured["optimizer"], stored_optimizer):
        np.testing.assert_array_equal(restored, saved)
    assert not any(name.startswith(".tmp-") for name in os.listdir(checkpoint_dir))

    # Bitwise identical to the uninterrupted run: weights, optimizer state and random states.
    final_step, final_path = checkpoint_store.list_checkpoints(checkpoint_dir)[-1]
    assert final_step == NUM_TRAIN_STEPS == int(keras.ops.convert_to_numpy(model.optimizer.iterations))
    expected, actual = checkpoint_arrays(reference_checkpoint[1]), checkpoint_arrays(final_path)
    assert sorted(actual) == sorted(expected)
    for name in expected:
        np.testing.assert_array_equal(actual[name], expected[name], err_msg=name)
    assert len(checkpoint_store.list_checkpoints(checkpoint_dir)) == 3  # --keep_checkpoint_max

    # metrics.json: what main returned, with the step accounting, last train loop and eval metrics.
    with open(os.path.join(out, "metrics.json")) as f:
        metrics = json.load(f)
    assert metrics == json.loads(json.dumps(results))
    assert metrics["backend"] == keras.backend.backend()
    assert metrics["initial_step"] == killed_step and metrics["global_step"] == NUM_TRAIN_STEPS
    assert metrics["train"]["step"] == NUM_TRAIN_STEPS
    assert metrics["eval"] == reference["eval"]  # same weights, same eval batches
    expected_names = {"loss", "masked_lm_accuracy", "masked_lm_loss", "next_sentence_accuracy", "next_sentence_loss"}
    assert expected_names <= set(metrics["train"]) and expected_names <= set(metrics["eval"])
    # The training curve spans all runs on one step axis, each step once.
    log_steps = [r["step"] for r in metrics_log.read_metrics_log(os.path.join(out, "train_log.jsonl"))]
    assert log_steps == list(range(10, NUM_TRAIN_STEPS + 1, 10))

    # The final weights reload with from_pretrained and give the same outputs.
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


# Runs pretrain.py, taking 0.2 s per step from step 5 on and writing the number of steps done to a marker
# file, so that the test can signal it at a known step.
SLOW_PRETRAIN = """
import os, runpy, sys, time
from keras_bert_impl.training import divergence

marker = sys.argv[1]


class Slow(divergence.DivergenceGuard):
    steps = 0

    def on_train_batch_end(self, batch, logs=None):
        super().on_train_batch_end(batch, logs)
        Slow.steps += 1
        with open(marker + ".tmp", "w") as f:
            f.write(str(Slow.steps))
        os.replace(marker + ".tmp", marker)
        if Slow.steps >= 5:
            time.sleep(0.2)

divergence.DivergenceGuard = Slow
sys.argv = [sys.argv[2]] + sys.argv[3:]
runpy.run_path(sys.argv[0], run_name="__main__")
"""


def test_ctrl_c_stops_after_the_step_with_its_checkpoint_and_the_rerun_ends_as_an_uninterrupted_run(data, tmp_path):
    """SIGINT on every backend (on JAX Keras' bare `except` swallowed the KeyboardInterrupt): exit status 130,
    one line naming the step and its checkpoint; the same command resumes there and ends bitwise equal to an
    uninterrupted run (dropout 0.1: the random states are in the checkpoint)."""
    steps = 30

    def args(out):
        return [a for a in recipe_args(data, out) if not a.startswith(("--num_train_steps", "--save_checkpoints_steps",
                                                                        "--iterations_per_loop", "--verbose"))] + [
            f"--num_train_steps={steps}", "--save_checkpoints_steps=10", "--iterations_per_loop=10", "--verbose=0"]

    out, marker = str(tmp_path / "run"), str(tmp_path / "steps")
    process = subprocess.Popen([sys.executable, "-c", SLOW_PRETRAIN, marker, RECIPE, *args(out)],
                               env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3"), stdout=subprocess.DEVNULL,
                               stderr=subprocess.PIPE, text=True)

    def steps_done_from_7():
        steps_done = int(open(marker).read()) if os.path.exists(marker) else 0
        return steps_done if steps_done >= 7 else None

    signalled_at, (_, stderr) = signal_when(process, steps_done_from_7, signal.SIGINT)
    assert process.returncode == 130, stderr[-3000:]
    line = stderr.strip().splitlines()[-1]
    checkpoint_dir = os.path.join(out, checkpoint_store.CHECKPOINT_SUBDIR)
    match = re.fullmatch(r"stopped by SIGINT after step (\d+); its checkpoint is (.+): the same command resumes from "
                         r"step \1\.", line)
    assert match and "Traceback" not in stderr, stderr[-3000:]
    stopped = int(match.group(1))
    assert signalled_at <= stopped <= signalled_at + 1
    assert checkpoint_store.list_checkpoints(checkpoint_dir)[-1] == (stopped, match.group(2))
    assert not os.path.exists(os.path.join(out, "final"))

    resumed = load_recipe().main(args(out))  # the same command again
    assert resumed["initial_step"] == stopped and resumed["global_step"] == steps
    reference_out = str(tmp_path / "uninterrupted")
    load_recipe().main(args(reference_out))
    expected, actual = (checkpoint_arrays(checkpoint_store.list_checkpoints(os.path.join(d, "checkpoints"))[-1][1])
                        for d in (reference_out, out))
    assert sorted(actual) == sorted(expected)
    for name in expected:
        np.testing.assert_array_equal(actual[name], expected[name], err_msg=name)
    # The checkpoints stay at the multiples of --save_checkpoints_steps after the resume.
    assert [step for step, _ in checkpoint_store.list_checkpoints(checkpoint_dir)][-2:] == [20, 30]


def tiny_config_dropout(config_file):
    with open(config_file) as f:
        config = json.load(f)
    return config["hidden_dropout_prob"], config["attention_probs_dropout_prob"]


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


def test_a_rerun_with_another_batch_size_or_learning_rate_is_refused_naming_both(data, tmp_path, capsys):
    out = str(tmp_path / "run")
    args = [a for a in recipe_args(data, out) if not a.startswith("--num_train_steps")] + ["--num_train_steps=4"]
    recipe = load_recipe()
    recipe.main(args + ["--nodo_eval"])
    with open(os.path.join(out, "run_settings.json")) as f:
        before = f.read()
    with pytest.raises(SystemExit) as exit_info:
        recipe.main(args + ["--train_batch_size=2", "--learning_rate=1e-2"])
    assert exit_info.value.code == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith(f"error: --output_dir {out}: its run has other settings: --learning_rate 0.001 -> 0.01, "
                          "--train_batch_size 4 -> 2 (recorded in ") and "\n" not in err, err
    with open(os.path.join(out, "run_settings.json")) as f:
        assert f.read() == before
    # Another model: named as well, instead of "none of its checkpoints can be trusted".
    with pytest.raises(SystemExit):
        recipe.main([a for a in args if not a.startswith("--bert_config_file")] + ["--config=bert_tiny"])
    assert (f"its run has other settings: --bert_config_file {os.path.abspath(data['config'])!r} -> null, --config "
            "null -> 'bert_tiny' (recorded in ") in capsys.readouterr().err


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
