"""`PortableExport`: Keras' `model.export(path, format=...)` on the package's models, "litert" and "onnx" written
by the package's exporters (`export.tf_litert.export_litert`: LiteRT builtin operators only, so the stock
`ai_edge_litert` interpreter runs the file; `export.onnx_export.export_onnx`), every other format by Keras.

The exporters sit in the `export` tier, above `models`: they are found by module name when `export` is called
(`EXPORTERS`), as the export is a TensorFlow graph (LiteRT) or needs the `onnx` package, neither of which a
model imports. An exporter that uses Keras' own export calls `keras.Model.export(model, ...)`.
"""

import importlib

# format -> (module, function, the keyword arguments it takes besides the model and the path).
EXPORTERS = {
    "litert": ("keras_bert_impl.export.tf_litert", "export_litert", ("batch_size", "quantization")),
    "onnx": ("keras_bert_impl.export.onnx_export", "export_onnx", ("opset_version",)),
}


class PortableExport:
    """Mixin of `BertBackbone` and `BertTaskModel`: `export(path, format="litert" | "onnx")` writes what
    `export_litert` / `export_onnx` write; `format="tf_saved_model"` (the default) and Keras' other formats
    are Keras' own."""

    def export(self, filepath, format="tf_saved_model", verbose=None, input_signature=None, **kwargs):
        """Exports the model: `format` "litert" (a `.tflite` file the stock LiteRT interpreter runs; keyword
        arguments `batch_size`, `quantization`) or "onnx" (a `.onnx` file with dynamic batch and sequence axes;
        `opset_version`) through the package's exporters, the model's own inputs as the signature; any other
        format through `keras.Model.export`.

        Raises:
            TypeError: an `input_signature` or a keyword argument that the package's exporter does not take.
            keras_bert_impl.utils.optional_dependencies.MissingDependencyError: the exporter's packages are not
                installed (one line naming the pip command; nothing is written).
        """
        if format not in EXPORTERS:
            return super().export(filepath, format=format, verbose=verbose, input_signature=input_signature,
                                  **kwargs)
        module, function, accepted = EXPORTERS[format]
        unknown = sorted(set(kwargs) - set(accepted)) + (["input_signature"] if input_signature is not None else [])
        if unknown:
            raise TypeError(f"{type(self).__name__}.export(format={format!r}) takes {', '.join(accepted)}; not "
                            f"{', '.join(unknown)} (the signature is the model's own inputs).")
        return getattr(importlib.import_module(module), function)(self, filepath, **kwargs)
