"""A run's output directory (`training.run_directory`): one writer at a time (a second process is refused,
naming the holder, and the lock of a dead process is taken over), the settings that define the run recorded
and compared (paths as absolute paths), --overwrite_output_dir removing only what a run wrote, and the
directory's errors (a file, read-only, no space left) as one line naming the path, with exit status 2. An
out-of-memory error during fit is one line naming the parameter count, batch size and sequence length."""

import errno
import json
import os
import signal
import subprocess
import sys
import time

import keras
import pytest

from keras_bert_impl.training import run_directory
from keras_bert_impl.training.out_of_memory import explain_out_of_memory
from keras_bert_impl.utils.errors import UserInputError
from tests.finetuning_files import load_run_glue, run_glue_flags, subprocess_env, write_sst2_task

# Holds the lock of a directory until killed; says so by creating a marker file.
HOLDER = """
import sys, time
from keras_bert_impl.training.run_directory import RunLock
with RunLock(sys.argv[1]):
    open(sys.argv[2], "w").close()
    time.sleep(600)
"""


def _one_error_line(capsys, code=2):
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: ") and "Traceback" not in err, err
    return lines[0]


def _wait_for(path, process, seconds=120):
    deadline = time.time() + seconds
    while not os.path.exists(path):
        assert process.poll() is None, process.stderr.read()
        assert time.time() < deadline, f"no {path} within {seconds} s"
        time.sleep(0.02)


def test_a_second_process_is_refused_naming_the_holder_and_a_dead_holders_lock_is_taken_over(tmp_path):
    directory, marker = str(tmp_path / "run"), str(tmp_path / "holding")
    os.makedirs(directory)
    holder = subprocess.Popen([sys.executable, "-c", HOLDER, directory, marker], env=subprocess_env(),
                              stderr=subprocess.PIPE, text=True)
    try:
        _wait_for(marker, holder)
        with pytest.raises(UserInputError) as refused, run_directory.RunLock(directory):
            pass
        message = str(refused.value)
        assert message.startswith(f"--output_dir: {directory} is in use by pid {holder.pid} on ")
        assert "\n" not in message and message.endswith("wait for it to end, or use another --output_dir")
    finally:
        holder.send_signal(signal.SIGKILL)  # a holder that dies without cleaning up
        holder.wait()
        holder.stderr.close()
    with run_directory.RunLock(directory):  # the kernel released the dead process's lock
        with open(os.path.join(directory, run_directory.LOCK_FILE)) as f:
            assert f.read().startswith(f"pid {os.getpid()} on ")


def test_differing_settings_are_refused_naming_each_and_paths_compare_as_absolute(tmp_path, monkeypatch):
    directory = str(tmp_path / "run")
    os.makedirs(os.path.join(directory, "data"))
    monkeypatch.chdir(directory)
    settings = {"learning_rate": 1e-4, "train_batch_size": 16, "data_dir": "data", "task_name": "sst2"}
    run_directory.record_run_settings(directory, settings)
    with open(os.path.join(directory, run_directory.SETTINGS_FILE)) as f:
        assert json.load(f)["data_dir"] == os.path.join(directory, "data")
    # The same files named from another working directory are the same setting.
    monkeypatch.chdir(tmp_path)
    run_directory.bind_run_settings(directory, dict(settings, data_dir=os.path.join("run", "data")), bound=True)
    changed = dict(settings, learning_rate=1.0000001e-4, train_batch_size=4, data_dir=os.path.join("run", "data"))
    with pytest.raises(UserInputError) as refused:
        run_directory.bind_run_settings(directory, changed, bound=True)
    assert str(refused.value) == (
        f"--output_dir {directory}: its run has other settings: --learning_rate 0.0001 -> 0.00010000001, "
        f"--train_batch_size 16 -> 4 (recorded in {os.path.join(directory, 'run_settings.json')}); rerun with the "
        "recorded values, use another --output_dir, or pass --overwrite_output_dir to start afresh")
    run_directory.bind_run_settings(directory, changed, bound=False)  # nothing trained: the new settings go


def test_overwrite_removes_what_a_run_wrote_and_nothing_else(tmp_path):
    directory = tmp_path / "run"
    (directory / "checkpoints").mkdir(parents=True)
    (directory / "checkpoints" / "ckpt-00000010.weights.h5").write_bytes(b"w")
    for name in ("train_log.jsonl", "run_settings.json", "notes.txt", "eval_results.json"):
        (directory / name).write_text("x")
    removed = run_directory.remove_run_outputs(str(directory), ["checkpoints", "train_log.jsonl", "eval_results.json",
                                                                "model"])
    assert removed == ["checkpoints", "train_log.jsonl", "eval_results.json", "run_settings.json"]
    assert sorted(os.listdir(directory)) == ["notes.txt"]


