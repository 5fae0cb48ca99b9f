"""GLUE readers: every task's TSV layout (written here as small fixtures), errors naming file:line, unknown
labels, featurization and the submission files."""

import os

import numpy as np
import pytest

from keras_bert_impl.data import glue_data
from keras_bert_impl.data.glue_data import GlueDataError
from keras_bert_impl.tokenizers.bert_tokenizer import BertTokenizer
from keras_bert_impl.utils.errors import UserInputError

pytestmark = pytest.mark.backend_independent


def _write(directory, name, lines):
    path = os.path.join(directory, name)
    with open(path, "w", encoding="utf-8") as f:
        f.write("".join(line + "\n" for line in lines))
    return path


def _tsv(*columns):
    return "\t".join(columns)


# task -> (train/dev lines, test lines, expected first labelled example (text_a, text_b, label), test text_a)
FIXTURES = {
    "cola": ([_tsv("gj04", "1", "", "Our friends won't buy this analysis."), _tsv("gj04", "0", "*", "They drank the pub.")],
             [_tsv("index", "sentence"), _tsv("0", "Bill whistled past the house.")],
             ("Our friends won't buy this analysis.", None, "1"), "Bill whistled past the house."),
    "sst2": ([_tsv("sentence", "label"), _tsv("a gorgeous film ", "1")],
             [_tsv("index", "sentence"), _tsv("0", "uneven but fun")],
             ("a gorgeous film ", None, "1"), "uneven but fun"),
    "mrpc": ([_tsv("Quality", "#1 ID", "#2 ID", "#1 String", "#2 String"), _tsv("1", "702876", "702977", "He said.", "He stated.")],
             [_tsv("index", "#1 ID", "#2 ID", "#1 String", "#2 String"), _tsv("0", "1089874", "1089925", "A x.", "A y.")],
             ("He said.", "He stated.", "1"), "A x."),
    "qqp": ([_tsv("id", "qid1", "qid2", "question1", "question2", "is_duplicate"), _tsv("1", "1", "2", "Why?", "How?", "0")],
            [_tsv("id", "question1", "question2"), _tsv("0", "Is it?", "Was it?")],
            ("Why?", "How?", "0"), "Is it?"),
    "stsb": ([_tsv("index", "genre", "filename", "year", "old_index", "source1", "source2", "sentence1", "sentence2", "score"),
              _tsv("0", "main-captions", "MSRvid", "2012test", "0001", "none", "none", "A plane takes off.", "A plane is taking off.", "5.000")],
             [_tsv("index", "genre", "filename", "year", "old_index", "source1", "source2", "sentence1", "sentence2"),
              _tsv("0", "main-captions", "MSRvid", "2012test", "0024", "none", "none", "A girl sings.", "A girl is singing.")],
             ("A plane takes off.", "A plane is taking off.", 5.0), "A girl sings."),
    "mnli": ([_tsv("index", "promptID", "pairID", "genre", "s1bp", "s2bp", "s1p", "s2p", "sentence1", "sentence2", "label1", "gold_label"),
              _tsv("0", "31193", "31193n", "government", "(", "(", "(", "(", "Conceptually cream.", "Product and geography.", "neutral", "neutral")],
             [_tsv("index", "promptID", "pairID", "genre", "s1bp", "s2bp", "s1p", "s2p", "sentence1", "sentence2"),
              _tsv("0", "31193", "31193n", "fiction", "(", "(", "(", "(", "Hello there.", "Hi.")],
             ("Conceptually cream.", "Product and geography.", "neutral"), "Hello there."),
    "qnli": ([_tsv("index", "question", "sentence", "label"), _tsv("0", "When?", "In 1990.", "entailment")],
             [_tsv("index", "question", "sentence"), _tsv("0", "Who?", "Nobody.")],
             ("When?", "In 1990.", "entailment"), "Who?"),
    "rte": ([_tsv("index", "sentence1", "sentence2", "label"), _tsv("0", "No weapons.", "Weapons found.", "not_entailment")],
            [_tsv("index", "sentence1", "sentence2"), _tsv("0", "Maril.", "Marie.")],
            ("No weapons.", "Weapons found.", "not_entailment"), "Maril."),
    "wnli": ([_tsv("index", "sentence1", "sentence2", "label"), _tsv("0", "I stuck a pin.", "The pin had a hole.", "1")],
             [_tsv("index", "sentence1", "sentence2"), _tsv("0", "The trophy.", "It was big.")],
             ("I stuck a pin.", "The pin had a hole.", "1"), "The trophy."),
}


@pytest.mark.parametrize("task", glue_data.GLUE_TASKS)
def test_every_task_layout_reads_text_and_labels(task, tmp_path):
    labelled, test, (text_a, text_b, label), test_text = FIXTURES[task]
    for split in ["train", *glue_data.dev_splits(task)]:
        _write(tmp_path, f"{split}.tsv", labelled)
        examples = glue_data.read_glue_examples(task, tmp_path, split)
        first = examples[0]
        assert (first.text_a, first.text_b, first.label) == (text_a, text_b, label)
        assert first.guid == f"{split}-{1 if task == 'cola' else 2}"  # CoLA's train/dev have no header
    for split in glue_data.test_splits(task):
        _write(tmp_path, f"{split}.tsv", test)
        (example,) = glue_data.read_glue_examples(task, tmp_path, split)
        assert example.text_a == test_text and example.label is None
    ids = glue_data.label_ids(task, glue_data.read_glue_examples(task, tmp_path, "train"))
    if task == "stsb":
        assert ids.dtype == np.float32 and glue_data.num_outputs(task) == 1
    else:
        assert ids[0] == glue_data.get_labels(task).index(label) and ids.dtype == np.int32


