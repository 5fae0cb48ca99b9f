"""recipes/run_sentence_embeddings.py end to end: the settings of a run (max_seq_length, pooling, normalization,
casing) reach the sentence-transformers directory it writes, which `SentenceTransformer` loads and encodes as
`BertSentenceEncoder.from_pretrained` does; the three losses train from JSON lines and CSV; a scored
validation file gives STS-B's Spearman and Pearson, equal to scipy's on the cosines; a mistake in a file is one
line naming the file, line and column; Chinese text; all-MiniLM-L6-v2 trained with in-batch negatives on the
shipped pairs retrieves the held-out partners at least as well as before."""

import csv
import json
import os

import numpy as np
import pytest
import scipy.stats

from keras_bert_impl import BertSentenceEncoder
from keras_bert_impl.tasks.semantic_search import semantic_search
from keras_bert_impl.utils.errors import UserInputError
from tests.finetuning_files import load_recipe
from tests.tiny_model_files import VOCAB

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PAIRS = os.path.join(REPO, "data", "sentence_pairs")
WORDS = VOCAB[5:]  # hello, world, w0 ... w16


def _write_jsonl(path, records):
    with open(path, "w", encoding="utf-8") as f:
        f.writelines(json.dumps(record, ensure_ascii=False) + "\n" for record in records)
    return str(path)


