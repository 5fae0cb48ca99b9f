"""A user's mistake in a fine-tuning command is one line on stderr (`error: ...`) and exit status 2, without a
traceback, before any checkpoint is loaded: a missing data file, a malformed line, a bad flag value, an
abbreviated flag name, a missing --init_checkpoint / --vocab_file path; `--debug` raises it with its traceback;
the run leaves no output folder it created.
An evaluation-only run of a checkpoint without a classifier head warns once that the head is untrained."""

import json
import os
import shutil

import pytest

from keras_bert_impl.config import BertConfig
from keras_bert_impl.models.backbone import BertBackbone
from keras_bert_impl.utils.errors import UserInputError
from tests.finetuning_files import load_run_glue, run_glue_flags, write_sst2_task


@pytest.fixture(scope="module")
def run_glue():
    return load_run_glue()


def _one_line_error(run_glue, argv, capsys):
    """Runs the recipe expecting a user error; returns its one stderr line."""
    with pytest.raises(SystemExit) as exit_info:
        run_glue.main(argv)
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: "), err
    assert "Traceback" not in err
    return lines[0]


def test_bad_flags_are_one_line_errors(run_glue, tmp_path, capsys):
    flags = run_glue_flags(write_sst2_task(str(tmp_path / "data")), str(tmp_path / "out"))
    cases = {
        "--num_train_epoch=7": "unrecognized arguments: --num_train_epoch=7",  # abbreviations are refused
        "--max_seq_length=0": "--max_seq_length: expected a positive integer, got '0'",
        "--train_batch_size=0": "--train_batch_size: expected a positive integer, got '0'",
        "--num_train_epochs=-1": "--num_train_epochs: expected a positive number, got '-1'",
        "--learning_rate=0": "--learning_rate: expected a positive number, got '0'",
        "--warmup_proportion=1.5": "--warmup_proportion: expected a number in [0, 1], got '1.5'",
        "--do_train=maybe": "--do_train: not a boolean: 'maybe'",
    }
    for flag, message in cases.items():
        assert message in _one_line_error(run_glue, [*flags, flag], capsys), flag
    assert not os.path.exists(tmp_path / "out")


def test_missing_model_files_are_named_by_their_flag(run_glue, tmp_path, capsys):
    data = write_sst2_task(str(tmp_path / "data"))
    flags = run_glue_flags(data, str(tmp_path / "out"))
    line = _one_line_error(run_glue, [*flags, "--init_checkpoint=/tmp/nope"], capsys)
    assert line.startswith("error: --init_checkpoint: no checkpoint at /tmp/nope (expected a directory with config.json")
    empty = tmp_path / "empty"
    empty.mkdir()
    assert f"--init_checkpoint: {empty} has no config.json" in _one_line_error(
        run_glue, [*flags, f"--init_checkpoint={empty}"], capsys)
    line = _one_line_error(run_glue, [*flags, "--vocab_file=/tmp/nope/vocab.txt"], capsys)
    assert line == "error: --vocab_file: no file at /tmp/nope/vocab.txt"
    line = _one_line_error(run_glue, [*flags, "--bert_config_file=/tmp/nope.json"], capsys)
    assert line == "error: --bert_config_file: no file at /tmp/nope.json"
    without_model = [f for f in flags if not f.startswith("--bert_config_file")]
    assert "Either --init_checkpoint or --bert_config_file is required" in _one_line_error(
        run_glue, without_model, capsys)


def test_data_errors_come_before_the_checkpoint_is_read(run_glue, tmp_path, capsys):
    data_dir = tmp_path / "data"
    data = write_sst2_task(str(data_dir))
    # A checkpoint directory whose weights cannot be read: the data error must be reported first.
    checkpoint = tmp_path / "checkpoint"
    checkpoint.mkdir()
    shutil.copy(data_dir / "bert_config.json", checkpoint / "config.json")
    shutil.copy(data_dir / "vocab.txt", checkpoint / "vocab.txt")
    (checkpoint / "model.safetensors").write_bytes(b"not safetensors")
    flags = [f for f in run_glue_flags(data, str(tmp_path / "out")) if not f.startswith("--bert_config_file")]
    flags.append(f"--init_checkpoint={checkpoint}")

    with open(data_dir / "train.tsv", "a", encoding="utf-8") as f:
        f.write("a line without its label\n")
    line = _one_line_error(run_glue, flags, capsys)
    assert str(data_dir / "train.tsv") in line and ":42" in line  # the header is line 1, 40 rows follow

    os.remove(data_dir / "train.tsv")
    line = _one_line_error(run_glue, flags, capsys)
    assert "train.tsv" in line

    with pytest.raises(UserInputError, match="train.tsv"):  # --debug: the exception, with its traceback
        run_glue.main([*flags, "--debug"])


