"""learn_vocab / recipes/learn_vocab.py: a WordPiece vocab.txt of the requested size that BertTokenizer loads."""

import importlib.util
import os
import random

import pytest

# TensorFlow by nature: deselected with -m "not tensorflow", skipped where TensorFlow is not installed.
pytestmark = [pytest.mark.tensorflow, pytest.mark.backend_independent]
pytest.importorskip("tensorflow")

from keras_bert_impl.tokenizers.bert_tokenizer import BertTokenizer
from keras_bert_impl.tokenizers.tf_vocab_learning import RESERVED_TOKENS, count_words, learn_vocab

_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _write_corpus(directory, n_files=3, lines_per_file=400, seed=7):
    """Pseudo-words built from a few hundred stems and suffixes, plus accents, CJK and punctuation."""
    rng = random.Random(seed)
    stems = ["".join(rng.choice("bcdfghjklmnprstvwz") + rng.choice("aeiou") for _ in range(rng.randint(1, 3))) for _ in range(300)]
    suffixes = ["", "", "ing", "ed", "s", "er", "ness", "ly", "tion"]
    extras = ["Café", "naïve", "北京", "大学", "don't", "U.S.A.", "3.14", "e-mail", "(note)"]
    paths = []
    for f in range(n_files):
        path = os.path.join(directory, f"part-{f}.txt")
        with open(path, "w", encoding="utf-8") as out:
            for _ in range(lines_per_file):
                words = [rng.choice(stems) + rng.choice(suffixes) for _ in range(rng.randint(3, 15))]
                if rng.random() < 0.3:
                    words.insert(rng.randrange(len(words)), rng.choice(extras))
                if rng.random() < 0.2:
                    words[0] = words[0].capitalize()
                out.write(" ".join(words) + rng.choice([".", "!", "?", ","]) + "\n")
        paths.append(path)
    return paths


@pytest.fixture(scope="module")
def corpus_files(tmp_path_factory):
    return _write_corpus(str(tmp_path_factory.mktemp("corpus")))


def _load_recipe():
    spec = importlib.util.spec_from_file_location("learn_vocab_recipe", os.path.join(_ROOT, "recipes", "learn_vocab.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_recipe_learns_exact_size_vocab_that_loads(corpus_files, tmp_path):
    output = str(tmp_path / "out" / "vocab.txt")
    pattern = os.path.join(os.path.dirname(corpus_files[0]), "part-*.txt")
    assert _load_recipe().main(["--input_files", pattern, "--output_file", output, "--vocab_size", "400", "--quiet"]) == 0
    with open(output, encoding="utf-8") as f:
        tokens = f.read().split("\n")[:-1]
    assert len(tokens) == 400 and len(set(tokens)) == 400
    assert tokens[: len(RESERVED_TOKENS)] == list(RESERVED_TOKENS)
    assert any(t.startswith("##") and len(t) > 3 for t in tokens)  # Learned continuation pieces.
    assert any(len(t) > 3 and not t.startswith("##") and not t.startswith("[") for t in tokens)  # Learned words.

    tokenizer = BertTokenizer(output)
    assert tokenizer.vocab_size == 400
    pieces, words = 0, 0
    for path in corpus_files:
        with open(path, encoding="utf-8") as f:
            for line in f:
                tokens_of_line = tokenizer.tokenize(line)
                pieces += len(tokens_of_line)
                words += tokens_of_line.count("[UNK]")
    assert pieces > 10_000
    assert words / pieces < 0.001  # Every character of the corpus is in the vocabulary: no [UNK].
    assert "[UNK]" not in tokenizer.tokenize("Café naïve 北京")


def test_cased_and_uncased_vocabularies(corpus_files):
    cased = learn_vocab(corpus_files[:1], vocab_size=300, do_lower_case=False, verbose=False)
    assert len(cased) == 300 and "C" in cased  # Capitals kept.
    uncased = learn_vocab(corpus_files[:1], vocab_size=300, do_lower_case=True, verbose=False)
    assert "C" not in uncased and "é" not in uncased  # Lower-cased, accents stripped.


def test_count_words_is_bounded_and_uses_basic_tokenizer(corpus_files):
    counts = count_words(corpus_files, do_lower_case=True, verbose=False)
    assert counts["北"] > 0 and counts["."] > 0 and counts["cafe"] > 0 and "Café" not in counts
    bounded = count_words(corpus_files, do_lower_case=True, max_unique_words=100, verbose=False)
    assert len(bounded) <= 100
    assert bounded.most_common(1)[0][0] == counts.most_common(1)[0][0]


def test_bad_arguments(corpus_files, tmp_path):
    with pytest.raises(ValueError, match="No input file matches"):
        learn_vocab(str(tmp_path / "nothing-*.txt"), vocab_size=100, verbose=False)
    with pytest.raises(ValueError, match="vocab_size=20 is smaller"):
        learn_vocab(corpus_files[:1], vocab_size=20, verbose=False)
