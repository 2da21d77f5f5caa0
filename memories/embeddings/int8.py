"""Run the bundled model's int8 weights as int8.

The graph is rewritten before the session is made, so the weights stay 8-bit in memory and
the products run, exactly on every CPU, on its integer instructions. Design notes:
docs/internals.md#the-models-int8-weights.
"""

from __future__ import annotations

from functools import cache
from typing import Any

import numpy as np
import numpy.typing as npt
import onnx
import onnxruntime
from onnx import TensorProto, helper, numpy_helper

from memories.embeddings.errors import EmbeddingsError

_WEIGHT_ZERO = "int8_weight_zero_point"


def integer_weights(
    model_bytes: bytes, *, products: int, lookups: int, unsigned: bool = False
) -> bytes:
    """The model with its int8 weights used as int8 (above), as bytes for onnxruntime; with
    `unsigned`, its products' weights shifted to uint8. `products` and `lookups` are how many
    of each the pinned file has: any other count means the graph is not the one this was
    written for, and it is refused."""
    model = onnx.load_from_string(model_bytes)
    graph = model.graph
    int8 = {tensor.name for tensor in graph.initializer if tensor.data_type == TensorProto.INT8}
    constant = {tensor.name for tensor in graph.initializer}
    made_by = {output: node for node in graph.node for output in node.output}
    readers: dict[str, int] = {}
    for node in graph.node:
        for name in node.input:
            readers[name] = readers.get(name, 0) + 1

    def int8_weights(name: str) -> tuple[Any, Any] | None:
        """(Cast, Mul) when `name` is `Cast(W_q) * scale`, both read only once."""
        scale = made_by.get(name)
        if scale is None or scale.op_type != "Mul" or scale.input[1] not in constant:
            return None
        cast = made_by.get(scale.input[0])
        if cast is None or cast.op_type != "Cast" or cast.input[0] not in int8:
            return None
        if readers.get(scale.output[0]) != 1 or readers.get(cast.output[0]) != 1:
            return None
        return cast, scale

    nodes: list[Any] = []
    replaced: set[int] = set()  # the Cast and Mul nodes that made float32 weights
    quantized: dict[str, list[str]] = {}  # an input -> its 8-bit form, scale and zero point
    done = {"MatMul": 0, "Gather": 0}
    for node in graph.node:
        position = {"MatMul": 1, "Gather": 0}.get(node.op_type)
        weights = int8_weights(node.input[position]) if position is not None else None
        if weights is None:
            nodes.append(node)
            continue
        cast, scale = weights
        replaced.update((id(cast), id(scale)))
        done[node.op_type] += 1
        w_q, w_scale, out = cast.input[0], scale.input[1], node.output[0]
        if node.op_type == "Gather":
            ids = node.input[1]
            nodes += [
                helper.make_node("Gather", [w_q, ids], [f"{out}_i8"], **_attributes(node)),
                helper.make_node("Gather", [w_scale, ids], [f"{out}_scale"], **_attributes(node)),
                helper.make_node("Cast", [f"{out}_i8"], [f"{out}_f32"], to=TensorProto.FLOAT),
                helper.make_node("Mul", [f"{out}_f32", f"{out}_scale"], [out]),
            ]
            continue
        x = node.input[0]
        if x not in quantized:
            quantized[x] = [f"{x}_u8", f"{x}_u8_scale", f"{x}_u8_zero"]
            nodes.append(helper.make_node("DynamicQuantizeLinear", [x], quantized[x]))
        x_u8, x_scale, x_zero = quantized[x]
        nodes += [
            helper.make_node("MatMulInteger", [x_u8, w_q, x_zero, _WEIGHT_ZERO], [f"{out}_i32"]),
            helper.make_node("Cast", [f"{out}_i32"], [f"{out}_f32"], to=TensorProto.FLOAT),
            helper.make_node("Mul", [x_scale, w_scale], [f"{out}_scale"]),
            helper.make_node("Mul", [f"{out}_f32", f"{out}_scale"], [out]),
        ]
    if (done["MatMul"], done["Gather"]) != (products, lookups):
        raise EmbeddingsError(
            f"The embedding model has {done['MatMul']} int8 weight products and "
            f"{done['Gather']} int8 lookups where {products} and {lookups} were expected: it "
            "is not the file this server was built for."
        )
    kept = [node for node in nodes if id(node) not in replaced]
    del graph.node[:]
    graph.node.extend(kept)  # the new nodes stand where the node they replace stood
    if unsigned:
        to_shift = {node.input[1] for node in kept if node.op_type == "MatMulInteger"}
        for tensor in graph.initializer:
            if tensor.name in to_shift:
                stored = _stored(numpy_helper.to_array(tensor), unsigned=True)
                tensor.CopyFrom(numpy_helper.from_array(stored, tensor.name))
    graph.initializer.append(numpy_helper.from_array(_zero(unsigned=unsigned), _WEIGHT_ZERO))
    data: bytes = model.SerializeToString()
    return data


def _stored(weights: npt.NDArray[np.int8], *, unsigned: bool) -> npt.NDArray[Any]:
    """int8 weights as a product reads them: as they are, or shifted to uint8 (+128)."""
    return (weights.astype(np.int16) + 128).astype(np.uint8) if unsigned else weights


def _zero(*, unsigned: bool) -> npt.NDArray[Any]:
    """The zero point of weights stored by `_stored`."""
    return np.array(128, dtype=np.uint8) if unsigned else np.array(0, dtype=np.int8)


def integer_product(
    x: npt.NDArray[np.uint8], weights: npt.NDArray[np.int8], *, unsigned: bool
) -> npt.NDArray[np.int32]:
    """x @ weights as onnxruntime's MatMulInteger computes it on this CPU, the weights stored
    (constant, as in the model) the way integer_weights stores them with `unsigned`."""
    graph = helper.make_graph(
        [helper.make_node("MatMulInteger", ["x", "w", "", "zero"], ["y"])],
        "product",
        [helper.make_tensor_value_info("x", TensorProto.UINT8, list(x.shape))],
        [helper.make_tensor_value_info("y", TensorProto.INT32, None)],
        [
            numpy_helper.from_array(_stored(weights, unsigned=unsigned), "w"),
            numpy_helper.from_array(_zero(unsigned=unsigned), "zero"),
        ],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = 1
    options.log_severity_level = 3
    session = onnxruntime.InferenceSession(
        model.SerializeToString(), sess_options=options, providers=["CPUExecutionProvider"]
    )
    product: npt.NDArray[np.int32] = session.run(["y"], {"x": x})[0]
    return product


@cache
def signed_products_are_exact() -> bool:
    """Whether onnxruntime multiplies uint8 by int8 exactly on this CPU: asked with the
    widest values, whose pairs of products overflow 16 bits."""
    widest = np.full((4, 64), 255, dtype=np.uint8)
    weights = np.full((64, 16), 127, dtype=np.int8)
    return bool((integer_product(widest, weights, unsigned=False) == 255 * 127 * 64).all())


def _attributes(node: Any) -> dict[str, Any]:
    return {attribute.name: helper.get_attribute_value(attribute) for attribute in node.attribute}
