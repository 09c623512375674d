"""Small value strategies: message text, JSON values, tool calls and tool results.

The leaves every larger strategy draws from, plus the cached primitive strategies
(``_ints``, ``_pick``, ``_BOOL``) that the builders draw through. Cached with
``functools.lru_cache`` so that repeated calls return the same strategy object.
"""

from __future__ import annotations

import functools
from typing import Any

from hypothesis import strategies as st

from maka_ref.testing._strategies.constants import MAX_SAFE_INTEGER

_PHRASES = (
    "run it",
    "please update the notes",
    "Read notes.txt and summarise it",
    "fix the failing test in tests/test_io.py",
    "日本語のテキストを要約して",
    "emoji 😀 and fullwidth ！ and é",
    "line\nbreak\ttab",
    'quote " backslash \\ slash /',
    "separators \u2028 and \u2029",
    "control \x00\x1f and DEL \x7f",
    "",
    " ",
    "𝔘𝔫𝔦𝔠𝔬𝔡𝔢 astral",
    "__proto__",
)


@functools.lru_cache(maxsize=None)
def texts(*, max_size: int = 40) -> st.SearchStrategy[str]:
    """Realistic message text: phrases, ASCII words, and arbitrary unicode incl. astral
    characters (never lone surrogates: event text is well-formed in real runs)."""
    return st.one_of(
        st.sampled_from(_PHRASES),
        st.text(alphabet=st.characters(min_codepoint=32, max_codepoint=126), max_size=max_size),
        st.text(alphabet=st.characters(codec="utf-8"), max_size=max_size),
    )


@functools.lru_cache(maxsize=None)
def _names() -> st.SearchStrategy[str]:
    return st.one_of(
        st.sampled_from(("a", "path", "content", "0", "10", "2", "01", "-1", "1.5", "__proto__", "é", "😀", "！", "Z", "z")),
        st.text(alphabet=st.characters(codec="utf-8"), max_size=8),
    )


@functools.lru_cache(maxsize=None)
def _safe_floats() -> st.SearchStrategy[float]:
    # -0.0 is not encodable in an event (spec 10 §2.4): map it to 0.0.
    return st.floats(allow_nan=False, allow_infinity=False).map(lambda x: 0.0 if x == 0 else x)


@functools.lru_cache(maxsize=None)
def _event_json(max_leaves: int = 12) -> st.SearchStrategy[Any]:
    """Strict JSON that is encodable inside an event: safe integers, finite floats, no -0,
    well-formed unicode strings (astral included), nested objects and arrays."""
    scalars = st.one_of(
        st.none(),
        st.booleans(),
        st.integers(-MAX_SAFE_INTEGER, MAX_SAFE_INTEGER),
        _safe_floats(),
        texts(max_size=16),
    )
    return st.recursive(
        scalars,
        lambda children: st.one_of(
            st.lists(children, max_size=4),
            st.dictionaries(_names(), children, max_size=4),
        ),
        max_leaves=max_leaves,
    )


@functools.lru_cache(maxsize=None)
def json_values(
    *,
    lone_surrogates: bool = True,
    big_integers: bool = True,
    negative_zero: bool = True,
    max_leaves: int = 16,
) -> st.SearchStrategy[Any]:
    """Arbitrary JSON values (``dict``/``list``/``str``/``int``/``float``/``bool``/``None``).

    Includes astral characters, lone surrogates, integers beyond 2^53 (and beyond the double
    range when ``big_integers``), every finite float and ``-0.0``. Switch the awkward parts
    off when a property needs event-encodable values.
    """
    alphabet = st.characters() if lone_surrogates else st.characters(codec="utf-8")
    strings = st.one_of(st.text(alphabet=alphabet, max_size=12), st.sampled_from(_PHRASES))
    ints = st.integers(-MAX_SAFE_INTEGER, MAX_SAFE_INTEGER)
    if big_integers:
        ints = st.one_of(ints, st.integers(-(2**80), 2**80), st.sampled_from((2**53 + 1, 12345678901234567890, 10**400)))
    floats = st.floats(allow_nan=False, allow_infinity=False)
    if not negative_zero:
        floats = floats.map(lambda x: 0.0 if x == 0 else x)
    scalars = st.one_of(st.none(), st.booleans(), ints, floats, strings)
    keys = st.one_of(_names(), st.text(alphabet=alphabet, max_size=6))
    return st.recursive(
        scalars,
        lambda children: st.one_of(st.lists(children, max_size=5), st.dictionaries(keys, children, max_size=5)),
        max_leaves=max_leaves,
    )


