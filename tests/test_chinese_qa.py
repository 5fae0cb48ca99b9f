"""Chinese extractive QA in the SQuAD format (CMRC2018, DRCD): every CJK ideograph is a doc token of its own,
so on a CMRC-style file whose answers hold characters the vocabulary lacks ([UNK]) and occur twice in their
context, the training targets are the gold spans at each answer_start and perfect logits at those targets
decode to the gold texts; run_squad.py reports CMRC 2018's metric for such data (`--eval_metric`) and the
[UNK] report of what it read."""

import json
import os

import pytest

from keras_bert_impl.data import squad_data
from keras_bert_impl.data.squad_features import convert_examples_to_features
from keras_bert_impl.preprocessors.span_qa_preprocessor import BertSpanQAPreprocessor
from keras_bert_impl.data.squad_postprocessing import RawResult, compute_predictions
from keras_bert_impl.tokenizers.bert_tokenizer import BertTokenizer
from keras_bert_impl.tokenizers.unknown_tokens import UnknownTokenWarning
from tests.finetuning_files import load_recipe

CONTEXTS = [
    "陈伟于1949年出生在杭州。他在杭州读书，后来去了北京大学。他的朋友叫张三。张三认识李四。",
    "张三认识李四。李四的朋友是张三。他们都喜欢iPhone手机。",
    "《红楼梦》是曹雪芹写的。曹雪芹生于南京，红楼梦很有名。",
]
# One question a line: its context, the question, the answer, and which occurrence of the answer in the
# context its answer_start points at.
QUESTIONS = [(int(c), question, answer, int(n)) for c, question, answer, n in (line.split() for line in """
    0 陈伟在哪里出生？ 杭州 0
    0 他后来在哪里读书？ 杭州 1
    0 他去了哪所大学？ 北京大学 0
    0 他的朋友叫什么？ 张三 0
    0 张三认识谁？ 李四 0
    1 李四的朋友是谁？ 张三 1
    1 谁认识李四？ 张三 0
    1 谁的朋友是张三？ 李四 1
    1 他们喜欢什么手机？ iPhone手机 0
    2 谁写了红楼梦？ 曹雪芹 0
    2 曹雪芹生于哪里？ 南京 0
    2 什么很有名？ 红楼梦 1
    0 陈伟哪年出生？ 1949年 0
""".strip().splitlines())]
# Characters of the answers the vocabulary lacks: they are [UNK] tokens.
UNKNOWN = set("杭李曹南")


def _answer_start(context, answer, occurrence):
    start = -1
    for _ in range(occurrence + 1):
        start = context.index(answer, start + 1)
    return start


def _cmrc_dataset():
    paragraphs = [{"context": context, "qas": []} for context in CONTEXTS]
    for i, (c, question, answer, occurrence) in enumerate(QUESTIONS):
        start = _answer_start(CONTEXTS[c], answer, occurrence)
        paragraphs[c]["qas"].append({"id": f"q{i}", "question": question,
                                     "answers": [{"text": answer, "answer_start": start}]})
    return {"version": "v1.0", "data": [{"title": "t", "paragraphs": paragraphs}]}


def _vocabulary():
    chars = sorted({c for text in CONTEXTS + [q for _, q, _, _ in QUESTIONS] for c in text} - UNKNOWN)
    return ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "iphone", "1949"] + [
        c for c in chars if not c.isascii()]


def _gold():
    """{qas_id: (answer, answer_start)}."""
    return {f"q{i}": (answer, _answer_start(CONTEXTS[c], answer, occurrence))
            for i, (c, _, answer, occurrence) in enumerate(QUESTIONS)}


@pytest.fixture
def cmrc_file(tmp_path):
    path = tmp_path / "cmrc.json"
    path.write_text(json.dumps(_cmrc_dataset(), ensure_ascii=False), encoding="utf-8")
    return str(path)


def test_each_cjk_character_is_a_doc_token_and_text_without_cjk_is_split_as_the_original():
    tokens, char_to_word, starts = squad_data.split_context("他叫张三 (Zhang San)，2019年。")
    assert tokens == ["他", "叫", "张", "三", "(Zhang", "San)，2019", "年", "。"]
    assert starts == [0, 1, 2, 3, 5, 12, 21, 22]
    assert char_to_word[4] == 3 and char_to_word[21] == 6  # the space maps to the word before it
    english = "The  (1895-1943) Paris\tlamb\u202fwool"
    assert squad_data.split_context(english)[0] == ["The", "(1895-1943)", "Paris", "lamb", "wool"]


