"""The [UNK] report: it counts the tokens and the [UNK] tokens of what a recipe read as the tokenizer makes
them (an [UNK] for each unknown CJK character and for each word with an unknown piece), names the most
frequent unknown characters and words, and warns above 1%; every fine-tuning recipe prints it."""

import warnings

import pytest

from keras_bert_impl.runners.cli import recipe_logging
from keras_bert_impl.tokenizers.bert_tokenizer import BertTokenizer
from keras_bert_impl.tokenizers.unknown_tokens import UnknownTokenWarning, report_unknown_tokens, unknown_token_stats
from tests.finetuning_files import load_run_glue, run_glue_flags, write_sst2_task

VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "the", "movie", "was", "good", "##ish", ",", "州"]


def test_the_report_counts_tokens_and_unknown_characters_and_words():
    tokenizer = BertTokenizer(VOCAB)
    texts = ["The movie was goodish, 杭州!", "杭州 movie", "", "Zebra movie"]
    # tokens: the movie was good ##ish , [UNK]=杭 州 [UNK]=! | [UNK]=杭 州 movie | [UNK]=Zebra movie
    stats = unknown_token_stats(tokenizer, texts)
    assert (stats.num_tokens, stats.num_unknown) == (14, 4)
    assert stats.most_unknown == [("杭", 2), ("!", 1), ("Zebra", 1)]
    assert stats.share == pytest.approx(4 / 14)
    assert unknown_token_stats(tokenizer, texts, top=1).most_unknown == [("杭", 2)]
    assert unknown_token_stats(tokenizer, []).share == 0.0


def test_it_warns_above_one_percent_and_prints_one_line(capsys):
    """A recipe's line (the package's logger in the recipes' form, `runners.cli.recipe_logging`)."""
    with recipe_logging():
        _check_one_line_reports(capsys)


def _check_one_line_reports(capsys):
    tokenizer = BertTokenizer(VOCAB)
    known = ["the movie was good"] * 25  # 100 tokens
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # exactly 1%: no warning
        stats = report_unknown_tokens(tokenizer, known[:-1] + ["the movie was 杭"], "train.tsv")
    assert (stats.num_tokens, stats.num_unknown) == (100, 1)
    assert capsys.readouterr().out == ("[UNK] tokens: 1 of the 100 tokens of train.tsv (1.00%); most often unknown: "
                                       "'杭' (1)\n")
    with pytest.warns(UnknownTokenWarning, match=r"2\.00% of the tokens of train\.tsv are \[UNK\] \(more than 1%\)"):
        report_unknown_tokens(tokenizer, known[:-1] + ["the movie 杭 杭"], "train.tsv")
    assert capsys.readouterr().out.count("\n") == 1
    report_unknown_tokens(tokenizer, known, "train.tsv")
    assert capsys.readouterr().out == "[UNK] tokens: none of the 100 tokens of train.tsv\n"


def test_a_recipe_reports_the_unknown_tokens_of_its_files(tmp_path, capsys):
    data_flags = write_sst2_task(str(tmp_path / "data"))
    with open(tmp_path / "data" / "dev.tsv", "a", encoding="utf-8") as f:
        f.write("杭州 good\t1\n")
    with pytest.warns(UnknownTokenWarning):  # 2 of 194 tokens
        load_run_glue().main(run_glue_flags(data_flags, str(tmp_path / "out"), "--num_train_epochs=1"))
    line = next(line for line in capsys.readouterr().out.splitlines() if line.startswith("[UNK] tokens"))
    assert line == "[UNK] tokens: 2 of the 194 tokens of the data read (1.03%); most often unknown: '杭' (1), '州' (1)"