def test_overwrite_refuses_to_remove_a_file_the_run_reads_and_removes_nothing(tmp_path):
    directory = tmp_path / "run"
    (directory / "model").mkdir(parents=True)
    (directory / "model" / "vocab.txt").write_text("[PAD]\n")
    (directory / "train_log.jsonl").write_text("x")
    (directory / "train.tsv").write_text("x")  # not a run output: never removed, so it may be read
    settings = {"vocab_file": str(directory / "model" / "vocab.txt"), "train_file": str(directory / "train.tsv"),
                "learning_rate": 1e-4}
    with pytest.raises(UserInputError) as refused:
        run_directory.remove_run_outputs(str(directory), ["train_log.jsonl", "model"], settings)
    assert str(refused.value) == (
        f"--overwrite_output_dir would remove {directory / 'model'}, which holds --vocab_file "
        f"{directory / 'model' / 'vocab.txt'}: copy it out of --output_dir {directory} first, or use another "
        "--output_dir")
    assert sorted(os.listdir(directory)) == ["model", "train.tsv", "train_log.jsonl"]


# --------------------------------------------------------------------------------- the recipes' errors
@pytest.fixture(scope="module")
def task_files(tmp_path_factory):
    return write_sst2_task(str(tmp_path_factory.mktemp("sst2")), num_train=8, num_dev=4, num_test=2)


def test_continuing_in_place_with_overwrite_keeps_the_model_it_starts_from(task_files, tmp_path, capsys):
    recipe = load_run_glue()
    run = str(tmp_path / "run")
    recipe.main(run_glue_flags(task_files, run, "--num_train_epochs=1"))
    capsys.readouterr()
    weights = os.path.join(run, "model", "model.safetensors")
    before = open(weights, "rb").read()
    flags = [f for f in run_glue_flags(task_files, run, "--num_train_epochs=1", "--overwrite_output_dir")
             if not f.startswith("--bert_config_file")]
    with pytest.raises(SystemExit) as exit_info:
        recipe.main([*flags, f"--init_checkpoint={run}/model"])
    assert exit_info.value.code == 2
    assert _one_error_line(capsys) == (
        f"error: --overwrite_output_dir would remove {os.path.join(run, 'model')}, which holds --init_checkpoint "
        f"{run}/model: copy it out of --output_dir {run} first, or use another --output_dir")
    assert open(weights, "rb").read() == before and os.path.isdir(os.path.join(run, "checkpoints"))


def test_an_output_dir_that_is_a_file_or_read_only_is_one_line_naming_it(task_files, tmp_path, capsys, monkeypatch):
    recipe = load_run_glue()
    a_file = tmp_path / "a_file"
    a_file.write_text("x")
    for output_dir in (a_file, a_file / "below"):
        with pytest.raises(SystemExit) as exit_info:
            recipe.main(run_glue_flags(task_files, str(output_dir)))
        assert exit_info.value.code == 2
        line = _one_error_line(capsys)
        assert line.startswith(f"error: --output_dir: ") and str(output_dir) in line, line
    assert a_file.read_text() == "x"

    read_only = tmp_path / "read_only"
    read_only.mkdir()
    read_only.chmod(0o555)
    if os.access(read_only, os.W_OK):  # root writes anywhere: report what a read-only mount reports
        real_access = os.access
        monkeypatch.setattr(os, "access", lambda path, mode, **kw: False if os.fspath(path) == str(read_only)
                            else real_access(path, mode, **kw))
    with pytest.raises(SystemExit) as exit_info:
        recipe.main(run_glue_flags(task_files, str(read_only)))
    assert exit_info.value.code == 2
    assert _one_error_line(capsys) == (f"error: --output_dir: cannot write to {read_only} (a read-only file system or "
                                       "no permission)")
    read_only.chmod(0o755)


def test_no_space_left_and_out_of_memory_are_one_line_naming_the_file_or_the_sizes(task_files, tmp_path, capsys,
                                                                                    monkeypatch):
    recipe = load_run_glue()

    def full_disk(fd):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    with monkeypatch.context() as patch:
        patch.setattr(os, "fsync", full_disk)
        with pytest.raises(SystemExit) as exit_info:
            recipe.main(run_glue_flags(task_files, str(tmp_path / "full")))
    assert exit_info.value.code == 2
    # The first file a training run writes is its settings record.
    assert _one_error_line(capsys) == (f"error: {os.strerror(errno.ENOSPC)}: "
                                       f"{tmp_path / 'full' / run_directory.SETTINGS_FILE}")

    def out_of_memory(self, *args, **kwargs):
        raise MemoryError("failed to allocate 12 GiB")

    with monkeypatch.context() as patch:
        patch.setattr(keras.Model, "fit", out_of_memory)
        with pytest.raises(SystemExit) as exit_info:
            recipe.main(run_glue_flags(task_files, str(tmp_path / "oom")))
    assert exit_info.value.code == 2
    line = _one_error_line(capsys)
    # The tiny classifier of tests/finetuning_files.py: 1 layer, hidden 16, 17 words, 2 classes.
    assert line.startswith("error: out of memory training a model of ") and " parameters on batches of 4 x 16 " \
        "tokens (MemoryError: failed to allocate 12 GiB): lower --train_batch_size or --max_seq_length" in line, line

    model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(2)])
    with pytest.raises(ValueError, match="^shapes"):  # other errors go through unchanged
        with explain_out_of_memory(model, 8, 128):
            raise ValueError("shapes do not match")
