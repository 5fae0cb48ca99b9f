"""Pipelines: answers, not logits, from a fine-tuned model, in the shape of transformers' pipelines.

    from keras_bert_impl import pipeline

    classifier = pipeline("text-classification", model="output/sst2/model")
    classifier("A joy to watch.")   # [{'label': 'positive', 'score': 0.98}]

`pipeline(task, model, **options)` builds the pipeline of a task family; `model` is a model directory (as
the recipes write it), a model name (a Hugging Face hub name, `checkpoints.model_directory.ModelDirectory`),
an already built task model, or an ONNX or LiteRT export folder (recipes/export_savedmodel.py --format=onnx |
litert), run by onnxruntime or LiteRT under the same decoding (`runtime_model.RuntimeModel`). A pipeline runs
the model classes registered with its name (`checkpoints.task_registry`: a new head registered with
"text-classification" is answered by that pipeline, with its own decoding methods), and transformers' other
names of a task are those the classes declare. One module per task family:

| task | module | model | answer |
| --- | --- | --- | --- |
| "text-classification" ("sentiment-analysis") | `text_classification` | BertClassifier | {"label", "score"}, `top_k` |
| "token-classification" ("ner") | `token_classification` | BertTokenClassifier, BertFeatureBasedTagger | entities {"entity_group" or "entity", "score", "word", "start", "end"} |
| "question-answering" | `question_answering` | BertSpanQA | {"answer", "score", "start", "end"} |
| "multiple-choice" | `multiple_choice` | BertMultipleChoice | {"label", "ending", "score"} |
| "fill-mask" | `fill_mask` | BertPretrainer (masked LM) | {"score", "token", "token_str", "sequence"} |
| "feature-extraction" | `feature_extraction` | BertBackbone | [1, tokens, features] |
| "sentence-similarity" | `sentence_similarity` | BertSentenceEncoder | cosine scores of the source against each sentence |

Each pipeline's answers are those of its recipe's prediction files (run_glue.py, run_ner.py, run_squad.py,
run_swag.py, extract_features.py) and of the SavedModel export: they decode the same logits with the same
functions (`data.class_scores`, `BertTokenClassifier.decode` and `data.conll_features.word_predictions`,
`data.squad_postprocessing.compute_predictions`). Inputs are batched (`predict_batch_size`, the recipes'
length-sorted batches), with a progress bar for long input lists, on every backend. Long inputs: the
context's doc-stride windows (question answering), whole-word windows (token classification), or windows
with pooled logits (text classification, `long_input`).
"""

from keras_bert_impl.checkpoints import task_registry
from keras_bert_impl.pipelines.base import Pipeline
from keras_bert_impl.pipelines.feature_extraction import FeatureExtractionPipeline
from keras_bert_impl.pipelines.fill_mask import FillMaskPipeline
from keras_bert_impl.pipelines.multiple_choice import MultipleChoicePipeline
from keras_bert_impl.pipelines.question_answering import QuestionAnsweringPipeline
from keras_bert_impl.pipelines.sentence_similarity import SentenceSimilarityPipeline
from keras_bert_impl.pipelines.text_classification import TextClassificationPipeline
from keras_bert_impl.pipelines.token_classification import TokenClassificationPipeline
from keras_bert_impl.utils.errors import UserInputError

# The pipeline of each name (the name model classes register with, `checkpoints.task_registry`).
PIPELINES = {cls.task: cls for cls in (TextClassificationPipeline, TokenClassificationPipeline, QuestionAnsweringPipeline,
                                       MultipleChoicePipeline, FillMaskPipeline, FeatureExtractionPipeline,
                                       SentenceSimilarityPipeline)}


def task_aliases():
    """{alias: pipeline name}: transformers' other names of the tasks, as the registered classes declare them
    (e.g. "sentiment-analysis" for "text-classification", "ner" for "token-classification")."""
    return {alias: name for alias, name in task_registry.pipeline_aliases().items() if name in PIPELINES}


def pipeline(task, model=None, tokenizer=None, **options):
    """The pipeline of `task` on `model`.

    Args:
        task: "text-classification" (or "sentiment-analysis"), "token-classification" (or "ner"),
            "question-answering", "multiple-choice", "fill-mask", "feature-extraction" or "sentence-similarity".
        model: a model directory, a model name, a built task model, or an ONNX or LiteRT export folder.
        tokenizer: a `BertTokenizer` or a directory holding vocab.txt; default: the model's.
        **options: the pipeline's settings, by the recipes' flag names (see each pipeline's module).

    Returns:
        a `Pipeline`: call it on one input or a list of inputs.

    Raises:
        UserInputError: an unknown task or option, no model, or a model of another task.

    Examples:

    >>> import tempfile
    >>> from keras_bert_impl import BertBackbone, BertClassifier, BertConfig, BertTokenizer
    >>> directory = tempfile.mkdtemp()
    >>> tokenizer = BertTokenizer(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "a", "fine", "film"])
    >>> tokenizer.save_pretrained(directory)
    >>> BertClassifier(BertBackbone(BertConfig.preset("bert_tiny", vocab_size=8)), num_classes=2).save_pretrained(
    ...     directory, label_names=["negative", "positive"])
    >>> classifier = pipeline("sentiment-analysis", model=directory)
    >>> [answer["label"] in ("negative", "positive") for answer in classifier(["a fine film", "a film"])]
    [True, True]
    >>> sorted(classifier("a fine film", top_k=None)[0])
    ['label', 'score']
    """
    aliases = task_aliases()
    name = aliases.get(task, task)
    if name not in PIPELINES:
        raise UserInputError(f"Unknown pipeline task {task!r}; expected one of {', '.join([*PIPELINES, *aliases])}.")
    if model is None:
        raise UserInputError(f"pipeline({task!r}) needs model=: a model directory, a model name or a built task model.")
    return PIPELINES[name](model, tokenizer=tokenizer, **options)


__all__ = ["PIPELINES", "Pipeline", "pipeline", *sorted(cls.__name__ for cls in PIPELINES.values())]
