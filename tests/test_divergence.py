"""Divergence stops a run: `DivergenceGuard` in a user's fit, pretrain.py and run_glue.py at
--learning_rate=1000 exit 1 with one line naming the step (or epoch), leave the newest checkpoint finite and
no final/ or model/ (nor a best model: a finite loss grown 100-fold stops the run too); `BestCheckpoint` refuses a NaN dev metric; `write_json` writes strict JSON; `open_text`
names the file and line of bytes that are not UTF-8. Runs on every backend."""

import json
import os
import random
import re

import h5py
import keras
import numpy as np
import pytest

from keras_bert_impl.runners import cli
from keras_bert_impl.training import checkpoint_store, divergence
from keras_bert_impl.training.divergence import DivergenceGuard
from keras_bert_impl.training.epoch_schedule import BEST_WEIGHTS, BestCheckpoint
from keras_bert_impl.utils import file_io
from keras_bert_impl.utils.errors import TrainingDivergedError, UserInputError
from tests.finetuning_files import load_run_glue, run_glue_flags, write_sst2_task
from tests.test_pretrain_recipe import load_recipe
from tests.test_training import MAX_PREDICTIONS, SEQ_LEN, write_tiny_data


def tiny_regression_model():
    return keras.Sequential([keras.Input((2,)), keras.layers.Dense(1, name="dense")], name="tiny")


def is_finite_h5(path):
    """Whether every float array of the h5 file `path` is finite (read independently of the package)."""
    arrays = []
    with h5py.File(path, "r") as f:
        f.visititems(lambda _, item: arrays.append(item[()]) if isinstance(item, h5py.Dataset) else None)
    return all(np.isfinite(a).all() for a in arrays if np.asarray(a).dtype.kind == "f")


def strict_json_lines(path):
    """The records of a JSON-lines file, refusing the bare NaN / Infinity tokens."""
    def refuse(token):
        raise AssertionError(f"{path} holds {token}")

    with open(path, encoding="utf-8") as f:
        return [json.loads(line, parse_constant=refuse) for line in f if line.strip()]


def one_error_line(capsys):
    lines = [line for line in capsys.readouterr().err.splitlines() if line.startswith("error:")]
    assert len(lines) == 1, lines
    return lines[0]


# ---------------------------------------------------------------------------------------- the callback
def test_guard_in_a_users_fit_raises_at_the_first_non_finite_loss_naming_the_optimizer_step():
    model = tiny_regression_model()
    model.compile(optimizer=keras.optimizers.SGD(1e30), loss="mse")
    x = np.ones((16, 2), "float32")
    losses = []
    record = keras.callbacks.LambdaCallback(on_train_batch_end=lambda batch, logs: losses.append(logs["loss"]))
    with pytest.raises(TrainingDivergedError) as caught:
        model.fit(x, 1e10 * x[:, :1], batch_size=2, epochs=3, verbose=0, callbacks=[DivergenceGuard(), record])
    # The guard runs before `record`: the batch it stopped at is not recorded; every recorded loss is finite.
    assert all(np.isfinite(losses))
    step = len(losses) + 1
    assert int(keras.ops.convert_to_numpy(model.optimizer.iterations)) == step
    assert str(caught.value) in (f"step {step}: loss is inf.", f"step {step}: loss is nan.")


def test_guard_checks_every_logged_metric_and_the_epoch_logs():
    guard = DivergenceGuard()
    model = tiny_regression_model()
    model.compile(optimizer="sgd", loss="mse")
    guard.set_model(model)
    guard.on_train_batch_end(0, {"loss": 1.0, "accuracy": 0.5, "note": "text is not a metric"})
    with pytest.raises(TrainingDivergedError, match=r"^step 0: loss is nan, accuracy is inf\.$"):
        guard.on_train_batch_end(0, {"accuracy": float("inf"), "loss": float("nan")})
    with pytest.raises(TrainingDivergedError, match=r"^epoch 3, step 0: dev_f1 is nan\.$"):
        guard.on_epoch_end(2, {"loss": 1.0, "dev_f1": float("nan")})


