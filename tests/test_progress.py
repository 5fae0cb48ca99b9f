"""Progress for a terminal and for a log file (`utils.progress`): fit's progress written to a file is one plain
line per epoch, without carriage returns, backspaces or ANSI codes, its counts as integers; on a terminal it is
a line redrawn as the steps go; a recipe's output redirected to a file holds plain lines only."""

import io
import re

import keras
import numpy as np

from keras_bert_impl.utils.progress import FitProgress, number_text
from tests.finetuning_files import load_run_glue, run_glue_flags, write_sst2_task

CONTROL = re.compile(r"[\r\b\x1b]")


class _Terminal(io.StringIO):
    def isatty(self):
        return True


def _fit(stream, verbose=1):
    model = keras.Sequential([keras.Input((2,)), keras.layers.Dense(1)])
    model.compile(optimizer="sgd", loss="mse")
    counts = keras.callbacks.LambdaCallback(on_epoch_end=lambda epoch, logs: logs.update(dev_total=119.0))
    model.fit(np.ones((8, 2)), np.ones((8, 1)), batch_size=2, epochs=2, verbose=0,
              callbacks=[counts, FitProgress(verbose, stream=stream)])
    return stream.getvalue()


def test_fit_progress_in_a_file_is_a_plain_line_per_epoch_with_counts_as_integers():
    text = _fit(io.StringIO())
    assert not CONTROL.search(text)
    lines = text.splitlines()
    assert len(lines) == 2 and all(re.fullmatch(rf"Epoch {i}/2 - 4/4 steps - \d+s - \d+m?s/step - loss: \d+\.\d{{4}} - "
                                                r"dev_total: 119", line) for i, line in zip((1, 2), lines)), lines
    assert _fit(io.StringIO(), verbose=0) == ""


def test_fit_progress_on_a_terminal_redraws_its_line():
    text = _fit(_Terminal())
    assert text.startswith("Epoch 1/2\n") and "\rEpoch" not in text
    assert text.count("\n") == 4 and "\r4/4 steps" in text and "\x1b" not in text and "dev_total: 119" in text


def test_counts_are_integers_and_other_numbers_have_four_decimals():
    assert [number_text(*item) for item in (("dev_HasAns_total", 119.0), ("num_gold", 70.0), ("dev_cmrc2018_skip", 2.0),
                                            ("accuracy", 1.0), ("loss", 0.693147))] == ["119", "70", "2", "1.0000",
                                                                                         "0.6931"]


def test_a_recipes_output_to_a_file_holds_plain_lines(tmp_path, capsys):
    data = write_sst2_task(str(tmp_path / "data"))
    load_run_glue().main([f for f in run_glue_flags(data, str(tmp_path / "out")) if f != "--verbose=0"])
    out = capsys.readouterr().out  # not a terminal, as a log file
    assert not CONTROL.search(out), out[:2000]
    assert [line.split(" - ")[0] for line in out.splitlines() if line.startswith("Epoch ")] == [
        "Epoch 1/3", "Epoch 2/3", "Epoch 3/3"]