def test_wrong_column_count_names_file_and_line(tmp_path):
    path = _write(tmp_path, "dev.tsv", [_tsv("index", "question", "sentence", "label"), _tsv("0", "a", "b", "entailment"),
                                        _tsv("1", "a", "entailment")])
    with pytest.raises(GlueDataError, match=rf"{path}:3: expected 4 tab-separated columns for qnli dev data, found 3"):
        glue_data.read_glue_examples("qnli", tmp_path, "dev")
    _write(tmp_path, "train.tsv", [_tsv("index", "promptID", "x"), _tsv("0", "1", "2")])
    with pytest.raises(GlueDataError, match=r"train.tsv:2: expected at least 11"):
        glue_data.read_glue_examples("mnli", tmp_path, "train")


def test_bad_sts_score_names_file_and_line(tmp_path):
    header, row = FIXTURES["stsb"][0]
    path = _write(tmp_path, "dev.tsv", [header, row, row.rsplit("\t", 1)[0] + "\tfive"])
    with pytest.raises(GlueDataError, match=rf"{path}:3: the stsb score 'five' is not a number"):
        glue_data.read_glue_examples("STS-B", tmp_path, "dev")


def test_unknown_label_names_file_line_label_and_allowed_labels(tmp_path):
    header, row = FIXTURES["mnli"][0]
    path = _write(tmp_path, "dev_mismatched.tsv", [header, row, row.replace("\tneutral\tneutral", "\tneutral\tentail")])
    with pytest.raises(GlueDataError, match=rf"{path}:3: unknown label 'entail' for mnli; the allowed labels are "
                                            r"\['contradiction', 'entailment', 'neutral'\]"):
        glue_data.read_glue_examples("mnli", tmp_path, "dev_mismatched")


def test_unknown_task_split_and_missing_file_are_clear_errors(tmp_path):
    with pytest.raises(ValueError, match="Unknown GLUE task 'squad'"):
        glue_data.get_labels("squad")
    with pytest.raises(ValueError, match=r"mnli has no split 'dev'"):
        glue_data.read_glue_examples("mnli", tmp_path, "dev")
    with pytest.raises(GlueDataError, match="train.tsv: not found"):
        glue_data.read_glue_examples("rte", tmp_path, "train")
    assert issubclass(GlueDataError, UserInputError)


def test_encode_examples_packs_non_empty_pairs_like_the_tokenizer_without_padding(minilm_vocab_file):
    tokenizer = BertTokenizer(minilm_vocab_file)
    examples = [glue_data.InputExample("a", "The cat sat.", "A long second sentence here.", "1"),
                glue_data.InputExample("b", "Hi", "There", "0")]
    features = glue_data.encode_examples(tokenizer, examples, max_seq_length=8)
    reference = tokenizer(["The cat sat."], ["A long second sentence here."], max_length=8)
    np.testing.assert_array_equal(features["token_ids"][0], reference["token_ids"][0])
    np.testing.assert_array_equal(features["segment_ids"][0], reference["segment_ids"][0])
    assert [len(t) for t in features["token_ids"]] == [8, 5] and all(m.all() for m in features["padding_mask"])


def test_submission_files_have_the_glue_names_and_format(tmp_path):
    assert glue_data.submission_file_name("mnli", "test_matched") == "MNLI-m.tsv"
    assert glue_data.submission_file_name("mnli", "test_mismatched") == "MNLI-mm.tsv"
    assert glue_data.submission_file_name("SST-2", "test") == "SST-2.tsv"
    assert {name for (_, _), name in glue_data.GLUE_SUBMISSION_FILES.items()} == {
        "CoLA.tsv", "SST-2.tsv", "MRPC.tsv", "QQP.tsv", "STS-B.tsv", "MNLI-m.tsv", "MNLI-mm.tsv", "QNLI.tsv",
        "RTE.tsv", "WNLI.tsv"}
    path = str(tmp_path / "RTE.tsv")
    glue_data.write_submission(path, "rte", np.array([1, 0]))
    assert open(path).read() == "index\tprediction\n0\tnot_entailment\n1\tentailment\n"
    glue_data.write_submission(path, "stsb", np.array([4.21, 0.5]))
    assert open(path).read() == "index\tprediction\n0\t4.210\n1\t0.500\n"


@pytest.mark.tensorflow
def test_glue_files_are_read_from_cloud_storage_urls_through_tf_gfile():
    """gs:// data dirs (Colab TPUs) go through tf.io.gfile; TensorFlow's in-memory ram:// filesystem stands in
    for the bucket here and must give the same examples as the same file on disk."""
    import tensorflow as tf

    text = "sentence\tlabel\nit is good .\t1\nbad !\t0\n"
    tf.io.gfile.makedirs("ram://glue_test/sst2")
    with tf.io.gfile.GFile("ram://glue_test/sst2/train.tsv", "w") as f:
        f.write(text)
    remote = glue_data.read_glue_examples("sst2", "ram://glue_test/sst2/", "train")
    assert [(e.text_a, e.label) for e in remote] == [("it is good .", "1"), ("bad !", "0")]
    with pytest.raises(GlueDataError, match="ram://glue_test/sst2/dev.tsv: not found"):
        glue_data.read_glue_examples("sst2", "ram://glue_test/sst2", "dev")