def test_guard_stops_a_loss_above_100_times_its_start_floored_at_1_and_takes_a_resumed_runs_start():
    model = tiny_regression_model()
    model.compile(optimizer="sgd", loss="mse")
    guard = DivergenceGuard()
    guard.set_model(model)
    for loss in (0.01, 0.5, 99.0, 100.0):  # the start 0.01 counts as 1: up to 100 is no divergence
        guard.on_train_batch_end(0, {"loss": loss})
    with pytest.raises(TrainingDivergedError, match=r"^step 0: loss is 1e\+02, more than 100 x max\(1, its start "
                                                    r"0\.01\): the run is diverging\.$"):
        guard.on_train_batch_end(0, {"loss": 100.5})
    resumed = DivergenceGuard(reference_loss=7.5)  # a resumed run: the first loss of its train log
    resumed.set_model(model)
    resumed.on_train_batch_end(0, {"loss": 750.0})
    with pytest.raises(TrainingDivergedError, match=r"^epoch 2, step 0: loss is 7\.5e\+02, more than 100 x max\(1, "
                                                    r"its start 7\.5\)"):
        resumed.on_epoch_end(1, {"loss": 751.0})


def test_newest_finite_checkpoint_sets_aside_checkpoints_holding_nan(tmp_path):
    model = tiny_regression_model()
    model.compile(optimizer="sgd", loss="mse")
    model.fit(np.ones((4, 2)), np.ones((4, 1)), batch_size=2, verbose=0)  # 2 steps
    directory = str(tmp_path / "checkpoints")
    finite_step, finite_path = checkpoint_store.save_checkpoint(model, directory)
    model.layers[0].bias.assign([float("nan")])
    model.optimizer.iterations.assign(4)
    os.makedirs(directory, exist_ok=True)
    model.save_weights(checkpoint_store.checkpoint_path(directory, 4))  # written as a diverged run did before the guard
    guard = DivergenceGuard(directory)
    guard.set_model(model)
    with pytest.raises(TrainingDivergedError) as caught:
        guard.on_train_batch_end(0, {"loss": float("nan")})
    assert str(caught.value) == f"step 4: loss is nan; the newest finite checkpoint is {finite_path} (step 2)."
    assert checkpoint_store.list_checkpoints(directory) == [(finite_step, finite_path)]
    assert "diverged-ckpt-00000004.weights.h5" in os.listdir(directory)


def test_check_finite_weights_names_the_variable():
    model = tiny_regression_model()
    divergence.check_finite_weights(model, "epoch 1")
    model.layers[0].kernel.assign([[1.0], [float("inf")]])
    expected = r"^epoch 2: the weights are not finite \(tiny/dense/kernel holds inf\)"
    with pytest.raises(TrainingDivergedError, match=expected):
        divergence.check_finite_weights(model, "epoch 2")


# ------------------------------------------------------------------------------------------ pretrain.py
def test_pretrain_at_learning_rate_1000_exits_1_naming_the_step_and_keeps_the_newest_checkpoint_finite(
        tmp_path, capsys):
    data = write_tiny_data(str(tmp_path / "data"))
    out = str(tmp_path / "run")
    argv = [f"--input_file={data['train']}", f"--bert_config_file={data['config']}", f"--output_dir={out}",
            "--do_train=True", "--do_eval=True", f"--max_seq_length={SEQ_LEN}",
            f"--max_predictions_per_seq={MAX_PREDICTIONS}", "--train_batch_size=4", "--num_train_steps=80",
            "--num_warmup_steps=0", "--learning_rate=1000", "--save_checkpoints_steps=1", "--iterations_per_loop=1",
            "--keep_checkpoint_max=2", "--seed=1", "--verbose=0"]
    with pytest.raises(SystemExit) as exit_info:
        load_recipe().main(argv)
    assert exit_info.value.code == 1
    line = one_error_line(capsys)
    # The guard's "step N: loss is nan" or "loss is 4.4e+07, more than 100 x max(1, its start ...)" (the loss
    # grows finite before it is NaN: the growth rule stops it at step 2), or the checkpoint writer's refusal of
    # non-finite weights at step N when the update of a step with a finite loss made them non-finite.
    match = re.match(r"error: training diverged: step (\d+): .*(is nan|is inf|not finite|the run is diverging)", line)
    assert match, line
    checkpoints = checkpoint_store.list_checkpoints(os.path.join(out, checkpoint_store.CHECKPOINT_SUBDIR))
    assert checkpoints, "the steps before the divergence were checkpointed"
    assert checkpoints[-1][0] < int(match.group(1))
    assert is_finite_h5(checkpoints[-1][1])
    assert not os.path.exists(os.path.join(out, "final"))
    assert not os.path.exists(os.path.join(out, "metrics.json"))
    assert strict_json_lines(os.path.join(out, "train_log.jsonl"))


