"""The fine-tuning driver's trail and resume, on run_glue.py with a tiny model (hidden 16, 1 layer, no
dropout): a run killed with SIGKILL in its second epoch, started again with the same command, resumes at
its epoch-1 checkpoint and ends with the uninterrupted run's dev metrics, losses and weights; so does a run
stopped by Ctrl-C (SIGINT), which exits 130 within one step saying where it resumes, and while it runs a
second run on its output_dir is refused naming its process; the run leaves train_log.jsonl, TensorBoard
events, dev metrics per epoch and a best.weights.h5 without optimizer state; a finished run started again
trains nothing, refuses other training settings (naming each) and --overwrite_output_dir starts it afresh,
removing only what a run wrote; a rerun on data with another label set is refused naming both sets."""

import json
import os
import re
import shutil
import signal
import subprocess
import time

import h5py
import numpy as np
import pytest
from safetensors.numpy import load_file

from keras_bert_impl.training import checkpoint_store, epoch_schedule, metrics_log, resumable
from keras_bert_impl.utils import file_io
from tests.tensorboard_reading import tensorboard_scalars
from tests.finetuning_files import (
    PYTHON,
    RUN_GLUE,
    load_run_glue,
    run_glue_flags,
    signal_when,
    subprocess_env,
    write_sst2_task,
)

# Runs run_glue.py (argv: marker file, pause, first batch, the recipe and its flags) slowed down in its 2nd
# epoch: after every batch from the given one on it writes "<epoch> <batch>" to the marker file and sleeps the
# pause (seconds). With a pause of 600 from the 3rd batch the test can kill it there with SIGKILL: a crash in the
# middle of an epoch, after optimizer steps that no checkpoint holds; with 0.3 it can signal it at a known step.
STALLING_RUN = """
import os, runpy, sys, time
from keras_bert_impl.training import epoch_schedule

marker, pause, first_batch = sys.argv[1], float(sys.argv[2]), int(sys.argv[3])


class Stall(epoch_schedule.EpochSeed):
    def on_epoch_begin(self, epoch, logs=None):
        super().on_epoch_begin(epoch, logs)
        self.epoch = epoch

    def on_train_batch_end(self, batch, logs=None):
        if self.epoch >= 1 and batch >= first_batch:
            with open(marker + ".tmp", "w") as f:
                f.write(f"{self.epoch} {batch}")
            os.replace(marker + ".tmp", marker)
            time.sleep(pause)

epoch_schedule.EpochSeed = Stall
sys.argv = sys.argv[4:]
runpy.run_path(sys.argv[0], run_name="__main__")
"""


@pytest.fixture(scope="module")
def task_files(tmp_path_factory):
    return write_sst2_task(str(tmp_path_factory.mktemp("sst2")))


@pytest.fixture(scope="module")
def uninterrupted(task_files, tmp_path_factory):
    """The output_dir of an uninterrupted 3-epoch run (in this process) and its printed output."""
    output_dir = str(tmp_path_factory.mktemp("uninterrupted"))
    import contextlib
    import io

    stdout = io.StringIO()
    with contextlib.redirect_stdout(stdout):
        load_run_glue().main(run_glue_flags(task_files, output_dir))
    return output_dir, stdout.getvalue()


def _h5_arrays(path):
    arrays = {}
    with h5py.File(path) as f:
        f.visititems(lambda name, item: arrays.update({name: item[()]}) if isinstance(item, h5py.Dataset) else None)
    return arrays


def _read(output_dir):
    """What a run ends with: eval_results, per-epoch dev metrics, logged losses, the model's weights."""
    with open(os.path.join(output_dir, "eval_results.json")) as f:
        results = json.load(f)
    with open(os.path.join(output_dir, "dev_metrics_per_epoch.json")) as f:
        history = json.load(f)
    log = metrics_log.read_metrics_log(os.path.join(output_dir, resumable.TRAIN_LOG))
    log += metrics_log.read_metrics_log(os.path.join(output_dir, resumable.STEPS_LOG))
    weights = load_file(os.path.join(output_dir, "model", "model.safetensors"))
    return results, history, log, weights


