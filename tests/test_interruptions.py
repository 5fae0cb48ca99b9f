"""A signal outside training ends a recipe with one line and 128 + its number, its temporary files removed:
SIGTERM or Ctrl-C (SIGINT) while create_pretraining_data.py writes its TFRecords leaves no `.tmp` file and
no output; Ctrl-C during an evaluation or a prediction prints one line, no traceback, and exits 130."""

import os
import random
import signal
import subprocess
import sys

import pytest

from tests.finetuning_files import REPO, signal_when, subprocess_env, write_sst2_task


def _corpus(path, documents=3000, seed=0):
    """A corpus of `documents` documents of 6-12 sentences over a 40-word vocabulary; returns the vocab file."""
    rng = random.Random(seed)
    words = [f"w{i}" for i in range(40)]
    with open(path, "w", encoding="utf-8") as f:
        for _ in range(documents):
            for _ in range(rng.randint(6, 12)):
                f.write(" ".join(rng.choice(words) for _ in range(rng.randint(5, 15))) + " .\n")
            f.write("\n")
    vocab = os.path.join(os.path.dirname(path), "vocab.txt")
    with open(vocab, "w", encoding="utf-8") as f:
        f.write("\n".join(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", ".", *words]) + "\n")
    return vocab


def _user_env():
    """A recipe's environment as a user's shell gives it: TF_CPP_MIN_LOG_LEVEL unset (the recipe filters those lines)."""
    return {k: v for k, v in subprocess_env().items() if k != "TF_CPP_MIN_LOG_LEVEL"}


def _last_lines(stderr):
    return [line for line in stderr.splitlines() if line.strip()]


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_a_signal_while_pretraining_data_is_written_is_one_line_and_leaves_no_temporary_file(tmp_path, signum):
    corpus = tmp_path / "corpus.txt"
    vocab = _corpus(str(corpus))
    output = tmp_path / "out" / "train.tfrecord"
    command = [sys.executable, os.path.join(REPO, "recipes", "create_pretraining_data.py"), f"--input_file={corpus}",
               f"--output_file={output}", f"--vocab_file={vocab}", "--max_seq_length=64", "--dupe_factor=50",
               "--max_predictions_per_seq=10", "--progress_every=1000"]
    process = subprocess.Popen(command, env=_user_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               text=True)
    tmp_file = f"{output}.tmp"
    _, (_, stderr) = signal_when(process, lambda: os.path.exists(tmp_file) and os.path.getsize(tmp_file) > 100_000,
                                 signum)
    assert process.returncode == 128 + signum, stderr[-2000:]
    assert "Traceback" not in stderr, stderr[-2000:]
    assert _last_lines(stderr)[-1] == f"stopped by {signal.Signals(signum).name}."
    assert os.listdir(output.parent) == []  # neither the 9 MB .tmp file nor a partial output


@pytest.mark.parametrize("do_flag", ["--do_eval", "--do_predict"])
def test_ctrl_c_during_evaluation_or_prediction_is_one_line_and_exit_130(tmp_path, do_flag):
    data_dir = str(tmp_path / "data")
    data = write_sst2_task(data_dir, num_train=4, num_dev=40000, num_test=40000)
    command = [sys.executable, os.path.join(REPO, "recipes", "run_glue.py"), "--task_name=sst2", *data, do_flag,
               f"--output_dir={tmp_path / 'out'}", "--max_seq_length=16", "--eval_batch_size=2",
               "--predict_batch_size=2", "--verbose=0"]
    process = subprocess.Popen(command, env=_user_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               text=True)
    started = []

    def evaluating():  # the model is built once the [UNK] report is printed; the run then scores 40,000 examples
        line = process.stdout.readline()
        started.append(line)
        return "[UNK] tokens" in line

    _, (_, stderr) = signal_when(process, evaluating, signal.SIGINT)
    assert process.returncode == 130, stderr[-2000:]
    assert "Traceback" not in stderr, stderr[-2000:]
    assert _last_lines(stderr) == ["stopped by SIGINT."], stderr[-2000:]
