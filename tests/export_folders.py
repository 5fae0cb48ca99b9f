"""Tiny models of the shipped data (`data/sentiment`: an uncased sentence classifier; `data/ner`: a cased, NFKC
token classifier) saved as model directories and exported with recipes/export_savedmodel.py to ONNX and LiteRT,
for tests/test_runnable_exports.py.

The export runs under the TensorFlow backend: `make_export_folders` runs in-process under it, and under JAX or
PyTorch in a subprocess with KERAS_BACKEND=tensorflow (the model directories' weights are the same files).

    python -m tests.export_folders ROOT
"""

import os
import subprocess
import sys

import numpy as np

from tests.finetuning_files import subprocess_pythonpath

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DATA = os.path.join(REPO, "data")
FORMATS = ("onnx", "litert")
# The position table of the tiny models, and the packed lengths they were "fine-tuned" at (NER: windows).
MAX_POSITIONS = 64
SENTIMENT_LENGTH, NER_LENGTH = 48, 16


def sentiment_texts(split="dev"):
    with open(os.path.join(DATA, "sentiment", f"{split}.tsv"), encoding="utf-8") as f:
        return [line.rstrip("\n").split("\t")[0] for line in f.readlines()[1:]]


def ner_sentences(split="dev"):
    """The sentences of data/ner/`split`.txt: ([words], [tags]) each."""
    sentences, words, tags = [], [], []
    with open(os.path.join(DATA, "ner", f"{split}.txt"), encoding="utf-8") as f:
        for line in list(f) + [""]:
            parts = line.split()
            if parts and parts[0] != "-DOCSTART-":
                words.append(parts[0])
                tags.append(parts[-1])
            elif words:
                sentences.append((words, tags))
                words, tags = [], []
    return sentences


def ner_tags():
    return sorted({tag for _, tags in ner_sentences("train") for tag in tags})


def _vocabulary():
    words = {w for text in sentiment_texts("train") + sentiment_texts() for w in text.split()}
    words |= {w for split in ("train", "dev") for sentence, _ in ner_sentences(split) for w in sentence}
    words |= {w.lower() for w in words}
    return ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *sorted(words)]


def make_model_directories(root):
    """{"sentiment": dir, "ner": dir}: a BertClassifier and a BertTokenClassifier with spread head weights."""
    import keras

    from keras_bert_impl.config import BertConfig
    from keras_bert_impl.models.backbone import BertBackbone
    from keras_bert_impl.models.classifier import BertClassifier
    from keras_bert_impl.models.token_classifier import BertTokenClassifier
    from keras_bert_impl.tokenizers.bert_tokenizer import BertTokenizer

    os.makedirs(root, exist_ok=True)
    vocab_file = os.path.join(root, "vocab.txt")
    with open(vocab_file, "w", encoding="utf-8") as f:
        f.write("\n".join(_vocabulary()) + "\n")
    keras.utils.set_random_seed(0)
    config = BertConfig(vocab_size=len(_vocabulary()), hidden_size=16, num_hidden_layers=2, num_attention_heads=2,
                        intermediate_size=32, max_position_embeddings=MAX_POSITIONS)
    rng = np.random.default_rng(0)
    directories = {}
    for name, model, tokenizer, labels, length in (
            ("sentiment", BertClassifier(BertBackbone(config), num_classes=2), BertTokenizer(vocab_file),
             ["negative", "positive"], SENTIMENT_LENGTH),
            ("ner", BertTokenClassifier(BertBackbone(config), num_classes=len(ner_tags())),
             BertTokenizer(vocab_file, do_lower_case=False, normalize="nfkc"), ner_tags(), NER_LENGTH)):
        head = model.get_layer("classifier")
        head.kernel.assign(rng.normal(0.0, 3.0, tuple(head.kernel.shape)).astype("float32"))
        if name == "sentiment":  # both labels answered, no text near the boundary: it lies at the widest gap
            x = {k: np.asarray(v, "int32") for k, v in tokenizer(sentiment_texts(), max_length=length).items()}
            logits = keras.ops.convert_to_numpy(model(x, training=False))
            margins = np.sort(logits[:, 1] - logits[:, 0])  # [N]
            third = len(margins) // 3
            i = third + int(np.argmax(np.diff(margins[third:2 * third + 1])))
            bias = keras.ops.convert_to_numpy(head.bias).copy()
            bias[1] -= (margins[i] + margins[i + 1]) / 2
            head.bias.assign(bias)
        directories[name] = os.path.join(root, name)
        model.save_pretrained(directories[name], label_names=labels, settings={"max_seq_length": length})
        tokenizer.save_pretrained(directories[name], sequence_length=length)
    return directories


def make_export_folders(root):
    """Model directories under `root` and their exports: {(name, format): export folder}, plus the
    directories {name: dir}."""
    import keras

    if keras.backend.backend() != "tensorflow" and not os.path.isdir(os.path.join(root, "sentiment_litert")):
        env = dict(os.environ, KERAS_BACKEND="tensorflow", PYTHONPATH=subprocess_pythonpath())
        subprocess.run([sys.executable, "-m", "tests.export_folders", root], env=env, cwd=REPO, check=True,
                       capture_output=True)
    elif not os.path.isdir(os.path.join(root, "sentiment_litert")):
        from keras_bert_impl.runners.export_savedmodel import main

        for name, directory in make_model_directories(root).items():
            for export_format in FORMATS:
                main(["--model_dir", directory, "--export_dir", os.path.join(root, f"{name}_{export_format}"),
                      f"--format={export_format}"])
    return ({(name, f): os.path.join(root, f"{name}_{f}") for name in ("sentiment", "ner") for f in FORMATS},
            {name: os.path.join(root, name) for name in ("sentiment", "ner")})


if __name__ == "__main__":
    make_export_folders(sys.argv[1])
