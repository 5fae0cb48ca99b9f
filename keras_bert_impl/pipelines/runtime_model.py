"""`RuntimeModel`: a model exported to ONNX or LiteRT (recipes/export_savedmodel.py --format=onnx | litert), run
by onnxruntime or the stock `ai_edge_litert` interpreter, standing in for the Keras task model under the
pipelines, as optimum's ORT models stand in for transformers' under transformers' pipelines: token ids in, the
model's named outputs out (`predict_on_batch`), so the pipelines' windows, decoding, `top_k` and labels are the
ones they use on the Keras model.

An export folder is read as a model directory (`checkpoints.model_directory.ModelDirectory`): its config.json
(architectures, id2label, max_position_embeddings, max_seq_length), vocab.txt and tokenizer_config.json are the
ones a model directory has; export_config.json names the model's inputs and outputs. onnxruntime needs no
TensorFlow (the `[onnx]` extra holds onnx and onnxruntime); `ai_edge_litert` needs no TensorFlow either.

A batch longer than the model's position table (`max_position_embeddings`) is refused in one line, before the
runtime would fail inside its embedding gather.
"""

import inspect
import json
import os

import keras
import numpy as np

from keras_bert_impl.utils.errors import UserInputError
from keras_bert_impl.utils.optional_dependencies import require
from keras_bert_impl.utils.tensorflow_logs import filtered_stderr

# The model file of an export folder -> (its format, the runtime's import name, the runtime's pip package).
EXPORT_FILES = {"model.onnx": ("onnx", "onnxruntime", "onnxruntime"),
                "model.tflite": ("litert", "ai_edge_litert", "ai-edge-litert")}
EXPORT_CONFIG_FILE = "export_config.json"


def export_file(directory):
    """The exported model file of `directory` (model.onnx or model.tflite), or None when it holds none.

    Examples:

    >>> import tempfile
    >>> export_file(tempfile.mkdtemp()) is None
    True
    """
    for name in EXPORT_FILES:
        path = os.path.join(directory, name)
        if os.path.isfile(path):
            return path
    return None


class RuntimeModel:
    """The exported model of a folder, run by its runtime, with the attributes the pipelines read of a task
    model: `config` (the `BertConfig`), `preprocessor_class`, `num_choices`, `decode` (the model class's tag
    rule) and `predict_on_batch`.

    Args:
        checkpoint: the export folder's `ModelDirectory`.
        model_class: the task model class it was exported from (config.json's architectures).

    Raises:
        MissingDependencyError: the runtime is not installed (one line with the pip command).
        UserInputError: a folder without export_config.json, or a model fine-tuned with a CRF, whose
            transitions the export does not hold.
    """

    def __init__(self, checkpoint, model_class):
        self.path = export_file(checkpoint.directory)
        self.format, runtime, _ = EXPORT_FILES[os.path.basename(self.path)]
        settings_path = os.path.join(checkpoint.directory, EXPORT_CONFIG_FILE)
        if not os.path.isfile(settings_path):
            raise UserInputError(f"{settings_path}: missing; an export folder holds the export_config.json that "
                                 "recipes/export_savedmodel.py writes beside its model file.")
        with open(settings_path, encoding="utf-8") as f:
            self.settings = json.load(f)
        if checkpoint.setting("use_crf"):
            raise UserInputError(f"{self.path}: a CRF tagger's export holds its logits, not its transitions; "
                                 "serve it with its model directory or the SavedModel export.")
        require(f"a pipeline on {os.path.basename(self.path)}", "export", (runtime,))
        self.config = checkpoint.bert_config()
        self.model_class = model_class
        self.preprocessor_class = model_class.preprocessor_class
        self.output_names = list(self.settings["outputs"])
        # As the Keras model returns them: a dict, or its one tensor (a folder written before export_config.json
        # said which: the task models' one tensor output was "logits").
        self.returns_dict = self.settings.get("dict_outputs", self.output_names != ["logits"])
        self._run = self._onnx_runner() if self.format == "onnx" else self._litert_runner()

    @property
    def num_choices(self):
        """The number of choices of a multiple-choice export (its token_ids' fixed middle axis)."""
        return int(self._input_shapes["token_ids"][1])

    def decode(self, logits, label_mask):
        """The tags of a token classifier's logits: the argmax at the positions of `label_mask`, -100 elsewhere
        (`models.token_classifier.decode_tags`, the rule of a tagger without a CRF)."""
        from keras_bert_impl.models.token_classifier import decode_tags

        return np.asarray(keras.ops.convert_to_numpy(decode_tags(logits, label_mask)))

    def __getattr__(self, name):
        """The model class's decoding methods (`scores`, `example_logits`, `span_logits`, ...), run on this
        stand-in: the pipelines decode its outputs with the Keras model's own rules."""
        if name.startswith("_") or "model_class" not in self.__dict__:
            raise AttributeError(name)
        member = getattr(self.model_class, name)  # a property of the class (e.g. `preprocessor`) is not taken
        if not callable(member):
            raise AttributeError(name)
        return member.__get__(self) if inspect.isfunction(member) else member

    def predict_on_batch(self, x):
        """The model's outputs for a padded batch `x` (dict of int arrays): its one output as an array (a
        classifier's "logits", a sentence encoder's embeddings), or a dict of them named as the model names them."""
        length = np.shape(x["token_ids"])[-1]
        if length > self.config.max_position_embeddings:
            raise UserInputError(f"{self.path}: a batch of {length} tokens; the model reads at most "
                                 f"{self.config.max_position_embeddings} (its max_position_embeddings).")
        outputs = self._run({name: np.asarray(x[name], "int32") for name in self._input_shapes})
        return outputs if self.returns_dict else outputs[self.output_names[0]]

    def _onnx_runner(self):
        import onnxruntime

        session = onnxruntime.InferenceSession(self.path, providers=["CPUExecutionProvider"])
        self._input_shapes = {i.name: i.shape for i in session.get_inputs()}
        names = [o.name for o in session.get_outputs()]

        def run(inputs):
            return dict(zip(names, session.run(None, inputs)))

        return run

    def _litert_runner(self):
        from ai_edge_litert.interpreter import Interpreter

        interpreter = Interpreter(model_path=self.path)
        runner = interpreter.get_signature_runner()
        details = runner.get_input_details()
        self._input_shapes = {name: list(detail["shape_signature"]) for name, detail in details.items()}
        fixed_batch = any(shape[0] == 1 for shape in self._input_shapes.values())  # a recurrent model's batch of 1

        def invoke(inputs):
            if not fixed_batch:
                return runner(**inputs)
            rows = [runner(**{name: value[i:i + 1] for name, value in inputs.items()})
                    for i in range(len(inputs["token_ids"]))]
            return {name: np.concatenate([row[name] for row in rows]) for name in rows[0]}

        invoked = []

        def run(inputs):
            if invoked:
                return invoke(inputs)
            invoked.append(True)
            # The interpreter logs "INFO: Created TensorFlow Lite XNNPACK delegate for CPU." at its first invoke,
            # whatever TF_CPP_MIN_LOG_LEVEL says.
            with filtered_stderr():
                return invoke(inputs)

        return run
