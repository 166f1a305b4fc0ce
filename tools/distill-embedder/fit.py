"""Sentence fit: train the token table so that the normalised sum of a text's
rows matches the teacher's sentence embedding of that text (README.md,
"Sentence fit").

The single-token table of ``distill.py`` sees every token alone; what a token
contributes to a real sentence differs, and the Zipf weighting guesses each
token's importance from its vocabulary id. Here both are learned from the
teacher's embeddings of real text: a few epochs of Adam on the cosine between
the student's pooled vector and the teacher's, starting from the single-token
table and pulled towards it by an L2 penalty, so that tokens the corpus shows
rarely or never keep their distilled rows.
"""

from __future__ import annotations

import hashlib
import time
from pathlib import Path

import numpy as np
import scipy.sparse as sp

# The teacher's sequence limit (sentence_bert_config.json: max_seq_length 256):
# longer texts are left out rather than truncated, so every target is exact.
MAX_LEN = 256
# Tokens per encoder batch; texts are sorted by length so padding stays small.
BATCH_TOKENS = 4096
BLOCK = 4000  # texts per cache checkpoint


def _text_key(text: str) -> int:
    return int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "little")


def teacher_targets(bert, tok, texts: list[str], cache: Path | None) -> np.ndarray:  # noqa: ANN001
    """Teacher sentence embeddings (the model's pooling over [CLS] .. [SEP], L2-normalised), N x hidden.

    Texts are encoded in blocks of BLOCK. With ``cache``, each finished block
    is added to the cache file, keyed by a hash of each text, and every text
    already there is reused: a longer run only encodes what is new, and a
    shorter one encodes nothing.
    """
    out = np.zeros((len(texts), bert.hidden), dtype=np.float32)
    keys = np.array([_text_key(t) for t in texts], dtype=np.uint64)
    known: dict[int, int] = {}
    c_keys = np.zeros(0, dtype=np.uint64)
    c_targets = np.zeros((0, bert.hidden), dtype=np.float32)
    if cache and cache.exists():
        z = np.load(cache)
        c_keys, c_targets = z["keys"], z["targets"]
        known = {int(k): i for i, k in enumerate(c_keys)}
    todo = [i for i, k in enumerate(keys) if int(k) not in known]
    for i, k in enumerate(keys):
        if int(k) in known:
            out[i] = c_targets[known[int(k)]]
    if cache:
        print(f"  {len(texts) - len(todo)} of {len(texts)} teacher embeddings from {cache}")
    blocks = [todo[s : s + BLOCK] for s in range(0, len(todo), BLOCK)]
    t0 = time.process_time()
    for n_block, block in enumerate(blocks, 1):
        rows = np.array(block)
        ids = [[tok.cls] + tok.encode(texts[i]) + [tok.sep] for i in block]
        order = np.argsort([len(x) for x in ids], kind="stable")
        b = 0
        while b < len(order):
            n = 1
            while b + n < len(order) and (n + 1) * len(ids[order[b + n]]) <= BATCH_TOKENS:
                n += 1
            sel = order[b : b + n]
            width = len(ids[sel[-1]])
            arr = np.zeros((len(sel), width), dtype=np.int64)
            mask = np.zeros((len(sel), width), dtype=np.float32)
            for r, j in enumerate(sel):
                arr[r, : len(ids[j])] = ids[j]
                mask[r, : len(ids[j])] = 1.0
            hs = bert.forward(arr, mask if width > len(ids[sel[0]]) else None)
            out[rows[sel]] = bert.pool(hs, mask)
            b += n
        out[rows] /= np.linalg.norm(out[rows], axis=1, keepdims=True)
        cpu = time.process_time() - t0
        print(f"  teacher: block {n_block}/{len(blocks)} ({len(block)} texts), {cpu:.0f} s CPU", flush=True)
        if cache:
            c_keys = np.concatenate([c_keys, keys[rows]])
            c_targets = np.concatenate([c_targets, out[rows]])
            tmp = cache.with_name(cache.name + ".tmp.npz")
            np.savez(tmp, keys=c_keys, targets=c_targets)
            tmp.replace(cache)
    return out


def held_out(text: str) -> bool:
    """About one text in 32, by hash: kept out of training to watch the fit."""
    return hashlib.sha256(text.encode()).digest()[0] < 8


