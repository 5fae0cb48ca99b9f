"""int8 for the ONNX export: onnxruntime's dynamic quantization of the graph `export/onnx_export.py` writes.

`quantize` gives the products int8 weights (one scale per output column) and quantizes their inputs per call
(`quantize_dynamic`): each encoder `Attention` becomes a `QAttention`, each `MatMul` a `MatMulInteger` (which
onnxruntime runs as `DynamicQuantizeMatMul`). The embeddings (`EmbedLayerNormalization`, the masked-LM head's
product with them), the LayerNorms, the GELU, the attention's softmax and the [CLS]-row `MultiHeadAttention`
stay float32: the lookups are not products, and the file keeps their float tables. The choices, measured on
the fine-tuned MiniLM classifier and NER tagger, are in benchmarks/results/int8_accuracy/.
"""

import os
import tempfile

# The operators whose products get int8 weights.
QUANTIZED_OPERATORS = ("MatMul", "Attention")


def quantize(graph_model, path):
    """Writes the dynamic int8 quantization of `graph_model` (an `onnx.ModelProto` written by `onnx_model`)
    to `path`."""
    import onnx
    from onnxruntime.quantization import QuantType, quantize_dynamic

    with tempfile.TemporaryDirectory() as work:
        float_path = os.path.join(work, "float32.onnx")
        onnx.save(graph_model, float_path)
        quantize_dynamic(float_path, path, op_types_to_quantize=list(QUANTIZED_OPERATORS), per_channel=True,
                         weight_type=QuantType.QInt8,
                         # The outputs of onnxruntime's own operators, which ONNX's type inference does not
                         # know, are float32.
                         extra_options={"DefaultTensorType": onnx.TensorProto.FLOAT, "MatMulConstBOnly": True})
