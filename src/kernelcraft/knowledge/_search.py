"""Ranked search over the pages: BM25F (BM25 with per-field weights and length normalisation).

A page has three fields: its title, its labels (tags, op types, dtypes, devices) and its body.
A query term found in a title counts three times what it counts in the body, in the labels
twice: "fp8" in a page's title or tags says more about the page than one mention in a paragraph.
Fifty pages need no index library; the whole index is rebuilt in milliseconds when the pages load.

Filters narrow before ranking: ``tags`` (every one given must be on the page), ``op_type`` (the
page names it, or ``any``), ``device`` (the page names the device, its family, or ``any``:
"NVIDIA H200" matches pages for H200, H100 and hopper, because the three share one architecture).
"""

from __future__ import annotations

import math
import re
from collections import Counter
from dataclasses import dataclass

from kernelcraft.knowledge._pages import Page

K1, B = 1.2, 0.75
WEIGHTS = {"title": 3.0, "labels": 2.0, "body": 1.0}
_STOP = frozenset(
    "a an and are as at be by for from has have in is it its of on or that the this to was were when "
    "which with what how why not no do does than then so if into over per vs".split())

# Device names as they appear in records (torch's device name) and pages, to an architecture.
FAMILIES = {
    "a100": "ampere", "a10": "ampere", "a30": "ampere", "a40": "ampere", "a800": "ampere", "rtx 3090": "ampere",
    "l4": "ada", "l40": "ada", "l40s": "ada", "rtx 4090": "ada",
    "h100": "hopper", "h200": "hopper", "h800": "hopper", "h20": "hopper", "gh200": "hopper",
    "b100": "blackwell", "b200": "blackwell", "b300": "blackwell", "gb200": "blackwell",
    "cpu": "cpu",
}
ARCHITECTURES = frozenset(FAMILIES.values()) | {"interpreter"}


def _stem(word: str) -> str:
    """A light plural stripper: kernels -> kernel, flushes -> flush, copies -> copy."""
    if len(word) <= 3 or not word.isalpha():
        return word
    if word.endswith("ies"):
        return word[:-3] + "y"
    if word.endswith(("ches", "shes", "sses", "xes")):
        return word[:-2]
    if word.endswith("s") and not word.endswith(("ss", "us", "is")):
        return word[:-1]
    return word


def tokens(text: str) -> list[str]:
    # "top-k" and "k-means" are the words topk and kmeans (op types); lone letters carry nothing
    text = re.sub(r"\b([a-z0-9]+)-([a-z0-9])\b|\b([a-z0-9])-([a-z0-9]+)\b",
                  lambda m: "".join(g for g in m.groups() if g), text.lower())
    return [_stem(t) for t in re.findall(r"[a-z0-9]+", text)
            if t not in _STOP and (len(t) > 1 or t.isdigit())]


def family(device: str) -> str | None:
    """The architecture of a device name ("NVIDIA H200" -> hopper, "CPU x86_64" -> cpu), or None."""
    d = device.lower().strip()
    if d in ARCHITECTURES:
        return d
    if d.startswith("cpu"):
        return "cpu"
    for name in sorted(FAMILIES, key=len, reverse=True):  # "h200" before "h20"
        if re.search(rf"(?<![a-z0-9]){re.escape(name)}(?![a-z0-9])", d):
            return FAMILIES[name]
    return None


def device_matches(page: Page, device: str) -> bool:
    wanted = family(device)
    for d in page.devices:
        d_low = d.lower()
        if d_low == "any" or d_low == device.lower().strip():
            return True
        if wanted is not None and family(d) == wanted:
            return True
    return False


@dataclass(frozen=True)
class Hit:
    page: Page
    score: float

    def to_dict(self) -> dict:
        return {**self.page.summary(), "score": round(self.score, 4),
                "claim": self.page.sections["Claim"]}


class Index:
    def __init__(self, pages: list[Page]):
        self.pages = pages
        self.fields: list[dict[str, Counter]] = []
        for p in pages:
            labels = " ".join((*p.tags, *p.op_types, *p.dtypes, *p.devices))
            self.fields.append({"title": Counter(tokens(p.title)), "labels": Counter(tokens(labels)),
                                "body": Counter(tokens(p.body))})
        n = max(len(pages), 1)
        self.avg = {f: (sum(sum(d[f].values()) for d in self.fields) / n) or 1.0 for f in WEIGHTS}
        df: Counter = Counter()
        for d in self.fields:
            df.update(set().union(*(set(d[f]) for f in WEIGHTS)))
        self.idf = {t: math.log(1 + (len(pages) - c + 0.5) / (c + 0.5)) for t, c in df.items()}

    def _score(self, i: int, terms: list[str]) -> float:
        doc = self.fields[i]
        score = 0.0
        for t in set(terms):
            tf = sum(WEIGHTS[f] * doc[f][t] / (1 - B + B * sum(doc[f].values()) / self.avg[f]) for f in WEIGHTS)
            if tf:
                score += self.idf.get(t, 0.0) * tf / (K1 + tf)
        return score

    def search(self, query: str, tags: list[str] | None = None, op_type: str | None = None,
               device: str | None = None, limit: int | None = 10) -> list[Hit]:
        """Pages passing the filters, best match first; an empty query lists them by id."""
        terms = tokens(query)
        hits = []
        for i, p in enumerate(self.pages):
            if tags and not all(t.lower() in p.tags for t in tags):
                continue
            if op_type and op_type.lower() not in p.op_types and "any" not in p.op_types:
                continue
            if device and not device_matches(p, device):
                continue
            score = self._score(i, terms) if terms else 0.0
            if terms and score <= 0:
                continue
            hits.append(Hit(p, score))
        hits.sort(key=lambda h: (-h.score, h.page.id))
        return hits if limit is None else hits[:limit]
