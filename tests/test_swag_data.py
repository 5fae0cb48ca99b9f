"""SWAG reader: both CSV layouts (with and without the leading index column), unlabelled test files,
errors naming file:line, and the per-choice packing."""

import os

import numpy as np
import pytest

from keras_bert_impl.data import swag_data
from keras_bert_impl.data.swag_data import SwagDataError
from keras_bert_impl.tokenizers.bert_tokenizer import BertTokenizer
from keras_bert_impl.utils.errors import UserInputError

pytestmark = pytest.mark.backend_independent

HEADER = "video-id,fold-ind,startphrase,sent1,sent2,gold-source,ending0,ending1,ending2,ending3,label"
ROW = ('anetv_jkn6uvmqwh4,3416,"Members of the procession walk down the street, holding instruments.",'
       '"Members of the procession walk down the street, holding instruments.",A drum line,gold,'
       'passes by walking down the street playing their instruments.,has heard approaching them.,'
       "arrives and they're outside dancing and asleep.,turns the lead singer watches the performance.,0")


def _write(tmp_path, name, lines):
    path = os.path.join(tmp_path, name)
    with open(path, "w", encoding="utf-8") as f:
        f.write("\n".join(lines) + "\n")
    return path


def test_reads_the_released_layout_with_its_leading_index_column(tmp_path):
    path = _write(tmp_path, "val.csv", ["," + HEADER, "0," + ROW, "1," + ROW[:-1] + "3"])
    first, second = swag_data.read_swag_file(path)
    assert first.context == "Members of the procession walk down the street, holding instruments."
    assert first.start_ending == "A drum line"
    assert first.endings[3] == "turns the lead singer watches the performance."
    assert (first.label, second.label) == (0, 3)
    np.testing.assert_array_equal(swag_data.swag_labels([first, second]), [0, 3])


def test_test_file_has_no_label(tmp_path):
    header, row = HEADER.rsplit(",", 1)[0], ROW.rsplit(",", 1)[0]
    (example,) = swag_data.read_swag_file(_write(tmp_path, "test.csv", [header, row]), labelled=False)
    assert example.label is None and len(example.endings) == 4


def test_errors_name_file_and_line(tmp_path):
    path = _write(tmp_path, "train.csv", [HEADER, ROW, ROW[:-1] + "7"])
    with pytest.raises(SwagDataError, match=rf"{path}:3: label '7' is not one of 0..3"):
        swag_data.read_swag_file(path)
    path = _write(tmp_path, "train.csv", [HEADER, ROW, "a,b,c"])
    with pytest.raises(UserInputError, match=rf"{path}:3: expected 11 fields \(as the header\), found 3"):
        swag_data.read_swag_file(path)
    path = _write(tmp_path, "train.csv", [HEADER.replace("ending2", "end2"), ROW])
    with pytest.raises(SwagDataError, match=rf"{path}:2: no column\(s\) \['ending2'\]"):
        swag_data.read_swag_file(path)
    path = _write(tmp_path, "test.csv", [HEADER.rsplit(",", 1)[0], ROW.rsplit(",", 1)[0]])
    with pytest.raises(SwagDataError, match=r"no column\(s\) \['label'\]"):
        swag_data.read_swag_file(path, labelled=True)
    with pytest.raises(SwagDataError, match=rf"{tmp_path}/val.csv: no such file"):
        swag_data.read_swag_file(os.path.join(tmp_path, "val.csv"))
    assert issubclass(SwagDataError, UserInputError)


def test_each_choice_is_cls_context_sep_start_and_ending_sep(tmp_path, minilm_vocab_file):
    tokenizer = BertTokenizer(minilm_vocab_file)
    examples = swag_data.read_swag_file(_write(tmp_path, "val.csv", [HEADER, ROW]))
    features = swag_data.encode_swag_examples(tokenizer, examples, max_seq_length=64)
    assert len(features["token_ids"]) == 1 and len(features["token_ids"][0]) == 4
    for choice, ending in enumerate(examples[0].endings):
        expected = tokenizer([examples[0].context], [f"A drum line {ending}"], max_length=64)
        np.testing.assert_array_equal(features["token_ids"][0][choice], expected["token_ids"][0])
        np.testing.assert_array_equal(features["segment_ids"][0][choice], expected["segment_ids"][0])
