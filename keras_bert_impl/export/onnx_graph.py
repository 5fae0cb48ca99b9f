"""OnnxGraph: an ONNX graph written node by node with the `onnx` package's helper API, its weights as
initializers, unique names, and the nodes no output reads left out when the model is made.

Needs only the `onnx` package (no TensorFlow, no exporter): the ONNX export (`export/onnx_export.py`) writes
every node of a model's graph through it, whatever the Keras backend.
"""

import numpy as np

# onnxruntime's contrib operators (Attention, SkipLayerNormalization, BiasGelu, ...): docs/ContribOperators.md
# of microsoft/onnxruntime.
MICROSOFT = "com.microsoft"
# The standard opset the graphs are written in (LayerNormalization needs 17).
DEFAULT_OPSET = 17
# The ONNX IR version of the files: onnxruntime 1.16 and later read it.
IR_VERSION = 8


def float32(value):
    """A Keras variable or tensor (any backend, any float dtype) as a float32 numpy array."""
    import keras

    return np.asarray(keras.ops.convert_to_numpy(value), dtype=np.float32)


class OnnxGraph:
    """An ONNX graph under construction.

    `node` appends a node and returns the names of its outputs; `weight` and `constant` add initializers;
    `input` and `output` declare the graph's inputs and outputs; `model` returns the `onnx.ModelProto`, without
    the nodes whose outputs nothing reads.

    Examples:

    >>> graph = OnnxGraph()
    >>> x = graph.input("x", np.float32, ["batch", 3])
    >>> y = graph.node("MatMul", [x, graph.weight(np.ones((3, 2), np.float32), "kernel")], "dense")
    >>> graph.output(graph.node("Relu", [y], "relu"), "y", ["batch", 2])
    >>> [node.op_type for node in graph.model().graph.node]
    ['MatMul', 'Relu', 'Identity']
    """

    def __init__(self):
        self._nodes, self._initializers, self._inputs, self._outputs = [], [], [], []
        self._taken = set()
        self._constants = {}

    def unique(self, name):
        """`name`, or `name_1`, `name_2`, ... if it is taken; marks the result taken."""
        candidate, suffix = name, 0
        while candidate in self._taken:
            suffix += 1
            candidate = f"{name}_{suffix}"
        self._taken.add(candidate)
        return candidate

    def reserve(self, name):
        """Keeps `name` (a graph output's) from the names `unique` gives."""
        self._taken.add(name)

    def weight(self, array, name, key=None):
        """An initializer holding `array` (its dtype kept), under a unique name derived from `name`; with a
        `key` (e.g. a variable's path), one initializer per key (a weight two layers read, stored once)."""
        from onnx import numpy_helper

        if key is not None and ("weight", key) in self._constants:
            return self._constants[("weight", key)]
        name = self.unique(name)
        self._initializers.append(numpy_helper.from_array(np.array(array, order="C"), name))
        if key is not None:
            self._constants[("weight", key)] = name
        return name

    def constant(self, values, dtype=np.int64):
        """An initializer of `values` (shapes, axes, indices), one per distinct value and dtype."""
        array = np.asarray(values, dtype=dtype)
        key = (array.dtype.str, array.shape, array.tobytes())
        if key not in self._constants:
            self._constants[key] = self.weight(array, "const")
        return self._constants[key]

    def node(self, op_type, inputs, name, outputs=1, domain=None, node_name=None, **attributes):
        """Appends an `op_type` node (of `domain`, None: the standard one) reading `inputs` (names; "" for an
        omitted optional input) and returns its output name, or the list of `outputs` names. The node is named
        `name`, or `node_name` where given (onnxruntime names a failing node by it in its error)."""
        from onnx import helper

        name = self.unique(name)
        names = [name] if outputs == 1 else [self.unique(f"{name}:{i}") for i in range(outputs)]
        self._nodes.append(helper.make_node(op_type, list(inputs), names, name=node_name or name, domain=domain,
                                            **attributes))
        return names[0] if outputs == 1 else names

    def input(self, name, dtype, dims):
        """Declares the graph input `name` of numpy `dtype` and `dims` (ints, or strings naming free axes)."""
        from onnx import helper

        self._taken.add(name)
        self._inputs.append(helper.make_tensor_value_info(name, helper.np_dtype_to_tensor_dtype(np.dtype(dtype)),
                                                          dims))
        return name

    def output(self, value, name, dims=None, dtype=np.float32):
        """Declares the value `value` as the graph output `name` (through an Identity node named so)."""
        from onnx import helper

        self._taken.add(name)
        self._nodes.append(helper.make_node("Identity", [value], [name], name=f"{name}:output"))
        self._outputs.append(helper.make_tensor_value_info(name, helper.np_dtype_to_tensor_dtype(np.dtype(dtype)),
                                                           dims))

    def model(self, opset_version=None, graph_name="model"):
        """The `onnx.ModelProto` of the graph (standard opset `opset_version`, default `DEFAULT_OPSET`, and
        onnxruntime's contrib opset), without the nodes and initializers no output depends on."""
        from onnx import helper

        nodes, initializers = self._reachable()
        graph = helper.make_graph(nodes, graph_name, self._inputs, self._outputs, initializers)
        opsets = [helper.make_opsetid("", opset_version or DEFAULT_OPSET)]
        if any(node.domain == MICROSOFT for node in nodes):
            opsets.append(helper.make_opsetid(MICROSOFT, 1))
        model = helper.make_model(graph, opset_imports=opsets, producer_name="keras_bert_impl")
        model.ir_version = IR_VERSION
        return model

    def _reachable(self):
        """The nodes (in order) and initializers that the outputs depend on."""
        wanted = {output.name for output in self._outputs}
        kept = []
        for node in reversed(self._nodes):
            if wanted.intersection(node.output):
                kept.append(node)
                wanted.update(name for name in node.input if name)
        return kept[::-1], [init for init in self._initializers if init.name in wanted]