@functools.lru_cache(maxsize=None)
def _paths() -> st.SearchStrategy[str]:
    return st.one_of(
        st.sampled_from(("notes.txt", "src/app.py", "docs/ré sumé.md", "data/😀.json", "/etc/hosts", "C:\\tmp\\x.txt")),
        st.builds(lambda d, f: f"{d}/{f}", st.sampled_from(("src", "tests", "tmp", "ノート")), texts(max_size=10)),
    )


@functools.lru_cache(maxsize=None)
def tool_calls() -> st.SearchStrategy[tuple[str, Any]]:
    """``(tool name, args)`` pairs shaped like real tools, plus tools with arbitrary nested
    arguments, schema-like arguments (``required``/``enum`` arrays, whose hash sorts them,
    spec 10 §2.6), ``__proto__`` keys, array-index-like keys and non-object arguments."""
    small_int = st.integers(0, 10**6)
    return st.one_of(
        st.tuples(
            st.just("Bash"),
            st.fixed_dictionaries(
                {"command": st.one_of(st.sampled_from(("ls -la", "pytest -q", "echo 'é😀' > out.txt")), texts())},
                optional={"timeout": small_int, "description": texts(max_size=20)},
            ),
        ),
        st.tuples(st.just("Write"), st.fixed_dictionaries({"path": _paths(), "content": texts()})),
        st.tuples(
            st.just("Read"),
            st.fixed_dictionaries({"path": _paths()}, optional={"offset": small_int, "limit": small_int}),
        ),
        st.tuples(
            st.just("Edit"),
            st.fixed_dictionaries(
                {"path": _paths(), "old_string": texts(), "new_string": texts()},
                optional={"replace_all": st.booleans()},
            ),
        ),
        st.tuples(
            st.just("WebFetch"),
            st.fixed_dictionaries(
                {"url": st.sampled_from(("https://example.com/a?b=1&c=ü", "http://[::1]:8080/"))},
                optional={"headers": st.dictionaries(_names(), texts(max_size=10), max_size=3)},
            ),
        ),
        st.tuples(
            st.just("TodoWrite"),
            st.fixed_dictionaries(
                {
                    "todos": st.lists(
                        st.fixed_dictionaries(
                            {
                                "content": texts(max_size=20),
                                "status": st.sampled_from(("pending", "in_progress", "completed")),
                                "priority": st.integers(1, 3),
                            }
                        ),
                        max_size=3,
                    )
                }
            ),
        ),
        st.tuples(
            st.just("define_schema"),
            st.fixed_dictionaries(
                {
                    "type": st.just("object"),
                    "required": st.lists(st.one_of(texts(max_size=6), st.integers(-5, 20)), max_size=5),
                    "properties": st.dictionaries(
                        _names(),
                        st.fixed_dictionaries({"enum": st.lists(st.one_of(st.none(), st.booleans(), st.integers(-3, 12), texts(max_size=4)), max_size=4)}),
                        max_size=3,
                    ),
                }
            ),
        ),
        st.tuples(st.just("exec"), st.fixed_dictionaries({"code": texts()})),
        st.tuples(st.sampled_from(("mcp__db__query", "mcp__server__tool_ü")), _event_json()),
        st.tuples(st.just("Search"), st.one_of(st.none(), texts(), st.lists(texts(max_size=5), max_size=3))),
    )


@functools.lru_cache(maxsize=None)
def tool_results() -> st.SearchStrategy[Any]:
    """Realistic ``function_response.result`` values."""
    return st.one_of(
        st.sampled_from(("ok", "", "permission denied", "file written", "exit code 1\nstderr: boom")),
        texts(),
        st.fixed_dictionaries({"ok": st.booleans()}, optional={"bytes": st.integers(0, 10**9), "stdout": texts()}),
        _event_json(max_leaves=8),
    )


@functools.lru_cache(maxsize=None)
def _ints(lo: int, hi: int) -> st.SearchStrategy[int]:
    return st.integers(lo, hi)


@functools.lru_cache(maxsize=None)
def _pick(options: tuple[Any, ...]) -> st.SearchStrategy[Any]:
    return st.sampled_from(options)


_BOOL = st.booleans()