def bag_of_tokens(tok, texts: list[str], vocab_size: int, skip: set[int]) -> sp.csr_matrix:  # noqa: ANN001
    """N x V token counts, pooled tokens only (what the Rust side sums)."""
    indptr, indices = [0], []
    for t in texts:
        indices.extend(i for i in tok.encode(t) if i not in skip)
        indptr.append(len(indices))
    data = np.ones(len(indices), dtype=np.float32)
    m = sp.csr_matrix((data, np.array(indices, dtype=np.int64), np.array(indptr)), shape=(len(texts), vocab_size))
    m.sum_duplicates()
    return m


def sentence_basis(targets: np.ndarray, dims: int) -> tuple[np.ndarray, float]:
    """Top right singular vectors of the (uncentred) targets: keeps their cosines best."""
    _, s, vt = np.linalg.svd(targets.astype(np.float64), full_matrices=False)
    vecs = vt[:dims].T
    signs = np.sign(vecs[np.abs(vecs).argmax(axis=0), np.arange(dims)])
    kept = float((s[:dims] ** 2).sum() / (s**2).sum())
    return (vecs * signs).astype(np.float32), kept


def _cosines(x: sp.csr_matrix, w: np.ndarray, y: np.ndarray) -> np.ndarray:
    p = np.asarray(x @ w)
    n = np.linalg.norm(p, axis=1)
    return np.where(n > 0, (p * y).sum(axis=1) / np.maximum(n, 1e-12), 0.0)


def fit(
    x: sp.csr_matrix,
    y: np.ndarray,
    w0: np.ndarray,
    held: np.ndarray,
    epochs: int,
    lr: float,
    l2: float,
    batch: int = 512,
    seed: int = 0,
) -> tuple[np.ndarray, list[dict]]:
    """Adam on mean(1 - cos(x_i W, y_i)) + l2 * mean over rows of |W_r - W0_r|^2 / mean |W0_r|^2.

    ``y`` rows are unit vectors; ``held`` marks texts kept out of training and
    used to report the held-out cosine after every epoch. Returns the table
    of the epoch with the best held-out cosine and the per-epoch log.
    """
    train = np.flatnonzero(~held)
    xh, yh = x[held], y[held]
    # Scale the table so that an average row has norm 1: lr is then relative.
    scale = float(np.sqrt((w0**2).sum(axis=1).mean()))
    w0s = (w0 / scale).astype(np.float32)
    w = w0s.copy()
    m = np.zeros_like(w)
    v = np.zeros_like(w)
    b1, b2, eps = 0.9, 0.999, 1e-8
    rng = np.random.default_rng(seed)
    reg = np.float32(2.0 * l2 / w.shape[0])
    best = (float(_cosines(xh, w, yh).mean()), w.copy(), 0)
    log = [{"epoch": 0, "held_out_cos": round(best[0], 4)}]
    print(f"  epoch 0: held-out cosine {best[0]:.4f}", flush=True)
    step = 0
    t0 = time.process_time()
    for ep in range(1, epochs + 1):
        perm = rng.permutation(train)
        tl = 0.0
        for s in range(0, len(perm), batch):
            idx = perm[s : s + batch]
            xb = x[idx]
            p = np.asarray(xb @ w)
            n = np.maximum(np.linalg.norm(p, axis=1, keepdims=True), 1e-12)
            u = p / n
            yb = y[idx]
            c = (u * yb).sum(axis=1, keepdims=True)
            tl += float((1.0 - c).sum())
            gp = -(yb - c * u) / n / len(idx)
            g = np.asarray(xb.T @ gp) + reg * (w - w0s)
            step += 1
            m *= b1
            m += (1 - b1) * g
            v *= b2
            v += (1 - b2) * g * g
            mh = m / (1 - b1**step)
            vh = v / (1 - b2**step)
            w -= lr * mh / (np.sqrt(vh) + eps)
        held_cos = float(_cosines(xh, w, yh).mean())
        log.append({"epoch": ep, "train_loss": round(tl / len(perm), 4), "held_out_cos": round(held_cos, 4)})
        print(
            f"  epoch {ep}: train 1-cos {tl / len(perm):.4f}, held-out cosine {held_cos:.4f}, "
            f"{time.process_time() - t0:.0f} s CPU",
            flush=True,
        )
        if held_cos > best[0]:
            best = (held_cos, w.copy(), ep)
    print(f"  best epoch {best[2]}: held-out cosine {best[0]:.4f}")
    return best[1] * scale, log