def _write_csv(path, header, rows):
    with open(path, "w", encoding="utf-8", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(header)
        writer.writerows(rows)
    return str(path)


def _sentence(rng, low=2, high=7):
    return " ".join(rng.choice(WORDS, size=rng.integers(low, high)))


def _scored_pairs(rng, count=12):
    return [{"sentence1": _sentence(rng), "sentence2": _sentence(rng), "score": float(i % 5)} for i in range(count)]


def _run(argv):
    return load_recipe("run_sentence_embeddings").main(argv)


def _sentence_transformer(directory):
    from sentence_transformers import SentenceTransformer

    return SentenceTransformer(str(directory), device="cpu")


def test_run_settings_reach_the_sentence_transformers_directory_it_writes(model_dir, tmp_path):
    # Non-default settings: max_seq_length 12, max pooling, normalization, cased (the tiny vocabulary is lower
    # case, so "Hello" is [UNK] for a cased tokenizer and "hello" for an uncased one).
    rng = np.random.default_rng(0)
    train = _write_jsonl(tmp_path / "train.jsonl", [
        {"anchor": _sentence(rng), "positive": _sentence(rng), "negative": _sentence(rng)} for _ in range(16)])
    dev = _write_jsonl(tmp_path / "dev.jsonl", _scored_pairs(rng))
    output_dir = tmp_path / "out"
    results = _run([f"--init_checkpoint={model_dir}", f"--train_file={train}", f"--validation_file={dev}",
                    f"--output_dir={output_dir}", "--do_train", "--do_eval", "--max_seq_length=12", "--pooling=max",
                    "--normalize", "--nodo_lower_case", "--train_batch_size=8", "--num_train_epochs=1",
                    "--learning_rate=1e-3", "--verbose=0"])
    stored = json.load(open(output_dir / "eval_results.json"))
    assert set(stored) >= {"spearman", "pearson", "num_dev_pairs"} and stored["num_dev_pairs"] == 12
    assert stored["spearman"] == results["spearman"] and -1 <= stored["spearman"] <= 1

    model_path = output_dir / "model"
    ours = BertSentenceEncoder.from_pretrained(str(model_path))
    assert tuple(ours.pooling) == ("max",)
    assert ours.normalize and ours.preprocessor.sequence_length == 12
    assert not ours.preprocessor.tokenizer.do_lower_case
    theirs = _sentence_transformer(model_path)
    assert theirs.max_seq_length == 12
    assert theirs[1].pooling_mode == "max" and len(theirs) == 3  # Transformer, Pooling, Normalize
    texts = ["Hello world", "hello world", " ".join(WORDS), "w3 W4 w5"]  # one longer than 12 tokens
    expected = theirs.encode(texts, convert_to_numpy=True)
    np.testing.assert_allclose(ours.encode(texts), expected, atol=1e-5)
    assert not np.allclose(expected[0], expected[1], atol=1e-3)  # cased: "Hello" is not "hello"
    # The dev metric is STS-B's on the cosines of the saved model's embeddings (the best epoch's, the only one).
    pairs = [json.loads(line) for line in open(dev)]
    first = ours.encode([p["sentence1"] for p in pairs])
    second = ours.encode([p["sentence2"] for p in pairs])
    cosines = np.sum(first * second, axis=-1)
    scores = [p["score"] for p in pairs]
    assert stored["spearman"] == pytest.approx(scipy.stats.spearmanr(cosines, scores)[0], abs=1e-4)
    assert stored["pearson"] == pytest.approx(scipy.stats.pearsonr(cosines, scores)[0], abs=1e-4)


@pytest.mark.parametrize("loss", ["cosent", "simcse"])
def test_cosent_and_simcse_train_from_csv_and_write_a_directory_sentence_transformers_loads(model_dir, tmp_path,
                                                                                          loss):
    rng = np.random.default_rng(1)
    if loss == "cosent":
        train = _write_csv(tmp_path / "train.csv", ["sentence1", "sentence2", "score"],
                           [[_sentence(rng), _sentence(rng), str(i % 3)] for i in range(16)])
    else:
        train = _write_csv(tmp_path / "train.csv", ["text"], [[_sentence(rng)] for _ in range(16)])
    output_dir = tmp_path / "out"
    _run([f"--init_checkpoint={model_dir}", f"--train_file={train}", f"--output_dir={output_dir}", "--do_train",
          f"--loss={loss}", "--max_seq_length=16", "--train_batch_size=8", "--num_train_epochs=1", "--verbose=0"])
    log = [json.loads(line) for line in open(output_dir / "train_log.jsonl")]
    assert len(log) == 1 and np.isfinite(log[0]["loss"])
    settings = json.load(open(output_dir / "run_settings.json"))
    assert settings["loss"] == loss
    texts = [_sentence(rng) for _ in range(5)]
    np.testing.assert_allclose(BertSentenceEncoder.from_pretrained(str(output_dir / "model")).encode(texts),
                               _sentence_transformer(output_dir / "model").encode(texts), atol=1e-5)


def test_pooling_flag_offers_exactly_the_pooling_layers_modes():
    from keras_bert_impl.layers.sentence_pooling import POOLING_MODES
    from keras_bert_impl.tasks.configs import POOLING_CHOICES

    assert sorted(POOLING_CHOICES) == sorted(POOLING_MODES)


def test_mistakes_in_files_and_flags_are_one_line_naming_file_line_and_column(model_dir, tmp_path):
    train = _write_jsonl(tmp_path / "train.jsonl", [{"anchor": "hello", "positive": "world"},
                                                    {"anchor": "w1", "positive": ""}])
    base = [f"--init_checkpoint={model_dir}", f"--output_dir={tmp_path / 'out'}", "--do_train"]
    for argv, message in [
        ([f"--train_file={train}"], f"{train}:2: column 'positive' is empty; expected a text."),
        ([f"--train_file={train}", "--loss=cosent"], f"{train}:1: no column 'sentence1'"),
        ([f"--train_file={train}", "--do_eval"], "--do_eval needs --validation_file"),
        (["--loss=simcse"], "--do_train needs --train_file (text per record)."),
        ([f"--train_file={train}", "--loss=cosent", "--symmetric"], "--symmetric is an option of --loss=mnrl"),
    ]:
        with pytest.raises(UserInputError) as error:
            load_recipe("run_sentence_embeddings").run(
                load_recipe("run_sentence_embeddings").build_parser().parse_args(base + argv))
        assert message in str(error.value) and "\n" not in str(error.value)
    scores = _write_csv(tmp_path / "dev.csv", ["sentence1", "sentence2", "score"],
                        [["hello", "world", "1"], ["w1", "w2", "high"]])
    with pytest.raises(UserInputError, match=r"dev\.csv:3: column 'score' is 'high'; expected a finite number"):
        load_recipe("run_sentence_embeddings").run(load_recipe("run_sentence_embeddings").build_parser().parse_args(
            [f"--init_checkpoint={model_dir}", f"--output_dir={tmp_path / 'eval'}", "--do_eval",
             f"--validation_file={scores}"]))
    assert not (tmp_path / "out").exists() and not (tmp_path / "eval").exists()


def test_a_rerun_with_another_loss_in_the_same_output_dir_is_refused_naming_it(model_dir, tmp_path):
    rng = np.random.default_rng(2)
    train = _write_jsonl(tmp_path / "train.jsonl", [{"text": _sentence(rng)} for _ in range(8)])
    argv = [f"--init_checkpoint={model_dir}", f"--train_file={train}", f"--output_dir={tmp_path / 'out'}",
            "--do_train", "--loss=simcse", "--train_batch_size=4", "--num_train_epochs=1", "--verbose=0",
            "--nosave_model"]
    _run(argv)
    parser = load_recipe("run_sentence_embeddings").build_parser()
    with pytest.raises(UserInputError, match="loss"):
        load_recipe("run_sentence_embeddings").run(parser.parse_args(argv[:-4] + ["--loss=mnrl", "--num_train_epochs=2",
                                                                                   "--verbose=0", "--nosave_model"]))


def test_chinese_texts_are_split_into_ideographs_as_sentence_transformers_splits_them(tmp_path):
    # A tiny random model over the shipped Chinese vocabulary: every ideograph is a token of its own.
    chinese = os.path.join(REPO, "data", "chinese")
    texts = ["今天天气很好", "明天会下雨", "北京是中国的城市", "这是张明的朋友", "张明在银行工作", "学生在大学学习"]
    train = _write_jsonl(tmp_path / "train.jsonl", [{"anchor": a, "positive": b} for a, b in zip(texts, texts[1:])])
    output_dir = tmp_path / "out"
    _run([f"--bert_config_file={os.path.join(chinese, 'bert_config.json')}",
          f"--vocab_file={os.path.join(chinese, 'vocab.txt')}", f"--train_file={train}", f"--output_dir={output_dir}",
          "--do_train", "--max_seq_length=16", "--train_batch_size=5", "--num_train_epochs=1", "--verbose=0"])
    ours = BertSentenceEncoder.from_pretrained(str(output_dir / "model"))
    for text in texts:  # every ideograph a token of the vocabulary
        assert ours.preprocessor.tokenizer.tokenize(text) == list(text)
    np.testing.assert_allclose(ours.encode(texts), _sentence_transformer(output_dir / "model").encode(texts),
                               atol=1e-5)


def _partner_accuracy(model, pairs):
    """The share of anchors whose nearest positive (cosine, among all the positives) is their own."""
    anchors = model.encode([p["anchor"] for p in pairs], normalize=True)
    positives = model.encode([p["positive"] for p in pairs], normalize=True)
    hits = semantic_search(anchors, positives, top_k=1)
    return np.mean([hit[0]["corpus_id"] == i for i, hit in enumerate(hits)])


@pytest.mark.large
def test_minilm_trained_on_the_shipped_pairs_retrieves_held_out_partners_at_least_as_well(minilm_path, tmp_path):
    output_dir = tmp_path / "pairs"
    results = _run([f"--init_checkpoint={minilm_path}", f"--train_file={os.path.join(PAIRS, 'train.jsonl')}",
                    f"--validation_file={os.path.join(PAIRS, 'dev_scored.jsonl')}", f"--output_dir={output_dir}",
                    "--do_train", "--do_eval", "--max_seq_length=32", "--train_batch_size=16",
                    "--eval_batch_size=64", "--learning_rate=2e-5", "--num_train_epochs=1", "--verbose=0"])
    stored = json.load(open(output_dir / "eval_results.json"))
    assert stored["spearman"] == results["spearman"] and stored["num_dev_pairs"] == 90
    print("dev spearman:", stored["spearman"], "pearson:", stored["pearson"])
    assert stored["spearman"] > 0.5
    test_pairs = [json.loads(line) for line in open(os.path.join(PAIRS, "test.jsonl"))]
    before = _partner_accuracy(BertSentenceEncoder.from_pretrained(minilm_path), test_pairs)
    trained = BertSentenceEncoder.from_pretrained(str(output_dir / "model"))
    after = _partner_accuracy(trained, test_pairs)
    print("held-out partner top-1:", before, "->", after)
    assert after >= before
    assert trained.normalize and trained.preprocessor.sequence_length == 32  # MiniLM's Normalize module kept
    texts = [p["anchor"] for p in test_pairs[:8]]
    np.testing.assert_allclose(trained.encode(texts), _sentence_transformer(output_dir / "model").encode(texts),
                               atol=1e-5)