def test_a_run_refused_for_its_data_leaves_no_output_folder_it_created(run_glue, tmp_path, capsys):
    data_dir = tmp_path / "data"
    data = write_sst2_task(str(data_dir))
    with open(data_dir / "train.tsv", "a", encoding="utf-8") as f:
        f.write("a line without its label\n")
    new = tmp_path / "runs" / "new"
    assert "train.tsv:42" in _one_line_error(run_glue, run_glue_flags(data, str(new)), capsys)
    assert not os.path.exists(tmp_path / "runs")  # neither the folder nor the parent the run created
    existing = tmp_path / "mine"
    existing.mkdir()
    assert "train.tsv:42" in _one_line_error(run_glue, run_glue_flags(data, str(existing)), capsys)
    assert existing.is_dir()  # a folder the user made stays


def _plain_backbone_checkpoint(directory, data_dir):
    config = BertConfig.from_json_file(os.path.join(data_dir, "bert_config.json"))
    BertBackbone(config).save_pretrained(directory)
    shutil.copy(os.path.join(data_dir, "vocab.txt"), os.path.join(directory, "vocab.txt"))


def test_evaluating_a_checkpoint_without_a_classifier_head_warns_once(run_glue, tmp_path, capsys):
    data_dir = str(tmp_path / "data")
    data = write_sst2_task(data_dir)
    checkpoint = str(tmp_path / "bert")
    _plain_backbone_checkpoint(checkpoint, data_dir)
    argv = ["--task_name=sst2", f"--data_dir={data_dir}", f"--init_checkpoint={checkpoint}",
            f"--output_dir={tmp_path / 'eval'}", "--do_eval", "--max_seq_length=16", "--verbose=0"]
    results = run_glue.main(argv)
    err = capsys.readouterr().err
    warnings = [line for line in err.splitlines() if line.startswith("warning:")]
    assert len(warnings) == 1 and "no trained classifier head" in warnings[0] and checkpoint in warnings[0]
    assert 0 <= results["accuracy"] <= 1

    # A fine-tuned model directory has its head: no warning.
    trained = str(tmp_path / "trained")
    run_glue.main([*run_glue_flags(data, trained), "--num_train_epochs=1"])
    capsys.readouterr()
    argv = [a for a in argv if not a.startswith("--init_checkpoint")] + [f"--init_checkpoint={trained}/model"]
    run_glue.main(argv)
    assert "warning:" not in capsys.readouterr().err
    with open(os.path.join(trained, "eval_results.json")) as f:
        assert json.load(f)["epoch"] == 1


def test_help_shows_every_default_and_the_debug_flag(run_glue, capsys):
    with pytest.raises(SystemExit) as exit_info:
        run_glue.main(["--help"])
    assert exit_info.value.code == 0
    out = " ".join(capsys.readouterr().out.split())
    for text in ("--train_batch_size TRAIN_BATCH_SIZE Examples per training batch. (default: 32)",
                 "--learning_rate LEARNING_RATE Peak learning rate of AdamW. (default: 5e-05)",
                 "--keep_checkpoint_max KEEP_CHECKPOINT_MAX", "--debug Show the full traceback"):
        assert text in out, text


def test_texts_longer_than_max_seq_length_are_said_once_per_split(run_glue, tmp_path, capsys):
    data_dir = tmp_path / "data"
    data = write_sst2_task(str(data_dir))
    with pytest.warns(UserWarning) as caught:
        run_glue.main(run_glue_flags(data, str(tmp_path / "out"), "--num_train_epochs=1", "--max_seq_length=5"))
    said = [str(w.message) for w in caught if "--max_seq_length" in str(w.message)]

    def longer(name):  # every word is one token: [CLS] + 3 words + [SEP] fit in 5
        rows = (data_dir / name).read_text(encoding="utf-8").splitlines()[1:]
        return sum(len(row.split("\t")[0].split()) > 3 for row in rows), len(rows)

    assert said == [f"the {split} set: {cut} of {total} examples are longer than --max_seq_length=5 and "
                    "are cut to it, as the original cuts them (--long_input=mean or max reads all of a text)."
                    for split, (cut, total) in (("train", longer("train.tsv")), ("dev", longer("dev.tsv")))]
