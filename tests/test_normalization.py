"""`BertTokenizer(normalize="nfkc")`: each character is replaced by its NFKC form before tokenizing (full-width
letters and digits, ligatures, squared words), the offsets still point into the original text, the in-graph
tokenizer gives the same ids and offsets, and the setting is off by default and travels with the tokenizer
(tokenizer_config.json, the preprocessor's config, the recipes' --nfkc)."""

import json

import pytest

from keras_bert_impl.preprocessors.token_classifier_preprocessor import BertTokenClassifierPreprocessor
from keras_bert_impl.runners.flags import config_from_flags
from keras_bert_impl.runners.run_ner import build_parser
from keras_bert_impl.tasks.base import load_tokenizer
from keras_bert_impl.tasks.ner import NerConfig
from keras_bert_impl.tokenizers.bert_tokenizer import BertTokenizer

VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "bert", "12", "##3", "fi", "##sh", "株", "式", "会", "社", "a", ",", "!",
         "(", ")", "東", "京"]
TEXTS = ["ＢＥＲＴ　１２３", "ＢＥＲＴ１２３", "ﬁsh ＢＥＲＴ", "㍿a", "a㍿(東京)", "ＢＥＲＴ，ａ！", "bert a", "", "a¨a", "ｆｉｓｈ"]


def test_nfkc_tokens_and_offsets_into_the_original_text():
    tokenizer = BertTokenizer(VOCAB, normalize="nfkc")
    # Full-width letters and digits: one character each, as long as the ASCII ones.
    assert tokenizer.tokenize_with_offsets("ＢＥＲＴ　１２３") == (["bert", "12", "##3"], [(0, 4), (5, 7), (7, 8)])
    # "ﬁ" expands to two characters: its pieces span the one original character.
    assert tokenizer.tokenize_with_offsets("ﬁsh ＢＥＲＴ") == (["fi", "##sh"] + ["bert"], [(0, 1), (1, 3), (4, 8)])
    # "㍿" expands to four CJK ideographs, each a word, each spanning the original character.
    assert tokenizer.tokenize_with_offsets("a㍿(東京)") == (
        ["a", "株", "式", "会", "社", "(", "東", "京", ")"],
        [(0, 1), (1, 2), (1, 2), (1, 2), (1, 2), (2, 3), (3, 4), (4, 5), (5, 6)])
    assert tokenizer.tokenize_with_offsets("ＢＥＲＴ，ａ！") == (["bert", ",", "a", "!"], [(0, 4), (4, 5), (5, 6), (6, 7)])
    batch = tokenizer(["ＢＥＲＴ　１２３"], max_length=8, return_offsets=True)
    assert batch["token_ids"].tolist() == [[2, 4, 5, 6, 3]]
    assert batch["offsets"].tolist() == [[[0, 0], [0, 4], [5, 7], [7, 8], [0, 0]]]


def test_the_original_tokenization_stays_the_default():
    plain, nfkc = BertTokenizer(VOCAB), BertTokenizer(VOCAB, normalize="nfkc")
    assert plain.normalize is None
    assert plain.tokenize("ＢＥＲＴ１２３ ﬁsh ㍿") == ["[UNK]", "[UNK]", "[UNK]"]
    for text in ("bert a", "(東京)", "a, bert!"):  # text that NFKC leaves alone tokenizes alike
        assert nfkc.tokenize_with_offsets(text) == plain.tokenize_with_offsets(text)
    with pytest.raises(ValueError, match="normalize must be one of"):
        BertTokenizer(VOCAB, normalize="nfc")


@pytest.mark.tensorflow
def test_the_in_graph_tokenizer_normalizes_alike():
    from keras_bert_impl.tokenizers.tf_bert_tokenizer import TFBertTokenizer

    tokenizer = BertTokenizer(VOCAB, normalize="nfkc")
    ids, starts, ends = TFBertTokenizer(tokenizer).tokenize_with_offsets(TEXTS)
    for text, row_ids, row_starts, row_ends in zip(TEXTS, ids.to_list(), starts.to_list(), ends.to_list()):
        tokens, offsets = tokenizer.tokenize_with_offsets(text)
        assert row_ids == tokenizer.convert_tokens_to_ids(tokens) and list(zip(row_starts, row_ends)) == offsets, text


def test_the_setting_is_saved_with_the_tokenizer_and_the_preprocessor(tmp_path):
    tokenizer = BertTokenizer(VOCAB, normalize="nfkc")
    tokenizer.save_pretrained(str(tmp_path / "nfkc"))
    with open(tmp_path / "nfkc" / "tokenizer_config.json", encoding="utf-8") as f:
        assert json.load(f)["normalize"] == "nfkc"
    assert BertTokenizer.from_pretrained(str(tmp_path / "nfkc")).normalize == "nfkc"
    assert BertTokenizer.from_pretrained(str(tmp_path / "nfkc"), normalize=None).normalize is None
    BertTokenizer(VOCAB).save_pretrained(str(tmp_path / "plain"))
    with open(tmp_path / "plain" / "tokenizer_config.json", encoding="utf-8") as f:
        assert "normalize" not in json.load(f)  # the default writes the file as before

    preprocessor = BertTokenClassifierPreprocessor(tokenizer, sequence_length=8)
    config = preprocessor.get_config()
    assert config["normalize"] == "nfkc"
    restored = BertTokenClassifierPreprocessor.from_config(config)
    restored.tokenizer.set_vocabulary(VOCAB)
    assert restored.tokenizer.tokenize("ＢＥＲＴ") == ["bert"]
    assert "normalize" not in BertTokenClassifierPreprocessor(BertTokenizer(VOCAB)).get_config()


def test_the_recipes_nfkc_flag_sets_the_tokenizer(tmp_path):
    vocab = tmp_path / "vocab.txt"
    vocab.write_text("\n".join(VOCAB) + "\n", encoding="utf-8")
    flags = [f"--vocab_file={vocab}", f"--output_dir={tmp_path / 'out'}", "--do_train"]
    config = config_from_flags(NerConfig, build_parser().parse_args([*flags, "--nfkc"]))
    assert config.nfkc is True and load_tokenizer(config).normalize == "nfkc"
    config = config_from_flags(NerConfig, build_parser().parse_args(flags))
    assert config.nfkc is None and load_tokenizer(config).normalize is None
