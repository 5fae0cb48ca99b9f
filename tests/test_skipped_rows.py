"""Served [CLS] heads (the classifier and multiple choice) compute the last encoder layer's attention output and
feed-forward for the [CLS] row only: in Keras `predict` on every backend, in the SavedModel and LiteRT exports
(TensorFlow), with the logits of the whole layer. (The ONNX export: tests/test_onnx_export.py.)"""

import keras
import numpy as np
import pytest

from keras_bert_impl import BertBackbone, BertClassifier, BertMultipleChoice
from tests.backend_utils import to_numpy
from tests.task_harness import TINY, TOKENIZER
from tests.test_task_models import _inputs, _multiple_choice_batch

TENSORFLOW = keras.backend.backend() == "tensorflow"


def _model(head):
    if head == "classifier":
        return BertClassifier(BertBackbone(TINY), num_classes=3), _inputs()
    return BertMultipleChoice(BertBackbone(TINY), num_choices=4), _multiple_choice_batch()[0]


def _feed_forward_row_shapes(backbone, run):
    """The [batch, rows] shapes (None where symbolic) of the inputs of the last block's feed-forward while
    `run()` computes or traces the model."""
    dense = backbone.encoder_blocks[-1].intermediate_dense
    shapes, call = [], dense.call
    dense.call = lambda x, *args, **kwargs: shapes.append(tuple(x.shape[:-1])) or call(x, *args, **kwargs)
    try:
        run()
    finally:
        del dense.call
    return shapes


def _whole_layer_logits(model, x):
    """The head on the backbone's `pooled_output` computed with the last layer at every row."""
    flat = {k: v.reshape(-1, v.shape[-1]) for k, v in x.items()}
    pooled = to_numpy(model.backbone(flat, training=False)["pooled_output"])
    logits = pooled @ to_numpy(model.output_dense.kernel) + to_numpy(model.output_dense.bias)
    return logits.reshape(x["token_ids"].shape[0], -1)


@pytest.mark.parametrize("head", ["classifier", "multiple_choice"])
def test_predict_computes_the_last_feed_forward_at_the_cls_row_with_the_whole_layers_logits(head):
    model, x = _model(head)
    shapes = _feed_forward_row_shapes(model.backbone, lambda: model.predict(x, verbose=0))
    assert shapes and all(shape[1] == 1 for shape in shapes), shapes
    np.testing.assert_allclose(model.predict(x, verbose=0), _whole_layer_logits(model, x), atol=1e-5)


@pytest.mark.skipif(not TENSORFLOW, reason="the SavedModel export runs under the TensorFlow backend")
@pytest.mark.parametrize("head", ["classifier", "multiple_choice"])
@pytest.mark.tensorflow
def test_the_savedmodel_computes_the_last_feed_forward_at_the_cls_row(head, tmp_path):
    """The rows each layer's feed-forward product computes, read from TensorFlow's trace of a served call
    (the output shapes of the ops run), with the logits of the whole layer."""
    import re

    import tensorflow as tf
    import tensorflow_text  # noqa: F401 (the raw-text signature's ops, for the loader)

    from keras_bert_impl.export.tf_saved_model import export_saved_model

    model, x = _model(head)
    directory = str(tmp_path / "saved")
    export_saved_model(model, TOKENIZER, directory, head, labels=["a", "b", "c"] if head == "classifier" else None)
    with tf.compat.v1.Session(graph=tf.Graph()) as session:
        signature = tf.compat.v1.saved_model.loader.load(session, ["serve"], directory).signature_def["serving_token_ids"]
        trace = tf.compat.v1.RunMetadata()
        served = session.run({k: v.name for k, v in signature.outputs.items()},
                             {signature.inputs[k].name: v for k, v in x.items()}, run_metadata=trace,
                             options=tf.compat.v1.RunOptions(trace_level=tf.compat.v1.RunOptions.FULL_TRACE))
    np.testing.assert_allclose(next(iter(served.values())), _whole_layer_logits(model, x), atol=1e-4)
    rows = {}
    for node in (node for device in trace.step_stats.dev_stats for node in device.node_stats):
        # The product's op: MatMul, or BiasAdd once TensorFlow's oneDNN fuses the two.
        layer = re.search(r"transformer_layer_(\d+)[_\d]*/intermediate_dense[_\d]*/(MatMul|BiasAdd)$", node.node_name)
        for output in node.output if layer else ():
            shape = [d.size for d in output.tensor_description.shape.dim]
            if len(shape) == 2 and shape[1] == TINY.intermediate_size:
                rows.setdefault(int(layer.group(1)), set()).add(shape[0])
    sequences, tokens = int(np.prod(x["token_ids"].shape[:-1])), x["token_ids"].shape[-1]
    assert rows == {i: {sequences if i == TINY.num_hidden_layers - 1 else sequences * tokens}
                    for i in range(TINY.num_hidden_layers)}


@pytest.mark.skipif(not TENSORFLOW, reason="the LiteRT export runs under the TensorFlow backend")
@pytest.mark.parametrize("head", ["classifier", "multiple_choice"])
@pytest.mark.tensorflow
def test_litert_runs_the_last_feed_forward_on_one_row_per_sequence(head, tmp_path):
    from ai_edge_litert.interpreter import Interpreter, OpResolverType

    from keras_bert_impl.export.tf_litert import export_litert

    model, x = _model(head)
    # Without the XNNPACK delegate, whose ops keep their tensors' shapes to themselves.
    interpreter = Interpreter(model_path=export_litert(model, str(tmp_path / "model.tflite")),
                              experimental_op_resolver_type=OpResolverType.BUILTIN_WITHOUT_DEFAULT_DELEGATES)
    served = interpreter.get_signature_runner()(**x)["logits"]  # resizes the inputs to x's shapes
    np.testing.assert_allclose(served, _whole_layer_logits(model, x), atol=1e-4)
    tensors = {t["index"]: t for t in interpreter.get_tensor_details()}
    rows = sorted(int(np.prod(tensors[op["inputs"][0]]["shape"][:-1]))
                  for op in interpreter._get_ops_details() if op["op_name"] == "FULLY_CONNECTED"
                  and tuple(tensors[op["inputs"][1]]["shape"]) == (TINY.intermediate_size, TINY.hidden_size))
    sequences, tokens = int(np.prod(x["token_ids"].shape[:-1])), x["token_ids"].shape[-1]
    assert rows == [sequences] + [sequences * tokens] * (TINY.num_hidden_layers - 1)
