"""Ranking a turn's tools for a query: a small BM25 index, local, deterministic and pure.

Each tool is one document whose fields are weighted (BM25F-style): its name, split at snake,
kebab and camel case, weighs most, then its title, its parameters' names, its description and
its server's name, then its parameters' descriptions. Words are lower-cased, a short list of
English stop words is dropped and a light suffix stemmer folds ``files``/``file`` and
``listing``/``list`` together; a query's word also finds a few kin words (ticket/issue,
row/record) at a lower weight. Why not a library (``bm25s``, ``tantivy``): a turn holds at most
a few thousand tools, where this module answers in well under a millisecond (bench/README.md,
"Tool search") with the standard library only, while those bring numpy or a native wheel and
are built for millions of documents; the whole ranking is also easy to read here.
"""

import functools
import math
import re
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

__all__ = ["SearchDoc", "ToolIndex", "words"]

K1 = 1.2
# (weight, b) of each field: how much a word there counts (one in the name says more than one
# in a description) and how much the field's length dilutes it (BM25F).
FIELDS = (
    (3.0, 0.3),  # name
    (2.0, 0.3),  # title
    (1.0, 0.75),  # description
    (1.5, 0.0),  # server name
    (1.0, 0.5),  # parameter names
    (0.5, 0.75),  # parameter descriptions
)
MAX_FIELD_CHARS = 4096  # a description longer than this is read only that far (speed, not sense)
MAX_PARAMS = 64
MAX_QUERY_WORDS = 64  # a query's distinct words read (each one walks its postings)

# (suffix, the length a word must exceed, how much it loses): the first that applies.
_SUFFIXES = (
    ("ing", 5, 3),
    ("ed", 4, 2),
    ("sses", 4, 2),
    ("xes", 3, 2),
    ("zes", 3, 2),
    ("ss", 2, 0),  # "access", "process" keep their s
    ("s", 3, 1),
)
# Words a person says for what tools name otherwise, both ways; a query's word also finds its
# kin, at SYNONYM_WEIGHT. Kept short and generic: the words of tool APIs, not of one server.
_KIN = (
    ("ticket", "issue"),
    ("row", "record"),
    ("folder", "directory"),
    ("download", "fetch"),
    ("remove", "delete"),
    ("search", "find"),
    ("edit", "update"),
    ("change", "update"),
    ("make", "create"),
    ("new", "create"),
    ("run", "execute"),
    ("webpage", "url"),
    ("site", "url"),
    ("repo", "repository"),
)
SYNONYM_WEIGHT = 0.6
_CHUNK = re.compile(r"[A-Za-z0-9]+")
_CAMEL_PART = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|[0-9]+")
_STOP_TEXT = (
    "a an and any are as at be by can could do does for from get give how i in into is it its "
    "me my of on or please show some that the their them then there these this to us we what "
    "when where which with would you your"
)
_STOP_WORDS = frozenset(_STOP_TEXT.split())


def _stem(word: str) -> str:
    """A light suffix stemmer: plurals and -ing/-ed forms fold onto one stem."""
    if len(word) > 4 and word.endswith("ies"):
        return word[:-3] + "y"
    for suffix, shortest, cut in _SUFFIXES:
        if len(word) > shortest and word.endswith(suffix):
            word = word[: len(word) - cut]
            break
    if len(word) > 3 and word[-1] == "e":
        word = word[:-1]  # "create"/"creating" and "delete"/"deleted" meet without the e
    return word


def _split(chunk: str) -> tuple[str, ...]:
    out = []
    for part in _CAMEL_PART.findall(chunk):
        word = part.lower()
        if word not in _STOP_WORDS:
            out.append(_stem(word))
    return tuple(out)


# Memoised: tool definitions repeat their words, and the split and stem are the cost. Only
# short chunks, so that a server's long nonsense cannot fill the cache with big keys.
_split_cached = functools.lru_cache(maxsize=65536)(_split)
MAX_CACHED_CHUNK = 48


def words(text: str) -> list[str]:
    """The searchable words of ``text``: split at case and punctuation, stemmed, no stop words."""
    out: list[str] = []
    for chunk in _CHUNK.findall(text[:MAX_FIELD_CHARS]):
        out += _split_cached(chunk) if len(chunk) <= MAX_CACHED_CHUNK else _split(chunk)
    return out


