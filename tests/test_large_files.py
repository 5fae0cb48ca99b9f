"""Large training files stream: `data.streaming.StreamedExamples` reads a GLUE TSV or JSON-lines
training file chunk by chunk, holding one window of examples whatever the file's size (the smoke version of
benchmarks/large_file_memory.py); an epoch has the batches of a set in memory (count, every example once,
dynamic padding) in a seeded order that a resumed run sees again; run_glue.py trains on a streamed file on
every backend, and a mistake deep in the file stops the run before training, naming the file and line; a file
changed during training stops the run in one line naming it."""

import contextlib
import importlib.util
import io
import json
import os

import keras
import numpy as np
import pytest

from keras_bert_impl.data import batching, glue_data, streaming
from keras_bert_impl.runners import finetuning
from keras_bert_impl.tasks.glue import GlueConfig
from keras_bert_impl.tokenizers.bert_tokenizer import BertTokenizer
from keras_bert_impl.utils.errors import UserInputError
from tests.finetuning_files import load_run_glue, run_glue_flags, write_sst2_task

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
WORDS = ["good", "bad", "the", "movie", "was", "plot", "very", "not"]
TOKENIZER = BertTokenizer(["[PAD]", "[UNK]", "[CLS]", "[SEP]", *WORDS])


def _benchmark():
    path = os.path.join(REPO, "benchmarks", "large_file_memory.py")
    spec = importlib.util.spec_from_file_location("large_file_memory", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _write_tsv(path, n, bad_line=None):
    """An SST-2 train.tsv of `n` examples, example i of (i % 9) + 1 words and label i % 2, its number i in its
    first word's place (so every example is told apart by its token count and label)."""
    rng = np.random.RandomState(0)
    with open(path, "w", encoding="utf-8") as f:
        f.write("sentence\tlabel\n")
        for i in range(n):
            label = "2" if bad_line == i + 2 else str(i % 2)
            f.write(" ".join(rng.choice(WORDS, size=i % 9 + 1)) + f"\t{label}\n")
    return path


def _stream(path, header_lines=1):
    _, parse = glue_data.glue_line_parser("sst2", path, "train")

    def featurize(examples):
        return glue_data.encode_examples(TOKENIZER, examples, 16), glue_data.label_ids("sst2", examples)

    return streaming.StreamedExamples(path, parse, featurize, header_lines, chunk_lines=16)


def test_smoke_benchmark_holds_one_window_whatever_the_file_size(tmp_path):
    small, large = _benchmark().main(["--smoke", f"--work_dir={tmp_path}"])
    assert (small["examples"], large["examples"]) == (1000, 10000)
    assert (small["batches"], large["batches"]) == (125, 1250)
    # A window is 4 batches of 8 examples; a chunk 64 lines: what is held at once does not grow with the file.
    assert small["max_held"] <= 32 + 64 and large["max_held"] <= 32 + 64
    assert large["traced_peak_bytes"] < 2 * small["traced_peak_bytes"]


def test_an_epoch_has_every_example_once_in_padded_length_buckets(tmp_path):
    stream = _stream(_write_tsv(tmp_path / "train.tsv", 203))
    batches = list(stream.epoch_batches(batch_size=8, seed=3, bucket_window=2, pad_to_multiple_of=4))
    assert stream.num_examples == 203 and len(batches) == batching.num_batches(203, 8) == 26
    lengths = sorted(int(n) for x, _ in batches for n in x["padding_mask"].sum(axis=1))
    assert lengths == sorted(i % 9 + 3 for i in range(203))  # [CLS] words [SEP], each example once
    assert all(x["token_ids"].shape[1] % 4 == 0 and x["token_ids"].shape[1] - x["padding_mask"].sum(1).max() < 4
               for x, _ in batches)
    assert sum(int(y.sum()) for _, y in batches) == 101
    assert stream.max_held <= 16 + 16
    # Another seed, another order; the same seed, the same batches.
    again = list(stream.epoch_batches(batch_size=8, seed=3, bucket_window=2, pad_to_multiple_of=4))
    other = list(stream.epoch_batches(batch_size=8, seed=4, bucket_window=2, pad_to_multiple_of=4))
    assert all(np.array_equal(a[0]["token_ids"], b[0]["token_ids"]) for a, b in zip(batches, again))
    assert not all(np.array_equal(a[1], b[1]) and a[1].shape == b[1].shape for a, b in zip(batches, other))
    whole = list(stream.epoch_batches(batch_size=8, seed=3, bucket_window=2, drop_remainder=True))
    assert len(whole) == 25 and all(len(y) == 8 for _, y in whole)


def _epoch(data, epoch_index):
    """The (x, y) batches of one epoch of a PyDataset (after `epoch_index` epochs) or a tf.data.Dataset."""
    if isinstance(data, keras.utils.PyDataset):
        for _ in range(epoch_index):
            data.on_epoch_end()
        return [data[i] for i in range(len(data))]
    iterator = iter(data.repeat())
    count = int(data.cardinality())
    batches = [next(iterator) for _ in range(count * (epoch_index + 1))][count * epoch_index:]
    return [({k: np.asarray(v) for k, v in x.items()}, np.asarray(y)) for x, y in batches]


def test_a_resumed_run_sees_the_batches_of_the_uninterrupted_one(tmp_path):
    """`training_batches` of a stream (a tf.data.Dataset on TensorFlow, a PyDataset elsewhere): epoch 1 of a run
    started at epoch 1 is epoch 1 of a run started at 0, and not epoch 0."""
    stream = _stream(_write_tsv(tmp_path / "train.tsv", 150))
    config = GlueConfig(task_name="sst2", output_dir=str(tmp_path), train_batch_size=8, max_seq_length=16, seed=5)
    uninterrupted = _epoch(finetuning.training_batches(stream, None, config), 1)
    resumed = _epoch(finetuning.training_batches(stream, None, config, initial_epoch=1), 0)
    first = _epoch(finetuning.training_batches(stream, None, config), 0)
    assert len(uninterrupted) == len(resumed) == 19
    for (x, y), (x2, y2) in zip(uninterrupted, resumed):
        np.testing.assert_array_equal(x["token_ids"], x2["token_ids"])
        np.testing.assert_array_equal(y, y2)
    assert any(not np.array_equal(a[0]["token_ids"], b[0]["token_ids"]) for a, b in zip(first, uninterrupted))


def test_a_streamed_batch_asked_for_again_is_read_again():
    """Keras may read a PyDataset's first batch to build, then the epoch from its start."""
    batches = streaming.StreamedBatches.__new__(streaming.StreamedBatches)
    batches.stream = type("Stream", (), {"epoch_batches": lambda self, *a, **k: iter(range(5))})()
    batches.batch_size, batches.seed, batches.epoch, batches.options, batches.process_share = 8, 0, 0, {}, None
    batches._restart()
    assert [batches[0], batches[1], batches[1], batches[0], batches[3]] == [0, 1, 1, 0, 3]


def test_run_glue_trains_on_a_streamed_training_file(tmp_path):
    flags = write_sst2_task(str(tmp_path / "data"), num_train=90)
    output_dir = str(tmp_path / "out")
    with contextlib.redirect_stdout(io.StringIO()) as stdout:
        results = load_run_glue().main(run_glue_flags(flags, output_dir, "--stream_train_data"))
    printed = stdout.getvalue()
    assert "sst2: 90 training examples streamed from" in printed and "3 epochs, 69 steps" in printed
    with open(os.path.join(output_dir, "train_log.jsonl")) as f:
        assert [json.loads(line)["step"] for line in f] == [23, 46, 69]
    assert 0 <= results["accuracy"] <= 1 and os.path.isfile(os.path.join(output_dir, "model", "model.safetensors"))


def test_a_mistake_deep_in_a_streamed_file_stops_the_run_before_training(tmp_path, capsys):
    flags = write_sst2_task(str(tmp_path / "data"))
    _write_tsv(tmp_path / "data" / "train.tsv", 500, bad_line=431)
    with pytest.raises(SystemExit) as exit_info:
        load_run_glue().main(run_glue_flags(flags, str(tmp_path / "out"), "--stream_train_data"))
    err = capsys.readouterr().err
    assert exit_info.value.code == 2 and "train.tsv:431: unknown label '2' for sst2" in err
    assert not os.path.exists(tmp_path / "out" / "checkpoints")


def test_only_line_files_stream_and_small_files_stay_in_memory(tmp_path, monkeypatch):
    from keras_bert_impl.tasks.glue import GlueTask

    csv_path = tmp_path / "train.csv"
    csv_path.write_text("sentence,label\ngood movie,1\n", encoding="utf-8")
    task = GlueTask(GlueConfig(task_name="sst2", output_dir=str(tmp_path), train_file=str(csv_path),
                               stream_train_data=True))
    task.tokenizer = TOKENIZER
    with pytest.raises(UserInputError, match="--stream_train_data: .*train.csv cannot be streamed; expected a local "
                                             "TSV or JSON-lines file"):
        task.streamed_split("train", str(csv_path))
    jsonl = tmp_path / "train.jsonl"
    jsonl.write_text("".join(json.dumps({"sentence": "good movie", "label": i % 2}) + "\n" for i in range(40)))
    auto = GlueTask(GlueConfig(task_name="sst2", output_dir=str(tmp_path), train_file=str(jsonl)))
    auto.tokenizer = TOKENIZER
    assert auto.streamed_split("train", str(jsonl)) is None  # 1 KB: read in memory
    monkeypatch.setattr(streaming, "STREAMING_MIN_BYTES", 1000)
    stream = auto.streamed_split("train", str(jsonl))
    assert stream.num_examples == 40 and [e.label for e in stream.examples(3)] == ["0", "1", "0"]


@pytest.mark.parametrize("change", ["append", "truncate"])
def test_a_streamed_file_changed_during_training_stops_the_run_in_one_line_naming_it(tmp_path, change):
    """Lines appended to (or cut from) the streamed file after the first epoch: exit status 2, one line naming
    the file, no traceback (on TensorFlow also none from the generator's error in TensorFlow's own log)."""
    import subprocess
    import sys

    from tests.finetuning_files import subprocess_env

    data = write_sst2_task(str(tmp_path / "data"), num_train=200, num_dev=8, num_test=2)
    train = tmp_path / "data" / "train.tsv"
    size = os.path.getsize(train)
    command = [sys.executable, os.path.join(REPO, "recipes", "run_glue.py"), "--stream_train_data",
               *run_glue_flags(data, str(tmp_path / "out"), "--num_train_epochs=3", "--log_every_steps=0",
                               "--train_batch_size=8")]
    env = {k: v for k, v in subprocess_env().items() if k != "TF_CPP_MIN_LOG_LEVEL"}  # the recipe's filter on
    process = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        for line in process.stdout:  # the first epoch trained and evaluated: the file is read again from now on
            if line.startswith("epoch 1: dev"):
                break
        if change == "append":
            with open(train, "a", encoding="utf-8") as f:
                f.write("good movie\t1\n" * 10)
        else:
            with open(train, "r+", encoding="utf-8") as f:
                f.truncate(size // 2)
        _, stderr = process.communicate(timeout=300)
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate()
    now = os.path.getsize(train)
    assert process.returncode == 2, stderr[-3000:]
    assert [line for line in stderr.splitlines() if line.strip()] == [
        f"error: {train}: the training file changed while the run streamed it ({size} bytes when the run read it, "
        f"{now} bytes now): a streamed file is read again every epoch, so it must stay as it is until the run ends "
        "(copy it, and train on the copy)"], stderr[-3000:]