# ------------------------------------------------------------------------------------------ run_glue.py
def test_run_glue_at_learning_rate_1000_exits_1_and_writes_no_model(tmp_path, capsys):
    flags = write_sst2_task(str(tmp_path / "data"))
    out = str(tmp_path / "run")
    with pytest.raises(SystemExit) as exit_info:
        load_run_glue().main(run_glue_flags(flags, out, "--learning_rate=1000"))
    assert exit_info.value.code == 1
    line = one_error_line(capsys)
    assert line.startswith("error: training diverged: ")
    assert not os.path.exists(os.path.join(out, "model"))
    assert not os.path.exists(os.path.join(out, "eval_results.json"))
    if os.path.exists(os.path.join(out, BEST_WEIGHTS)):
        assert is_finite_h5(os.path.join(out, BEST_WEIGHTS))
    # The loss grows finite on TensorFlow and JAX (0.69 -> ~8e3 at step 2): the growth rule stops the run in
    # its first epoch, before any epoch's model is saved as best.
    assert re.match(r"error: training diverged: step [2-9]: loss is \S+, more than 100 x max\(1, its start 0\.\d+\): "
                    r"the run is diverging; .* holds no finite checkpoint\.$", line), line
    assert not os.path.exists(os.path.join(out, BEST_WEIGHTS))
    for _, path in checkpoint_store.list_checkpoints(os.path.join(out, checkpoint_store.CHECKPOINT_SUBDIR)):
        assert is_finite_h5(path)
    for name in ("train_log.jsonl", "train_steps_log.jsonl"):
        if os.path.exists(os.path.join(out, name)):
            strict_json_lines(os.path.join(out, name))


def write_stsb_task(directory):
    flags = write_sst2_task(directory)
    rng = random.Random(0)
    header = "index\tgenre\tfilename\tyear\told_index\tsource1\tsource2\tsentence1\tsentence2\tscore\n"
    for name in ("train.tsv", "dev.tsv"):
        with open(os.path.join(directory, name), "w", encoding="utf-8") as f:
            f.write(header)
            f.writelines(f"{i}\tx\tx\tx\tx\tx\tx\tthe movie good\tthe plot bad\t{rng.uniform(0, 5):.2f}\n"
                         for i in range(16))
    return flags


def test_run_glue_stsb_with_a_nan_dev_metric_exits_1_naming_the_epoch_and_writes_no_model(tmp_path, capsys):
    flags = write_stsb_task(str(tmp_path / "data"))
    out = str(tmp_path / "run")
    argv = [a if a != "--task_name=sst2" else "--task_name=stsb"
            for a in run_glue_flags(flags, out, "--learning_rate=1000")]
    with pytest.raises(SystemExit) as exit_info:
        load_run_glue().main(argv)
    assert exit_info.value.code == 1
    line = one_error_line(capsys)
    # Constant predictions (Pearson's r undefined) at epoch 1, unless the loss itself is NaN or grown 100-fold
    # before (the growth rule of `training.divergence`: at lr 1000 the MSE goes from ~5 to ~1e6 at step 2).
    assert re.match(r"error: training diverged: (epoch 1: dev spearmanr is nan|step \d+: loss is (nan|.*the run is "
                    r"diverging))", line), line
    for name in ("model", BEST_WEIGHTS, "eval_results.json"):
        assert not os.path.exists(os.path.join(out, name)), name


