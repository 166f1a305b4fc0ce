#!/usr/bin/env python3
"""Times a cross-encoder ONNX file in onnxruntime: one query against the first 50 documents of a
BEIR corpus, every pair cut at MAX_TOKENS, five runs after a warm-up, p50 and min printed. It is
the measurement behind "no reranking tier" in BENCHMARKS.md (needs onnxruntime and tokenizers).

    python3 rerank_timing.py MODEL_DIR CORPUS.jsonl MAX_TOKENS [THREADS]
"""
import json
import sys
import time

import numpy as np
import onnxruntime as ort
from tokenizers import Tokenizer

model_dir, corpus_path, max_tokens = sys.argv[1], sys.argv[2], int(sys.argv[3])
threads = int(sys.argv[4]) if len(sys.argv) > 4 else 2
tok = Tokenizer.from_file(f"{model_dir}/tokenizer.json")
tok.enable_truncation(max_tokens)
tok.enable_padding()
options = ort.SessionOptions()
options.intra_op_num_threads = threads
session = ort.InferenceSession(f"{model_dir}/model.onnx", options, providers=["CPUExecutionProvider"])
with open(corpus_path) as f:
    docs = [json.loads(line) for line, _ in zip(f, range(50))]
query = "Vitamin D deficiency is associated with an increased risk of tuberculosis."
enc = tok.encode_batch([(query, d["title"] + " " + d["text"]) for d in docs])
feed = {
    "input_ids": np.array([e.ids for e in enc], np.int64),
    "attention_mask": np.array([e.attention_mask for e in enc], np.int64),
    "token_type_ids": np.array([e.type_ids for e in enc], np.int64),
}
session.run(None, feed)
times = []
for _ in range(5):
    started = time.perf_counter()
    session.run(None, feed)
    times.append((time.perf_counter() - started) * 1000)
times.sort()
print(f"{len(docs)} pairs of {feed['input_ids'].shape[1]} tokens, {threads} threads: "
      f"p50 {times[2]:.0f} ms, min {times[0]:.0f} ms")
