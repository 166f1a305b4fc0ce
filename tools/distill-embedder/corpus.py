"""Training text for the sentence-level fit (see README.md, "Sentence fit").

Everything comes from Debian packages fetched with ``apt-get download`` and
read here straight from the ``.deb`` files (an ``ar`` archive holding
``data.tar.xz``), so no package has to be installed. Every file is checked
against the sha256 in ``SOURCES`` before use: the text, hence the table,
is reproducible.

The texts are of three kinds, on purpose:

- dictionary glosses (WordNet 3.0): one short text per sense, "lemmas: gloss;
  examples", covering the general and scientific vocabulary;
- quotations and short prose (the ``fortunes`` collection, Ambrose Bierce's
  *Devil's Dictionary*);
- technical prose, paragraph by paragraph (the *Debian Administrator's
  Handbook* and the Python tutorial, HOWTOs, FAQ and "What's New" pages).

The Python reference manual and library pages are left out: the pydoc topic
texts that ``distill.py`` evaluates on are made from them.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import re
import tarfile
from html.parser import HTMLParser
from pathlib import Path

# Debian 12 (bookworm) packages: file name -> sha256 of the .deb.
SOURCES = {
    "wordnet-base": ("wordnet-base_1%3a3.0-37_all.deb", "61060d960f9ada8fa120872312eccd3ecebfbab8c4579e4f5a74e1cf67620752"),
    "fortunes": ("fortunes_1%3a1.99.1-7.3_all.deb", "41d0551dc0ff52f875a2ecef7c39da2f672ab468c37e170119f7e0245a9d63c5"),
    "dict-devil": ("dict-devil_1.0-13.1_all.deb", "6a535684def2a1f70cd42da16d12d43f0e9dc3e54e4a329178eebab3170e3154"),
    "debian-handbook": ("debian-handbook_11.20220922_all.deb", "3d5dbeac1f1afc9c094eab9d0f701f6ecff99c4927d5a4794cf6c85678134faa"),
    "python3.11-doc": ("python3.11-doc_3.11.2-6+deb12u9_all.deb", "5b3594189d6ef9a6963ce0347fd307a1cc67620ad697e144db366070e2e146be"),
}

# Fortune files that are not prose.
FORTUNE_SKIP = {"ascii-art", "translate-me"}
PYTHON_DOC_DIRS = ("tutorial/", "howto/", "faq/", "whatsnew/")
MIN_WORDS = 6
# Paragraphs longer than this are cut into windows of whole sentences.
MAX_WORDS = 120


def deb_files(deb: Path) -> dict[str, bytes]:
    """Regular files of a .deb's data archive, by path (no leading './')."""
    raw = deb.read_bytes()
    if raw[:8] != b"!<arch>\n":
        raise ValueError(f"{deb}: not an ar archive")
    at = 8
    while at + 60 <= len(raw):
        name = raw[at : at + 16].decode().strip().rstrip("/")
        size = int(raw[at + 48 : at + 58].decode().strip())
        body = raw[at + 60 : at + 60 + size]
        at += 60 + size + (size & 1)
        if name.startswith("data.tar"):
            with tarfile.open(fileobj=io.BytesIO(body), mode="r:*") as tar:
                return {
                    m.name.removeprefix("./"): tar.extractfile(m).read()  # type: ignore[union-attr]
                    for m in tar.getmembers()
                    if m.isfile()
                }
    raise ValueError(f"{deb}: no data archive")


def sha256_file(p: Path) -> str:
    return hashlib.sha256(p.read_bytes()).hexdigest()