def test_best_checkpoint_refuses_a_nan_dev_metric_and_records_other_undefined_metrics_as_null(tmp_path):
    model = tiny_regression_model()
    model.compile(optimizer="sgd", loss="mse")
    scores = iter([{"spearmanr": 0.5, "pearson": float("nan")}, {"spearmanr": float("nan"), "pearson": 0.1}])
    best = BestCheckpoint(lambda model: next(scores), "spearmanr", str(tmp_path))
    best.set_model(model)
    logs = {}
    best.on_epoch_end(0, logs)
    assert logs == {"dev_spearmanr": 0.5}
    with pytest.raises(TrainingDivergedError, match=r"^epoch 2: dev spearmanr is nan"):
        best.on_epoch_end(1, {})
    with open(tmp_path / "dev_metrics_per_epoch.json", encoding="utf-8") as f:
        assert json.load(f) == [{"epoch": 1, "pearson": None, "spearmanr": 0.5}]
    assert best.best_metrics["epoch"] == 1


def test_best_checkpoint_never_saves_non_finite_weights(tmp_path):
    model = tiny_regression_model()
    model.compile(optimizer="sgd", loss="mse")
    model.layers[0].bias.assign([float("nan")])
    best = BestCheckpoint(lambda model: {"accuracy": 0.9}, "accuracy", str(tmp_path))
    best.set_model(model)
    with pytest.raises(TrainingDivergedError, match=r"^epoch 1: the weights are not finite"):
        best.on_epoch_end(0, {})
    assert not os.path.exists(tmp_path / BEST_WEIGHTS)


# ------------------------------------------------------------------------------------------ run_main
def test_run_main_exits_1_for_divergence_2_for_user_errors_and_debug_reraises(capsys):
    def diverged(args):
        raise TrainingDivergedError("step 3: loss is nan.")

    def mistaken(args):
        raise UserInputError("train.tsv:2: expected 2 fields.")

    import argparse

    for run, code, message in ((diverged, 1, "error: training diverged: step 3: loss is nan."),
                               (mistaken, 2, "error: train.tsv:2: expected 2 fields.")):
        with pytest.raises(SystemExit) as exit_info:
            cli.run_main(argparse.ArgumentParser, run, [])
        assert exit_info.value.code == code
        assert capsys.readouterr().err.strip() == message
    with pytest.raises(TrainingDivergedError):
        cli.run_main(argparse.ArgumentParser, diverged, ["--debug"])


# ------------------------------------------------------------------------------------------ file_io
def test_write_json_refuses_nan_naming_the_path_and_key_path_and_writes_nothing(tmp_path):
    path = str(tmp_path / "metrics.json")
    for value, where in (({"train": {"loss": float("nan")}}, "train.loss is nan"),
                         ([{"f1": 1.0}, {"f1": float("-inf")}], "[1].f1 is -inf"),
                         (float("inf"), "the value is inf")):
        with pytest.raises(ValueError) as caught:
            file_io.write_json(path, value)
        assert str(caught.value) == f"{path}: {where}, which strict JSON cannot hold."
        assert os.listdir(tmp_path) == []
    file_io.write_json(path, {"pearson": None, "loss": 0.5})
    with open(path, encoding="utf-8") as f:
        assert json.load(f) == {"pearson": None, "loss": 0.5}


def test_open_text_names_the_file_and_line_of_bytes_that_are_not_utf8(tmp_path):
    path = str(tmp_path / "train.tsv")
    with open(path, "wb") as f:
        f.write(b"sentence\tlabel\r\ngood caf\xc3\xa9\t1\r\nbad \xe9t\xe9\t0\r\n")
    expected = f"{path}:3: not valid UTF-8 text (invalid continuation byte 0xe9 at byte 4 of the line)."
    for read in (list, lambda f: f.read(), lambda f: f.readlines()):
        with pytest.raises(UserInputError) as caught, file_io.open_text(path) as f:
            read(f)
        assert str(caught.value) == expected
    good = str(tmp_path / "good.tsv")
    with open(good, "wb") as f:
        f.write(b"a\tb\r\nc\td\r\n")
    with file_io.open_text(good, newline="") as f:
        assert list(f) == ["a\tb\r\n", "c\td\r\n"]
    with file_io.open_text(good) as f:
        assert f.read() == "a\tb\nc\td\n"