def test_killed_run_resumes_at_its_last_epoch_and_ends_as_the_uninterrupted_run(task_files, uninterrupted, tmp_path,
                                                                                 capsys):
    output_dir = str(tmp_path / "out")
    marker = str(tmp_path / "stalled")
    argv = run_glue_flags(task_files, output_dir)
    proc = subprocess.Popen([PYTHON, "-c", STALLING_RUN, marker, "600", "2", RUN_GLUE, *argv], env=subprocess_env(),
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.time() + 240
        while not os.path.exists(marker) and proc.poll() is None and time.time() < deadline:
            time.sleep(0.05)
        assert os.path.exists(marker), f"the run did not reach epoch 2: {proc.poll()} {proc.stderr.read()[-2000:]}"
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.stderr.close()
    assert proc.returncode == -signal.SIGKILL
    checkpoint_dir = os.path.join(output_dir, checkpoint_store.CHECKPOINT_SUBDIR)
    assert [step for step, _ in checkpoint_store.list_checkpoints(checkpoint_dir)] == [10]  # epoch 1 of 10 steps
    assert not os.path.exists(os.path.join(output_dir, "eval_results.json"))

    load_run_glue().main(argv)  # the same command again
    assert "resuming from" in capsys.readouterr().out

    results, history, log, weights = _read(output_dir)
    reference_results, reference_history, reference_log, reference_weights = _read(uninterrupted[0])
    assert results == reference_results
    assert history == reference_history
    # Each epoch logged once (train_log.jsonl), then every 4 steps (train_steps_log.jsonl).
    assert [record["step"] for record in log] == [10, 20, 30, 4, 8, 12, 16, 20, 24, 28]
    assert [record["epoch"] for record in log] == [1, 2, 3, 1, 1, 2, 2, 2, 3, 3]
    for record, reference in zip(log, reference_log):
        np.testing.assert_allclose(record["loss"], reference["loss"], rtol=1e-5)
        assert record.get("dev_accuracy") == reference.get("dev_accuracy")
    assert sorted(weights) == sorted(reference_weights)  # the best epoch's weights
    for name in weights:
        np.testing.assert_allclose(weights[name], reference_weights[name], atol=1e-6, err_msg=name)
    # The last epoch's model and optimizer state (the best epoch may be one the killed run finished).
    last, reference_last = (_h5_arrays(checkpoint_store.list_checkpoints(os.path.join(d, "checkpoints"))[-1][1])
                            for d in (output_dir, uninterrupted[0]))
    assert sorted(last) == sorted(reference_last) and any(name.startswith("optimizer") for name in last)
    for name in last:
        np.testing.assert_allclose(last[name], reference_last[name], atol=1e-6, err_msg=name)


def test_a_run_leaves_its_logs_tensorboard_events_and_prints_what_it_wrote(uninterrupted):
    output_dir, stdout = uninterrupted
    log = metrics_log.read_metrics_log(os.path.join(output_dir, resumable.TRAIN_LOG))
    assert [(r["epoch"], r["step"]) for r in log] == [(1, 10), (2, 20), (3, 30)]
    assert all({"loss", "accuracy", "dev_accuracy"} <= set(r) for r in log)
    with open(os.path.join(output_dir, "dev_metrics_per_epoch.json")) as f:
        history = json.load(f)
    assert [r["dev_accuracy"] for r in log] == [h["accuracy"] for h in history]
    events = os.listdir(os.path.join(output_dir, "logs", "train"))
    assert any(name.startswith("events.out.tfevents") for name in events)
    scalars = tensorboard_scalars(os.path.join(output_dir, "logs", "train"))  # TensorBoard's own reader
    tags = {(tag, step) for tag, values in scalars.items() for step in values}
    assert scalars["loss"] == {r["step"]: pytest.approx(r["loss"]) for r in log}
    assert {("loss", 10), ("loss", 30), ("dev_accuracy", 20), ("steps/loss", 4), ("steps/loss", 28)} <= tags
    with open(os.path.join(output_dir, "checkpoints", epoch_schedule.STATE_FILE)) as f:
        states = json.load(f)
    assert sorted(states) == ["30"] and states["30"]["epoch"] == 3  # --keep_checkpoint_max=1, the default
    assert [step for step, _ in checkpoint_store.list_checkpoints(os.path.join(output_dir, "checkpoints"))] == [30]
    for name in ("train_log.jsonl", "train_steps_log.jsonl", "logs/", "checkpoints/", "best.weights.h5", "eval_results.json", "model/"):
        assert f"  {name}" in stdout
    assert f"wrote to {output_dir}:" in stdout
    sizes = dict(re.findall(r"\n  (\S+) +(\d+\.\d kB|\d+ B|\d+\.\d MB)", stdout))
    assert sizes["best.weights.h5"] == file_io.size_text(os.path.getsize(os.path.join(output_dir, "best.weights.h5")))
    assert sizes["checkpoints/"] == file_io.size_text(file_io.disk_usage(os.path.join(output_dir, "checkpoints")))
    assert re.search(r"\n  in all +\d+\.\d (kB|MB)\n", stdout)


def test_best_weights_hold_the_model_without_optimizer_state(uninterrupted):
    output_dir = uninterrupted[0]
    path = os.path.join(output_dir, epoch_schedule.BEST_WEIGHTS)
    names = []
    with h5py.File(path) as f:
        f.visititems(lambda name, item: names.append(name) if isinstance(item, h5py.Dataset) else None)
        assert "optimizer" not in f
    weights = load_file(os.path.join(output_dir, "model", "model.safetensors"))
    num_values = sum(v.size for v in weights.values())
    with h5py.File(path) as f:
        assert sum(f[name].size for name in names) == num_values  # every model weight, nothing else
    checkpoint = checkpoint_store.list_checkpoints(os.path.join(output_dir, "checkpoints"))[-1][1]
    checkpoint_values = sum(v.size for v in _h5_arrays(checkpoint).values())
    assert checkpoint_values > 3 * num_values  # the resume checkpoints hold AdamW's two moments besides


def test_a_finished_run_started_again_trains_nothing_and_keeps_its_best_results(task_files, uninterrupted, tmp_path,
                                                                                 capsys):
    output_dir = str(tmp_path / "out")
    import shutil

    shutil.copytree(uninterrupted[0], output_dir)
    os.remove(os.path.join(output_dir, "eval_results.json"))
    log_before = open(os.path.join(output_dir, resumable.TRAIN_LOG)).read()
    load_run_glue().main(run_glue_flags(task_files, output_dir))
    out = capsys.readouterr().out
    assert "nothing left to train" in out
    assert open(os.path.join(output_dir, resumable.TRAIN_LOG)).read() == log_before
    with open(os.path.join(output_dir, "eval_results.json")) as f, \
            open(os.path.join(uninterrupted[0], "eval_results.json")) as g:
        assert json.load(f) == json.load(g)


def test_the_log_of_a_killed_run_loses_only_its_partial_line_and_the_repeated_epochs(tmp_path):
    path = str(tmp_path / resumable.TRAIN_LOG)
    with open(path, "w") as f:
        f.write('{"step": 10, "loss": 0.7}\n{"step": 20, "loss": 0.6}\n{"step": 30, "lo')  # killed mid-append
    assert metrics_log.read_metrics_log(path) == [{"step": 10, "loss": 0.7}, {"step": 20, "loss": 0.6}]
    metrics_log.truncate_metrics_log(path, 10)  # resumed from the checkpoint of step 10
    assert open(path).read() == '{"loss": 0.7, "step": 10}\n'
    metrics_log.truncate_metrics_log(path, 10)
    assert metrics_log.read_metrics_log(path) == [{"step": 10, "loss": 0.7}]


def _read_marker(path):
    with open(path) as f:
        epoch, batch = map(int, f.read().split())
    return epoch * 10 + batch + 1  # the optimizer step: 10 steps per epoch


def test_a_second_run_is_refused_while_one_runs_and_ctrl_c_stops_it_after_a_step_resumably(
        task_files, uninterrupted, tmp_path, capsys):
    output_dir = str(tmp_path / "out")
    marker = str(tmp_path / "step")
    argv = run_glue_flags(task_files, output_dir)
    proc = subprocess.Popen([PYTHON, "-c", STALLING_RUN, marker, "0.3", "0", RUN_GLUE, *argv], env=subprocess_env(),
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)

    def second_run_refused_at_step_13():
        if not os.path.exists(marker) or _read_marker(marker) < 13:
            return None
        # A second run on the same output_dir, while the first trains: refused in one line naming the first.
        with pytest.raises(SystemExit) as exit_info:
            load_run_glue().main(argv)
        assert exit_info.value.code == 2
        err = capsys.readouterr().err.strip()
        assert err.startswith(f"error: --output_dir: {output_dir} is in use by pid {proc.pid} on ") and "\n" not in err
        assert proc.poll() is None
        return _read_marker(marker)

    # Ctrl-C: the run stops after the step it is in, exit status 130, one line saying where it resumes.
    signalled_at, (_, stderr) = signal_when(proc, second_run_refused_at_step_13, signal.SIGINT)
    assert proc.returncode == 130, stderr[-3000:]
    line = stderr.strip().splitlines()[-1]
    match = re.fullmatch(r"stopped by SIGINT after step (\d+); the same command resumes from the checkpoint of "
                         r"epoch 1 \(step 10\): the (\d+) steps after it are trained again\.", line)
    assert match, line
    stopped = int(match.group(1))
    assert signalled_at <= stopped <= signalled_at + 1 and int(match.group(2)) == stopped - 10
    assert "Traceback" not in stderr
    checkpoint_dir = os.path.join(output_dir, checkpoint_store.CHECKPOINT_SUBDIR)
    assert [step for step, _ in checkpoint_store.list_checkpoints(checkpoint_dir)] == [10]

    load_run_glue().main(argv)  # the same command again: resumed, ends as the uninterrupted run
    assert "resuming from" in capsys.readouterr().out
    results, history, _, weights = _read(output_dir)
    reference_results, reference_history, _, reference_weights = _read(uninterrupted[0])
    assert results == reference_results and history == reference_history
    for name in weights:
        np.testing.assert_allclose(weights[name], reference_weights[name], atol=1e-6, err_msg=name)


def test_a_finished_run_refuses_other_training_settings_naming_each_and_writes_nothing(task_files, uninterrupted,
                                                                                      tmp_path, capsys):
    output_dir = str(tmp_path / "out")
    shutil.copytree(uninterrupted[0], output_dir)
    before = {name: open(os.path.join(output_dir, *name.split("/")), "rb").read()
              for name in ("model/config.json", "eval_results.json", resumable.TRAIN_LOG, "run_settings.json")}
    argv = run_glue_flags(task_files, output_dir)
    changed = {"--learning_rate=5e-3": "--learning_rate 0.02 -> 0.005",
               "--train_batch_size=2": "--train_batch_size 4 -> 2",
               "--max_seq_length=32": "--max_seq_length 16 -> 32"}
    for flag, named in changed.items():
        with pytest.raises(SystemExit) as exit_info:
            load_run_glue().main([*argv, flag])
        assert exit_info.value.code == 2
        err = capsys.readouterr().err.strip()
        assert err.startswith(f"error: --output_dir {output_dir}: its run has other settings: {named} (recorded in ")
        assert "\n" not in err and err.endswith("pass --overwrite_output_dir to start afresh"), err
    for name, content in before.items():
        with open(os.path.join(output_dir, *name.split("/")), "rb") as f:
            assert f.read() == content, name
    # Settings that do not change the weights may change: evaluation batch size, logging.
    load_run_glue().main([*argv, "--eval_batch_size=2", "--log_every_steps=0"])
    assert "nothing left to train" in capsys.readouterr().out


def test_overwrite_output_dir_trains_afresh_and_keeps_the_users_files(task_files, uninterrupted, tmp_path, capsys):
    output_dir = str(tmp_path / "out")
    shutil.copytree(uninterrupted[0], output_dir)
    with open(os.path.join(output_dir, "notes.txt"), "w") as f:
        f.write("mine")
    load_run_glue().main(run_glue_flags(task_files, output_dir, "--learning_rate=1e-2", "--num_train_epochs=1",
                                        "--overwrite_output_dir"))
    out = capsys.readouterr().out
    assert f"--overwrite_output_dir: removed " in out and "resuming" not in out
    with open(os.path.join(output_dir, "notes.txt")) as f:
        assert f.read() == "mine"
    checkpoint_dir = os.path.join(output_dir, checkpoint_store.CHECKPOINT_SUBDIR)
    assert [step for step, _ in checkpoint_store.list_checkpoints(checkpoint_dir)] == [10]
    assert [r["step"] for r in metrics_log.read_metrics_log(os.path.join(output_dir, resumable.TRAIN_LOG))] == [10]
    with open(os.path.join(output_dir, "run_settings.json")) as f:
        recorded = json.load(f)
    assert recorded["learning_rate"] == 1e-2 and recorded["num_train_epochs"] == 1.0


def test_a_rerun_on_data_with_another_label_set_names_the_change(tmp_path, capsys):
    """Your own data (no --task_name): a rerun whose training file adds a label is refused naming the labels
    the checkpoints were trained on and those the data now gives, before any checkpoint is read."""
    data_dir = str(tmp_path / "data")
    files = write_sst2_task(data_dir, num_train=8, num_dev=2, num_test=1)
    train = os.path.join(data_dir, "own.tsv")
    with open(os.path.join(data_dir, "train.tsv"), encoding="utf-8") as f:
        rows = f.read().replace("\t0\n", "\tneg\n").replace("\t1\n", "\tpos\n")
    with open(train, "w", encoding="utf-8") as f:
        f.write(rows)
    output_dir = str(tmp_path / "out")
    flags = [f for f in run_glue_flags(files, output_dir, "--num_train_epochs=1", f"--train_file={train}")
             if not f.startswith(("--task_name", "--data_dir", "--do_eval"))]
    load_run_glue().main(flags)
    with open(train, "a", encoding="utf-8") as f:
        f.write("good movie\tmeh\n")
    capsys.readouterr()
    with pytest.raises(SystemExit) as exit_info:
        load_run_glue().main(flags)
    assert exit_info.value.code == 2
    assert capsys.readouterr().err.strip().splitlines()[-1] == (
        f"error: {os.path.join(output_dir, 'checkpoints')}: its checkpoints were trained on the labels ['neg', 'pos']; "
        "the data now gives ['meh', 'neg', 'pos'] (added 'meh'): rerun on the same labels, use another --output_dir, "
        "or pass --overwrite_output_dir to start afresh")
