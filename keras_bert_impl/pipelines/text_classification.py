"""The text-classification pipeline: label names and scores of texts and text pairs, as transformers'.

    classifier = pipeline("text-classification", model="output/sst2/model")
    classifier("A joy to watch.")                    # [{'label': 'positive', 'score': 0.98}]
    classifier(["A joy.", "Dull."])                   # [{'label': ..., 'score': ...}, {...}]
    classifier("A joy.", top_k=None)                  # every label, best first
    classifier({"text": "A man sleeps.", "text_pair": "A man is awake."})

The answer is transformers' `TextClassificationPipeline`'s: without `top_k` one dict {"label", "score"} per
input (a single text: a list holding it); with `top_k` the `top_k` best labels per input (None: every
label), best first. Scores are softmax probabilities (`function_to_apply`: "softmax", "sigmoid" or "none";
default "softmax", a one-output model's "sigmoid", a regression's "none": its score). The labels are the
model directory's `id2label` names (or `label_names=`).

A text longer than `max_seq_length` is cut (`long_input="truncate"`; the first time, a warning says so), or
classified by its windows with their logits pooled (`long_input="mean"` or `"max"`, default: the mode the
directory was fine-tuned with). An input that is not a text, or an empty text, is refused naming its index;
`top_k` is None or at least 1.
The labels are those of run_glue.py's prediction files: the argmax of the same logits, decoded by the model's
own `example_logits` and `scores` (`data.class_scores`).
"""

from keras_bert_impl.models.classifier import BertClassifier
from keras_bert_impl.pipelines.base import Pipeline
from keras_bert_impl.data.class_scores import ranked
from keras_bert_impl.utils.errors import UserInputError

# `top_k` not given: transformers' shape of one dict per input (a single text: a list of one).
_NOT_GIVEN = "not given"


class TextClassificationPipeline(Pipeline):
    """`pipeline("text-classification")` (also "sentiment-analysis"): see the module docstring."""

    task = "text-classification"
    default_model = BertClassifier
    options = {"top_k": _NOT_GIVEN, "function_to_apply": None, "long_input": "truncate", "label_names": None}
    top_k_may_be_all = True

    def is_single(self, inputs):
        return isinstance(inputs, (str, dict))

    def check_inputs(self, inputs):
        texts, pairs = _texts(inputs)
        self.check_texts(texts, allow_empty=False)
        if pairs is not None:
            self.check_texts(pairs, "text_pair of input")  # an empty one packs the text alone
        return inputs

    def __call__(self, inputs, **options):
        answers = super().__call__(inputs, **options)
        top_k = {**self.settings, **self.check_options(options)}["top_k"]
        if self.is_single(inputs) and top_k is _NOT_GIVEN:
            return [answers]  # transformers' shape: a list even for one text
        return answers

    def run(self, inputs, settings):
        texts, pairs = _texts(inputs)
        preprocessor = self.preprocessor(settings, long_input=settings["long_input"])
        rows, example_index = preprocessor.windows((texts, pairs) if pairs is not None else texts)
        if settings["long_input"] == "truncate":
            max_length = int(settings["max_seq_length"])
            cut = self.first_cut(texts, pairs, [len(row) for row in rows["token_ids"]], max_length)
            self.warn_cut(cut, f"max_seq_length={max_length}", "long_input='mean' or 'max' classifies a long text "
                          "by its windows")
        logits = self.model.example_logits(self.predict(rows, settings), example_index, len(texts), settings["long_input"])
        regression = self.checkpoint is not None and self.checkpoint.problem_type == "regression"
        names = self.label_names(settings, logits.shape[-1])
        top_k = settings["top_k"]
        scores = self.model.scores(logits, settings["function_to_apply"], regression)
        rows = ranked(scores, names, 1 if top_k is _NOT_GIVEN else top_k)
        answers = [[{"label": label, "score": score} for label, score in row] for row in rows]
        return [row[0] for row in answers] if top_k is _NOT_GIVEN else answers


def _texts(inputs):
    """(texts, pair texts or None) of the inputs: strs, or dicts {"text", "text_pair"}."""
    if not any(isinstance(x, dict) for x in inputs):
        return list(inputs), None
    if not all(isinstance(x, dict) and "text" in x and "text_pair" in x for x in inputs):
        raise UserInputError('text-classification takes texts, or text pairs as dicts {"text": ..., "text_pair": ...};'
                             " not a mix.")
    return [x["text"] for x in inputs], [x["text_pair"] for x in inputs]