def _clean(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip()


def _windows(paragraph: str) -> list[str]:
    """A paragraph, or windows of whole sentences of at most MAX_WORDS words."""
    if len(paragraph.split()) <= MAX_WORDS:
        return [paragraph]
    out, cur, n = [], [], 0
    for s in re.split(r"(?<=[.!?])\s+", paragraph):
        w = len(s.split())
        if cur and n + w > MAX_WORDS:
            out.append(" ".join(cur))
            cur, n = [], 0
        cur.append(s)
        n += w
    if cur:
        out.append(" ".join(cur))
    return out


def _under(files: dict[str, bytes], prefix: str) -> list[tuple[str, bytes]]:
    """(path below `prefix`, content) of the files under `prefix`, in path order."""
    return [(p.removeprefix(prefix), files[p]) for p in sorted(files) if p.startswith(prefix)]


def _prose_ok(text: str) -> bool:
    words = text.split()
    letters = sum(c.isalpha() for c in text)
    return len(words) >= MIN_WORDS and letters >= 0.6 * len(text)


def wordnet(files: dict[str, bytes]) -> list[str]:
    out = []
    for pos in ("noun", "verb", "adj", "adv"):
        for line in files[f"usr/share/wordnet/data.{pos}"].decode("utf-8").splitlines():
            if line.startswith("  ") or " | " not in line:
                continue  # licence header
            head, gloss = line.split(" | ", 1)
            f = head.split()
            n_words = int(f[3], 16)
            lemmas = [re.sub(r"\(.*\)$", "", w).replace("_", " ") for w in f[4 : 4 + 2 * n_words : 2]]
            out.append(_clean(f"{', '.join(dict.fromkeys(lemmas))}: {gloss}"))
    return out


def fortunes(files: dict[str, bytes]) -> list[str]:
    out = []
    for name, data in _under(files, "usr/share/games/fortunes/"):
        if "." in name or "/" in name or name in FORTUNE_SKIP:
            continue
        for cookie in data.decode("utf-8", errors="replace").split("\n%\n"):
            text = _clean(cookie.replace("%", ""))
            if _prose_ok(text):
                out.extend(_windows(text))
    return out


def devil(files: dict[str, bytes]) -> list[str]:
    body = gzip.decompress(files["usr/share/dictd/devil.dict.dz"]).decode("utf-8", errors="replace")
    out = []
    for entry in re.split(r"\n(?=[A-Z][A-Z' -]+, [a-z.]+)", body):
        for para in re.split(r"\n\s*\n", entry):
            text = _clean(para)
            if _prose_ok(text):
                out.extend(_windows(text))
    return out


class _Paragraphs(HTMLParser):
    """Text of the paragraphs of a DocBook HTML page: elements of class "para", less any <pre>."""

    def __init__(self) -> None:
        super().__init__()
        self.tag = ""
        self.depth = 0
        self.pre = 0
        self.cur: list[str] = []
        self.paras: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "pre":
            self.pre += 1
        if self.depth and tag == self.tag:
            self.depth += 1
        elif not self.depth and "para" in (dict(attrs).get("class") or "").split():
            self.tag, self.depth = tag, 1

    def handle_endtag(self, tag: str) -> None:
        if tag == "pre" and self.pre:
            self.pre -= 1
        if self.depth and tag == self.tag:
            self.depth -= 1
            if not self.depth:
                self.paras.append(_clean("".join(self.cur)))
                self.cur = []

    def handle_data(self, data: str) -> None:
        if self.depth and not self.pre:
            self.cur.append(data)


def handbook(files: dict[str, bytes]) -> list[str]:
    out = []
    for name, data in _under(files, "usr/share/doc/debian-handbook/html/en-US/"):
        if name.endswith(".html"):
            p = _Paragraphs()
            p.feed(data.decode("utf-8", errors="replace"))
            out.extend(w for para in p.paras if _prose_ok(para) for w in _windows(para))
    return out


def _rst_prose(text: str) -> list[str]:
    out = []
    for para in re.split(r"\n\s*\n", text):
        lines = para.split("\n")
        # Indented blocks are code, directive bodies or quotes; '..' starts a directive.
        if any(line.startswith((" ", "\t", "..", "+", "|", ">>>")) for line in lines if line):
            continue
        if re.fullmatch(r"[=\-~*^#\s]+", lines[-1] or "="):
            continue  # a heading
        t = re.sub(r":[a-z:]+:`!?~?([^`<]*?)(?:\s*<[^>]*>)?`", r"\1", para)
        t = re.sub(r"``([^`]*)``", r"\1", t)
        t = re.sub(r"`([^`<]*?)(?:\s*<[^>]*>)?`_*", r"\1", t)
        t = _clean(t.replace("::", ":"))
        if _prose_ok(t):
            out.extend(_windows(t))
    return out


def python_docs(files: dict[str, bytes]) -> list[str]:
    out = []
    for name, data in _under(files, "usr/share/doc/python3.11/html/_sources/"):
        if name.startswith(PYTHON_DOC_DIRS) and name.endswith(".rst.txt"):
            out.extend(_rst_prose(data.decode("utf-8", errors="replace")))
    return out


READERS = {
    "wordnet-base": wordnet,
    "fortunes": fortunes,
    "dict-devil": devil,
    "debian-handbook": handbook,
    "python3.11-doc": python_docs,
}


def load(deb_dir: Path) -> dict[str, list[str]]:
    """Texts per source package, in a fixed order, duplicates dropped."""
    out: dict[str, list[str]] = {}
    seen: set[str] = set()
    for pkg, (fname, want) in SOURCES.items():
        deb = deb_dir / fname
        if not deb.exists():
            raise SystemExit(f"missing {deb}: run `apt-get download {pkg}` in {deb_dir} (see README.md)")
        got = sha256_file(deb)
        if got != want:
            raise SystemExit(f"{deb}: sha256 {got}, expected {want}")
        texts = []
        for t in READERS[pkg](deb_files(deb)):
            if t not in seen:
                seen.add(t)
                texts.append(t)
        out[pkg] = texts
    return out


def stable_order(texts: list[str], salt: str) -> list[str]:
    """A pseudo-random order that depends only on the texts (not on a library's RNG)."""
    return sorted(texts, key=lambda t: hashlib.sha256((salt + t).encode()).digest())


# Relative density of each source in the training order: WordNet's glosses
# are spread over twice the range of the prose, so a prefix of the order that
# holds all the prose holds half of the glosses, and any shorter prefix is a
# sample of both in that proportion.
DENSITY = {"wordnet-base": 0.5}


def training_texts(deb_dir: Path, encode, max_tokens: int) -> tuple[list[str], list[str]]:  # noqa: ANN001
    """All candidate texts in the fit's fixed order, and the source package of each.

    The fit uses a prefix of this order (``--fit-texts``). Texts whose
    ``[CLS] .. [SEP]`` sequence exceeds ``max_tokens`` are left out.
    """
    keyed = []
    for pkg, items in load(deb_dir).items():
        density = DENSITY.get(pkg, 1.0)
        for t in items:
            if len(encode(t)) + 2 <= max_tokens:
                u = int.from_bytes(hashlib.sha256(b"mix" + t.encode()).digest()[:8], "big") / 2**64
                keyed.append((u / density, t, pkg))
    keyed.sort()
    return [t for _, t, _ in keyed], [p for _, _, p in keyed]