def _kin() -> dict[str, tuple[str, ...]]:
    kin: dict[str, list[str]] = {}
    for a, b in _KIN:
        (a_word,), (b_word,) = words(a), words(b)
        kin.setdefault(a_word, []).append(b_word)
        kin.setdefault(b_word, []).append(a_word)
    return {word: tuple(others) for word, others in kin.items()}


_SYNONYMS = _kin()


def _query_terms(query: str) -> dict[str, float]:
    """The query's words (weight 1) and their kin (:data:`SYNONYM_WEIGHT`), once each."""
    terms = dict.fromkeys(list(dict.fromkeys(words(query)))[:MAX_QUERY_WORDS], 1.0)
    for word in list(terms):
        for other in _SYNONYMS.get(word, ()):
            terms.setdefault(other, SYNONYM_WEIGHT)
    return terms


@dataclass(frozen=True, slots=True)
class SearchDoc:
    """One tool as the index reads it (``key`` is what a search returns: the bound name)."""

    key: str
    server: str
    name: str
    title: str | None
    description: str | None
    input_schema: Mapping[str, Any] | None


def _parameters(schema: Mapping[str, Any] | None) -> Iterable[tuple[str, str]]:
    properties = schema.get("properties") if isinstance(schema, Mapping) else None
    if not isinstance(properties, Mapping):
        return []
    out: list[tuple[str, str]] = []
    for name, spec in list(properties.items())[:MAX_PARAMS]:
        described = spec.get("description") if isinstance(spec, Mapping) else None
        out.append((str(name), described if isinstance(described, str) else ""))
    return out


def _fields(doc: SearchDoc) -> list[list[str]]:
    """The words of each field of ``doc``, in the order of :data:`FIELDS`."""
    parameters = list(_parameters(doc.input_schema))
    return [
        words(doc.name),
        words(doc.title or ""),
        words(doc.description or ""),
        words(doc.server),
        [w for name, _ in parameters for w in words(name)],
        [w for _, described in parameters for w in words(described)],
    ]


class ToolIndex:
    """An inverted index over one turn's tools; :meth:`search` ranks them for a query.

    BM25F: a word's count in each field is normalised by that field's length (against the
    field's average), weighted and summed, then saturated; so a long description does not
    drown a short name. Everything but the query's part is computed here, once: a search adds
    ``idf * tf / (K1 + tf)`` per matching (word, tool). Built lazily at a turn's first search
    and read-only afterwards. Equal scores go by key, so an answer never depends on the order
    the servers answered in.
    """

    def __init__(self, docs: Sequence[SearchDoc]) -> None:
        self._keys = [doc.key for doc in docs]
        fielded = [_fields(doc) for doc in docs]
        averages = [
            (sum(len(f[i]) for f in fielded) / len(fielded) if fielded else 0.0) or 1.0
            for i in range(len(FIELDS))
        ]
        postings: dict[str, list[tuple[int, float]]] = {}
        for at, fields in enumerate(fielded):
            weights: dict[str, float] = {}
            for (weight, b), field_words, average in zip(FIELDS, fields, averages, strict=True):
                norm = weight / (1 - b + b * len(field_words) / average)
                for word, count in Counter(field_words).items():
                    weights[word] = weights.get(word, 0.0) + norm * count
            for word, tf in weights.items():
                postings.setdefault(word, []).append((at, tf / (K1 + tf)))
        count = len(docs)
        self._postings = {
            word: (math.log(1 + (count - len(posting) + 0.5) / (len(posting) + 0.5)), posting)
            for word, posting in postings.items()
        }

    def __len__(self) -> int:
        return len(self._keys)

    def search(
        self, query: str, limit: int, accept: Callable[[str], bool] | None = None
    ) -> list[tuple[str, float]]:
        """The ``limit`` best matching keys with their scores, best first; ``accept(key)``
        may refuse some (a tool disabled since the index was built)."""
        scores: dict[int, float] = {}
        for term, factor in _query_terms(query).items():
            found = self._postings.get(term)
            if found is None:
                continue
            idf, posting = found
            idf *= factor
            for at, saturated in posting:
                scores[at] = scores.get(at, 0.0) + idf * saturated
        keys = self._keys
        ranked = sorted(scores.items(), key=lambda item: (-item[1], keys[item[0]]))
        out: list[tuple[str, float]] = []
        for at, score in ranked:
            if len(out) >= limit:
                break
            if accept is None or accept(keys[at]):
                out.append((keys[at], score))
        return out
