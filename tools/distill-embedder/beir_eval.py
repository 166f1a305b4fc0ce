"""Vector-only retrieval quality of a table on a BEIR-layout folder (evaluation only).

A quick stand-in for ``openhumand-mcp eval --methods vector`` while choosing
among a few settings: each document is embedded whole as "title\\ntext" (the
daemon's chunk text; it splits the few documents over 500 tokens into chunks,
which this ignores), each query as is, ranked by cosine; nDCG@10 with binary
gains. The daemon's own eval is the figure of record.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np


class Beir:
    def __init__(self, folder: Path, encode) -> None:  # noqa: ANN001
        docs = [json.loads(line) for line in (folder / "corpus.jsonl").read_text().splitlines() if line.strip()]
        queries = [json.loads(line) for line in (folder / "queries.jsonl").read_text().splitlines() if line.strip()]
        self.doc_ids = [str(d["_id"]) for d in docs]
        index = {d: i for i, d in enumerate(self.doc_ids)}
        rel: dict[str, set[int]] = {}
        for line in (folder / "qrels.tsv").read_text().splitlines():
            f = line.split("\t")
            if len(f) >= 3 and f[2].strip().lstrip("-").isdigit() and int(f[2]) > 0 and f[1] in index:
                rel.setdefault(f[0], set()).add(index[f[1]])
        queries = [q for q in queries if str(q["_id"]) in rel]
        self.rel = [rel[str(q["_id"])] for q in queries]

        def text(d: dict) -> str:
            title = (d.get("title") or "").strip()
            return f"{title}\n{d['text']}" if title and d["text"].strip() else (d["text"] or title)

        self.doc_tokens = [encode(text(d)) for d in docs]
        self.query_tokens = [encode(q["text"]) for q in queries]

    @staticmethod
    def _embed(table: np.ndarray, tokens: list[list[int]], skip: set[int]) -> np.ndarray:
        out = np.zeros((len(tokens), table.shape[1]), dtype=np.float32)
        for i, ids in enumerate(tokens):
            ids = [t for t in ids if t not in skip]
            if ids:
                out[i] = table[ids].sum(axis=0)
        n = np.linalg.norm(out, axis=1, keepdims=True)
        return out / np.maximum(n, 1e-12)

    def ndcg10(self, table: np.ndarray, skip: set[int]) -> float:
        d = self._embed(table, self.doc_tokens, skip)
        q = self._embed(table, self.query_tokens, skip)
        scores = q @ d.T
        top = np.argsort(-scores, axis=1, kind="stable")[:, :10]
        disc = 1.0 / np.log2(np.arange(2, 12))
        total = 0.0
        for row, rel in zip(top, self.rel):
            dcg = sum(disc[r] for r, doc in enumerate(row) if doc in rel)
            total += dcg / disc[: min(len(rel), 10)].sum()
        return total / len(self.rel)
