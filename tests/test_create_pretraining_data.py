"""create_pretraining_data on WikiExtractor output: the `<doc ...>` / `</doc>` lines are dropped (no token of
them reaches the pretraining text), each ends a document, and the recipe's summary says how many it dropped."""

import importlib.util
import os

import pytest

from keras_bert_impl.data import pretraining_documents
from keras_bert_impl.tokenizers.bert_tokenizer import BertTokenizer

pytestmark = pytest.mark.backend_independent

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
WORDS = ["anarchism", "is", "a", "political", "philosophy", "the", "history", "of", "stretches", "back", "autism",
         "condition", "it", "starts", "early", "."]
WIKI = """<doc id="12" url="https://en.wikipedia.org/wiki?curid=12" title="Anarchism">
Anarchism

Anarchism is a political philosophy.

The history of anarchism stretches back.
</doc>
<doc id="25" url="https://en.wikipedia.org/wiki?curid=25" title="Autism">
Autism

Autism is a condition.
It starts early.
</doc>
"""


def _tokenizer(tmp_path):
    path = os.path.join(tmp_path, "vocab.txt")
    with open(path, "w", encoding="utf-8") as f:
        f.write("\n".join(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *WORDS]) + "\n")
    return BertTokenizer(path), path


def test_wikiextractor_markup_lines_are_dropped_and_end_documents(tmp_path):
    tokenizer, _ = _tokenizer(tmp_path)
    corpus = tmp_path / "wiki_00"
    corpus.write_text(WIKI, encoding="utf-8")
    stats = {}
    documents = list(pretraining_documents.read_documents([str(corpus)], tokenizer, stats=stats))
    assert documents == [[["anarchism"]], [["anarchism", "is", "a", "political", "philosophy", "."]],
                         [["the", "history", "of", "anarchism", "stretches", "back", "."]], [["autism"]],
                         [["autism", "is", "a", "condition", "."], ["it", "starts", "early", "."]]]
    assert stats == {"markup_lines_dropped": 4}
    # The same text with a blank line for every markup line gives the same documents.
    plain = tmp_path / "plain.txt"
    plain.write_text("\n".join("" if line.startswith(("<doc", "</doc")) else line for line in WIKI.splitlines()))
    assert list(pretraining_documents.read_documents([str(plain)], tokenizer)) == documents


def test_create_pretraining_data_summary_counts_the_dropped_lines(tmp_path, capsys):
    tokenizer, vocab_file = _tokenizer(tmp_path)
    corpus = tmp_path / "wiki_00"
    corpus.write_text(WIKI, encoding="utf-8")
    spec = importlib.util.spec_from_file_location("cpd", os.path.join(REPO, "recipes", "create_pretraining_data.py"))
    recipe = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(recipe)
    total = recipe.main([f"--input_file={corpus}", f"--output_file={tmp_path / 'out.tfrecord'}",
                         f"--vocab_file={vocab_file}", "--max_seq_length=16", "--dupe_factor=1",
                         "--max_predictions_per_seq=2"])
    summary = capsys.readouterr().err.strip().splitlines()[-1]
    assert summary == (f"Wrote {total} total instances from 5 documents; dropped 4 WikiExtractor <doc ...>/</doc> "
                       "lines") and total > 0