@pytest.mark.parametrize("max_seq_length,doc_stride", [(96, 64), (32, 8)])  # one window, and many
def test_cmrc_targets_are_the_gold_spans_and_perfect_logits_decode_to_the_gold_text(cmrc_file, max_seq_length,
                                                                                    doc_stride):
    tokenizer = BertTokenizer(_vocabulary())
    examples, stats = squad_data.read_squad_examples(cmrc_file, is_training=True)
    assert stats["num_misaligned_answers"] == 0 and len(examples) == len(QUESTIONS)
    features = convert_examples_to_features(examples, tokenizer, max_seq_length, doc_stride, max_query_length=16,
                                            is_training=True)
    gold = _gold()
    assert any("[UNK]" in f.tokens[f.start_position : f.end_position + 1] for f in features if f.start_position)
    targets = {}
    for feature in features:
        if feature.start_position == 0:
            continue
        example = examples[feature.example_index]
        first = feature.token_to_orig_map[feature.start_position]
        last = feature.token_to_orig_map[feature.end_position]
        span = (example.doc_token_char_starts[first],
                example.doc_token_char_starts[last] + len(example.doc_tokens[last]))
        answer, start = gold[example.qas_id]
        assert span == (start, start + len(answer)), (example.qas_id, feature.tokens)  # at answer_start
        targets.setdefault(example.qas_id, feature.start_position)
    assert set(targets) == set(gold)  # every answer is inside some window

    # Perfect logits at the gold tokens of every window that holds the answer decode to the gold text.
    results = []
    for feature in features:
        start_logits, end_logits = [0.0] * len(feature.tokens), [0.0] * len(feature.tokens)
        if feature.start_position:
            start_logits[feature.start_position] = end_logits[feature.end_position] = 10.0
        results.append(RawResult(feature.unique_id, start_logits, end_logits))
    eval_examples, _ = squad_data.read_squad_examples(cmrc_file, is_training=False)
    eval_features = convert_examples_to_features(eval_examples, tokenizer, max_seq_length, doc_stride,
                                                 max_query_length=16, is_training=False)
    assert [f.input_ids for f in eval_features] == [f.input_ids for f in features]
    predictions = compute_predictions(eval_examples, eval_features, results, max_answer_length=10)
    assert predictions.predictions == {qid: answer for qid, (answer, _) in gold.items()}
    assert predictions.answer_char_spans == {qid: (start, start + len(answer)) for qid, (answer, start) in gold.items()}


def test_the_span_qa_preprocessor_labels_chinese_answers_at_their_answer_start():
    tokenizer = BertTokenizer(_vocabulary())
    context = CONTEXTS[1]
    preprocessor = BertSpanQAPreprocessor(tokenizer, sequence_length=48, max_query_length=8)
    starts = [_answer_start(context, "张三", 0), _answer_start(context, "张三", 1), _answer_start(context, "李四", 1)]
    x, y, _ = preprocessor((["谁？"] * 3, [context] * 3), (starts, ["张三", "张三", "李四"]))
    offset = 4  # [CLS] 谁 ？ [SEP]
    assert y["start_positions"].tolist() == [offset + s for s in starts]
    assert y["end_positions"].tolist() == [offset + s + 1 for s in starts]
    tokens = tokenizer.convert_ids_to_tokens(x["token_ids"][2])
    assert tokens[offset + starts[2] : offset + starts[2] + 2] == ["[UNK]", "四"]


def _tiny_bert_config(directory, vocab_size):
    path = os.path.join(directory, "bert_config.json")
    with open(path, "w", encoding="utf-8") as f:
        json.dump({"vocab_size": vocab_size, "hidden_size": 16, "num_hidden_layers": 1, "num_attention_heads": 2,
                   "intermediate_size": 32, "max_position_embeddings": 64, "hidden_dropout_prob": 0.0,
                   "attention_probs_dropout_prob": 0.0}, f)
    return path


def test_run_squad_reports_cmrc2018_for_chinese_data_and_the_unknown_characters(cmrc_file, tmp_path, capsys):
    vocab = tmp_path / "vocab.txt"
    vocab.write_text("\n".join(_vocabulary()) + "\n", encoding="utf-8")
    config = _tiny_bert_config(str(tmp_path), len(_vocabulary()))
    output_dir = tmp_path / "out"
    common = [f"--vocab_file={vocab}", f"--predict_file={cmrc_file}", "--max_seq_length=48", "--doc_stride=32",
              "--max_query_length=12", "--verbose=0"]
    with pytest.warns(UnknownTokenWarning, match=r"of the tokens of the data read are \[UNK\]"):
        results = load_recipe("run_squad").main([*common, f"--train_file={cmrc_file}", f"--bert_config_file={config}",
                                                 f"--output_dir={output_dir}", "--do_train", "--do_predict",
                                                 "--num_train_epochs=1", "--train_batch_size=8"])
    # The [UNK] report of what it read: the questions and contexts of --train_file and --predict_file (here the
    # same file, read twice), e.g. '李' twice in the questions and three times in the contexts.
    assert ("[UNK] tokens: 22 of the 384 tokens of the data read (5.73%); most often unknown: '李' (10), '曹' (6), "
            "'杭' (4), '南' (2)\n") in capsys.readouterr().out
    with open(output_dir / "eval_results.json", encoding="utf-8") as f:
        written = json.load(f)
    assert set(written) == {"cmrc2018_f1", "cmrc2018_em", "cmrc2018_average", "cmrc2018_total", "cmrc2018_skip",
                            "epoch"}
    assert written == results and written["cmrc2018_total"] == len(QUESTIONS) and written["cmrc2018_skip"] == 0
    assert written["cmrc2018_average"] == pytest.approx((written["cmrc2018_f1"] + written["cmrc2018_em"]) / 2)
    with open(output_dir / "predictions.json", encoding="utf-8") as f:
        predictions = json.load(f)
    assert all(" " not in text for text in predictions.values())  # the context's characters, no spaces added

    # --eval_metric=squad: the official SQuAD evaluation of the same predictions.
    with pytest.warns(UnknownTokenWarning):
        results = load_recipe("run_squad").main([*common, f"--init_checkpoint={output_dir / 'model'}", "--do_predict",
                                                 f"--output_dir={tmp_path / 'squad'}", "--eval_metric=squad"])
    assert set(results) == {"exact_match", "f1"}
