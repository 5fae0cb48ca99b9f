"""The paper's fine-tuning protocol (`runners.protocol`) on run_glue.py with a tiny model: 2 learning rates x
2 restarts of 1 epoch. The run selected is the first argmax of the per-run dev accuracy, protocol_results.json
lists the 4 runs with their learning rate, seed and dev metrics (equal to each run's eval_results.json), the
mean and std per learning rate are numpy's over the restarts, the selected run's files are at the top of
output_dir, restarts differ; a protocol killed after a run's training resumes at that run, and a finished
protocol started again trains nothing, while one with another batch size is refused naming it (no run's
completion record rewritten). Learning rates that print alike are two runs. Bad --learning_rate_grid /
--num_restarts values are one-line errors."""

import contextlib
import io
import itertools
import json
import os

import numpy as np
import pytest

from keras_bert_impl.runners import finetuning, protocol
from keras_bert_impl.tasks.glue import GlueConfig
from keras_bert_impl.utils.errors import UserInputError
from tests.finetuning_files import load_run_glue, run_glue_flags, write_sst2_task

LEARNING_RATES = (2e-2, 1e-3)
SEEDS = (7, 1007)  # --seed=7 and restart 1's 7 + 1000


def _argv(task_files, output_dir, *more):
    return run_glue_flags(task_files, output_dir, "--num_train_epochs=1", "--learning_rate_grid=2e-2,1e-3",
                          "--num_restarts=2", *more)


@pytest.fixture(scope="module")
def task_files(tmp_path_factory):
    return write_sst2_task(str(tmp_path_factory.mktemp("sst2")), num_train=12, num_dev=12, num_test=3)


@pytest.fixture(scope="module")
def protocol_run(task_files, tmp_path_factory):
    """Runs the 2 x 2 protocol three times with the same command: the first is killed after the 3rd run's
    `finetune` returned (before its completion record), the second finishes it, the third finds it done.
    Returns the output_dir and the run directories `finetune` was called for in each of the three."""
    output_dir = str(tmp_path_factory.mktemp("protocol"))
    real_finetune = finetuning.finetune
    calls = [[], [], []]
    phase = [0]

    def finetune(task, distribution, **options):
        calls[phase[0]].append(os.path.basename(task.config.output_dir))
        results = real_finetune(task, distribution, **options)
        if phase[0] == 0 and len(calls[0]) == 3:
            raise KeyboardInterrupt("killed after the run's training")
        return results

    recipe = load_run_glue()
    returned = []
    with pytest.MonkeyPatch.context() as patch, contextlib.redirect_stdout(io.StringIO()):
        patch.setattr(finetuning, "finetune", finetune)
        with pytest.raises(SystemExit) as killed:  # the recipe's one-line "stopped by SIGINT." and exit 130
            recipe.main(_argv(task_files, output_dir))
        assert killed.value.code == 130
        interrupted = {name: sorted(os.listdir(os.path.join(output_dir, "runs", name)))
                       for name in os.listdir(os.path.join(output_dir, "runs"))}
        top_after_kill = sorted(os.listdir(output_dir))
        for phase[0] in (1, 2):
            returned.append(recipe.main(_argv(task_files, output_dir)))
    return {"output_dir": output_dir, "calls": calls, "interrupted": interrupted, "top_after_kill": top_after_kill,
            "returned": returned}


def _load(*path):
    with open(os.path.join(*path), encoding="utf-8") as f:
        return json.load(f)


def test_protocol_selects_the_best_dev_run_and_reports_every_run_with_numpy_mean_and_std(protocol_run):
    output_dir = protocol_run["output_dir"]
    report = _load(output_dir, "protocol_results.json")
    names = [protocol.run_name(lr, seed) for lr, seed in itertools.product(LEARNING_RATES, SEEDS)]
    assert [(r["learning_rate"], r["seed"]) for r in report["runs"]] == list(itertools.product(LEARNING_RATES, SEEDS))
    assert [r["output_dir"] for r in report["runs"]] == [os.path.join("runs", name) for name in names]
    assert report["metric"] == "accuracy" and report["seeds"] == list(SEEDS)
    accuracies = []
    for run, name in zip(report["runs"], names):
        stored = _load(output_dir, "runs", name, "eval_results.json")
        assert run["dev"]["accuracy"] == stored["accuracy"] and run["dev"]["epoch"] == 1
        accuracies.append(stored["accuracy"])
    selected = int(np.argmax(accuracies))
    assert report["selected"]["index"] == selected and report["selected"]["output_dir"] == report["runs"][selected]["output_dir"]
    for row, lr in zip(report["per_learning_rate"], LEARNING_RATES):
        values = np.array(accuracies[:2] if lr == LEARNING_RATES[0] else accuracies[2:])
        assert row["learning_rate"] == lr and row["num_runs"] == 2
        np.testing.assert_allclose([row["mean"], row["std"], row["max"]], [values.mean(), values.std(), values.max()])
    assert report["selected_learning_rate"]["learning_rate"] == report["runs"][selected]["learning_rate"]
    # The selected run's files where a single run puts them; its training state stays in its directory.
    selected_dir = os.path.join(output_dir, report["selected"]["output_dir"])
    assert _load(output_dir, "eval_results.json") == _load(selected_dir, "eval_results.json")
    with open(os.path.join(output_dir, "model", "model.safetensors"), "rb") as top, \
            open(os.path.join(selected_dir, "model", "model.safetensors"), "rb") as run:
        assert top.read() == run.read()
    assert not os.path.exists(os.path.join(output_dir, "checkpoints"))
    assert protocol_run["returned"][0]["accuracy"] == accuracies[selected] == protocol_run["returned"][1]["accuracy"]
    table = open(os.path.join(output_dir, "protocol_results.md"), encoding="utf-8").read()
    assert table.count("| 0.02 | 7") + table.count("| 0.001 | 1007") == 2 and table.count("**yes**") == 1


def test_restarts_start_from_other_heads_and_shuffles(protocol_run):
    # Each run's first logged training loss: same data, so different values come from the seed (head
    # initialization, order of the batches) or the learning rate.
    output_dir = protocol_run["output_dir"]
    losses = []
    for lr, seed in itertools.product(LEARNING_RATES, SEEDS):
        with open(os.path.join(output_dir, "runs", protocol.run_name(lr, seed), "train_log.jsonl")) as f:
            losses.append(json.loads(f.readline())["loss"])
    assert len(set(losses)) == 4, losses


def test_a_killed_protocol_resumes_at_its_unfinished_run_and_a_finished_one_trains_nothing(protocol_run):
    names = [protocol.run_name(lr, seed) for lr, seed in itertools.product(LEARNING_RATES, SEEDS)]
    first, second, third = protocol_run["calls"]
    assert first == names[:3]
    # Killed after the 3rd run's files were written but before its completion record: not complete.
    interrupted = protocol_run["interrupted"]
    assert all("run_complete.json" in interrupted[name] for name in names[:2])
    assert "run_complete.json" not in interrupted[names[2]] and "eval_results.json" in interrupted[names[2]]
    assert "protocol_results.json" not in protocol_run["top_after_kill"]
    assert second == names[2:] and third == []


def test_bad_protocol_flags_are_one_line_errors_naming_the_flag(task_files, tmp_path, capsys):
    recipe = load_run_glue()
    for flag in ("--learning_rate_grid=5e-5,abc", "--learning_rate_grid=5e-5,5e-5", "--learning_rate_grid=-1",
                 "--num_restarts=0"):
        with pytest.raises(SystemExit) as exit:
            recipe.main(run_glue_flags(task_files, str(tmp_path / "bad"), flag))
        stderr = capsys.readouterr().err.strip()
        assert exit.value.code == 2 and len(stderr.splitlines()) == 1 and flag.split("=")[0] in stderr, stderr
    # Selecting on dev needs a dev set: refused after reading the files, before any training.
    argv = [a for a in run_glue_flags(task_files, str(tmp_path / "nodev"), "--num_restarts=2") if a != "--do_eval"]
    with pytest.raises(SystemExit) as exit:
        recipe.main(argv)
    stderr = capsys.readouterr().err.strip()
    assert exit.value.code == 2 and len(stderr.splitlines()) == 1 and "--num_restarts" in stderr, stderr
    # From Python: the config refuses them, naming the field.
    with pytest.raises(UserInputError, match="^GlueConfig.learning_rate_grid: expected None or distinct positive"):
        GlueConfig(task_name="sst2", output_dir=str(tmp_path), learning_rate_grid=(1e-5, "x"))
    with pytest.raises(UserInputError, match="^GlueConfig.learning_rate_grid: .*got '1e-5,2e-5'"):
        GlueConfig(task_name="sst2", output_dir=str(tmp_path), learning_rate_grid="1e-5,2e-5")
    with pytest.raises(UserInputError, match="^GlueConfig.num_restarts: expected a positive integer, got 0"):
        GlueConfig(task_name="sst2", output_dir=str(tmp_path), num_restarts=0)
    assert protocol.protocol_settings(GlueConfig(task_name="sst2", output_dir=str(tmp_path), seed=3,
                                                 learning_rate_grid=[1e-5, 2e-5], num_restarts=2)) == (
        (1e-5, 2e-5), (3, 1003))
    assert protocol.protocol_settings(GlueConfig(task_name="sst2", output_dir=str(tmp_path))) is None


def test_a_finished_protocol_rerun_with_another_batch_size_is_refused_and_rewrites_no_record(task_files,
                                                                                             protocol_run, capsys):
    output_dir = protocol_run["output_dir"]
    records = {}
    for name in os.listdir(os.path.join(output_dir, "runs")):
        with open(os.path.join(output_dir, "runs", name, "run_complete.json"), "rb") as f:
            records[name] = f.read()
    with pytest.raises(SystemExit) as exit:
        load_run_glue().main(_argv(task_files, output_dir, "--train_batch_size=2"))
    stderr = capsys.readouterr().err.strip()
    assert exit.value.code == 2 and len(stderr.splitlines()) == 1, stderr
    assert stderr.startswith(f"error: --output_dir {output_dir}: its run has other settings: --train_batch_size 4 -> 2")
    for name, record in records.items():
        with open(os.path.join(output_dir, "runs", name, "run_complete.json"), "rb") as f:
            assert f.read() == record, name
    assert os.path.isfile(os.path.join(output_dir, "protocol_results.json"))


def test_learning_rates_that_print_alike_are_two_runs(task_files, tmp_path):
    output_dir = str(tmp_path / "close")
    with contextlib.redirect_stdout(io.StringIO()):
        load_run_glue().main(run_glue_flags(task_files, output_dir, "--num_train_epochs=1",
                                            "--learning_rate_grid=1.0000001e-4,1.0000002e-4"))
    report = _load(output_dir, "protocol_results.json")
    assert [run["learning_rate"] for run in report["runs"]] == [1.0000001e-4, 1.0000002e-4]
    assert [run["output_dir"] for run in report["runs"]] == [os.path.join("runs", "lr=0.00010000001,seed=7"),
                                                            os.path.join("runs", "lr=0.00010000002,seed=7")]
    for run in report["runs"]:  # each trained in its own directory, at its own learning rate
        assert _load(output_dir, run["output_dir"], "run_settings.json")["learning_rate"] == run["learning_rate"]
        assert _load(output_dir, run["output_dir"], "eval_results.json")["accuracy"] == run["dev"]["accuracy"]
