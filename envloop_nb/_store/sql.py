"""The one place where text from data becomes DuckDB SQL text.

Values (job ids, task ids, bucket names, file paths, ...) go into SQL as parameters
(``$name`` or ``?``) wherever DuckDB takes one. Where it does not — identifiers (column
names), ``CREATE VIEW`` bodies (a view cannot hold a parameter), a ``CASE`` built from
rules, a message embedded in SQL — the text goes through one of these functions and
nothing else:

- :func:`ident` — a double-quoted identifier (``"dim_child's score"``);
- :func:`literal` — a single-quoted string literal (``'it''s'``);
- :func:`number` — a finite number, read back by DuckDB exactly;
- :func:`json_pointer` / :func:`json_pointer_sql` — a JSON pointer (RFC 6901) to one
  object key, for ``->``, ``->>``, ``json_type`` and ``json_exists``.

Why JSON pointers and not ``$."key"`` paths: DuckDB's quoted path keys need backslash
escapes for ``"`` and ``\\``, cannot name the empty key, and read ``$."*"`` as a
wildcard; a bare ``j->key`` treats a key starting with ``$`` or ``/`` as a path. A
pointer ``/key`` (``~`` written ``~0``, ``/`` written ``~1``) names every key exactly.

Text with a NUL character (DuckDB's parser stops reading at it) or a lone surrogate
(not encodable as UTF-8) is refused with ``ValueError``; callers that take names from
files turn that into a :class:`~envloop_nb.LoadError`.
"""

from __future__ import annotations

import math
import numbers

__all__ = [
    "fixed_point_scale",
    "ident",
    "json_pointer",
    "json_pointer_sql",
    "literal",
    "number",
    "spark_ident",
    "spark_literal",
]


def _checked(text: str, what: str) -> str:
    if not isinstance(text, str):
        raise TypeError(f"{what} must be a str, got {type(text).__name__}")
    if "\x00" in text:
        raise ValueError(f"{what} {text!r} contains a NUL character")
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise ValueError(f"{what} {text!r} is not valid Unicode (lone surrogate)") from None
    return text


def ident(name: str) -> str:
    """``name`` as a double-quoted SQL identifier (embedded ``"`` doubled).

    Parameters
    ----------
    name
        Any column, table or alias name, kept exactly (case, spaces, quotes, unicode).

    Returns
    -------
    str
        SQL text naming exactly ``name``.

    Raises
    ------
    ValueError
        ``name`` is empty (DuckDB has no empty identifier) or contains a NUL character
        or a lone surrogate.

    Examples
    --------
    >>> import duckdb
    >>> ident('a "quoted" name')
    '"a ""quoted"" name"'
    >>> duckdb.sql(f"SELECT 1 AS {ident('x; DROP TABLE t; --')}").columns
    ['x; DROP TABLE t; --']
    """
    if _checked(name, "identifier") == "":
        raise ValueError("an identifier cannot be empty")
    return '"' + name.replace('"', '""') + '"'


def literal(text: str) -> str:
    r"""``text`` as a single-quoted SQL string literal (embedded ``'`` doubled).

    DuckDB string literals take backslashes, ``$`` and ``?`` as they are, so doubling
    the quote is the only escape. Prefer a parameter where DuckDB takes one.

    Raises
    ------
    ValueError
        ``text`` contains a NUL character or a lone surrogate.

    Examples
    --------
    >>> import duckdb
    >>> literal("dim_child's score")
    "'dim_child''s score'"
    >>> text = "C:\\new $1 ? it's"
    >>> duckdb.sql(f"SELECT {literal(text)} = $t", params={"t": text}).fetchone()[0]
    True
    """
    return "'" + _checked(text, "text").replace("'", "''") + "'"


def number(x: float | int) -> str:
    """SQL text for a finite number that DuckDB reads back exactly.

    Integers are written in digits. Floats are written from ``repr`` in exponent form
    (``0.5e0``) so that DuckDB parses them as ``DOUBLE``, correctly rounded, never as a
    ``DECIMAL``. Negative numbers are parenthesized (``(-0.25e0)``) so that no ``--``
    comment can arise next to a minus sign. numpy scalars are accepted.

    Raises
    ------
    ValueError
        ``x`` is NaN or infinite.
    TypeError
        ``x`` is a bool or not a real number.

    Examples
    --------
    >>> number(3), number(0.5), number(-0.25), number(1e-300)
    ('3', '0.5e0', '(-0.25e0)', '1e-300')
    >>> import duckdb
    >>> duckdb.sql(f"SELECT 1 - {number(-0.1)} = 1.1::DOUBLE").fetchone()[0]
    True
    """
    if isinstance(x, bool) or type(x).__name__ == "bool_" or not isinstance(x, numbers.Real):
        raise TypeError(f"expected a real number, got {type(x).__name__} {x!r}")
    if isinstance(x, numbers.Integral):
        text = str(int(x))
    else:
        value = float(x)
        if not math.isfinite(value):
            raise ValueError(f"expected a finite number, got {value!r}")
        text = repr(value)
        if "e" not in text:
            text += "e0"
    return f"({text})" if text.startswith("-") else text


def json_pointer(key: str) -> str:
    """The JSON pointer (RFC 6901) to the object key ``key``: ``/`` + key, escaped.

    Use it as a parameter or through :func:`literal`: ``j->{literal(json_pointer(k))}``.

    Examples
    --------
    >>> json_pointer("a/b~c"), json_pointer("$"), json_pointer("")
    ('/a~1b~0c', '/$', '/')
    >>> import duckdb
    >>> doc = duckdb.sql('''SELECT '{"*": 1, "a.b": 2, "$": 3}'::JSON AS j''')
    >>> doc.query("doc", f"SELECT j->>{literal(json_pointer('a.b'))} FROM doc").fetchone()[0]
    '2'
    """
    return "/" + _checked(key, "JSON key").replace("~", "~0").replace("/", "~1")


def json_pointer_sql(expr: str) -> str:
    """SQL for the JSON pointer to the key held by the ``VARCHAR`` expression ``expr``.

    The same as :func:`json_pointer`, computed in DuckDB (for keys that are data, e.g.
    from ``json_keys``). ``expr`` is SQL, never data.

    Examples
    --------
    >>> import duckdb
    >>> sql = '''SELECT d->>{} FROM (SELECT '{{"/x": 7}}'::JSON AS d, '/x' AS k)'''
    >>> duckdb.sql(sql.format(json_pointer_sql("k"))).fetchone()[0]
    '7'
    """
    return f"('/' || replace(replace({expr}, '~', '~0'), '/', '~1'))"


def fixed_point_scale(top: float | None, k: int | None) -> float:
    """``2^s`` with ``top · k · 2^s < 2^61`` (``s`` at most 1000; 1 for no value).

    The scale of an exact per-task sum of at most ``k`` values of magnitude at most
    ``top``: each value times ``2^s``, rounded to an integer (half to even), summed as a
    64-bit integer, divided back (:func:`envloop_nb._metrics.counts.fixed_sum`). The
    Spark reduction (:mod:`envloop_nb._loaders.tables.spark`) uses the same scale, so both give
    the same bits.

    Examples
    --------
    >>> fixed_point_scale(1.0, 32) == 2.0**55, fixed_point_scale(None, 4)
    (True, 1.0)
    """
    if not top or not k or not math.isfinite(top):
        return 1.0
    exponent = math.frexp(top * max(int(k), 1))[1]  # top · k < 2^exponent
    return math.ldexp(1.0, min(61 - exponent, 1000))


def spark_ident(name: str) -> str:
    """``name`` as a Spark SQL identifier: in backquotes, an embedded backquote doubled.

    Spark's dialect, for the reduction on Spark (:mod:`envloop_nb._loaders.tables.spark`); the
    same refusals as :func:`ident`.

    Examples
    --------
    >>> spark_ident("my `col`")
    '`my ``col```'
    """
    if _checked(name, "identifier") == "":
        raise ValueError("identifier must not be empty")
    return "`" + name.replace("`", "``") + "`"


def spark_literal(text: str) -> str:
    r"""``text`` as a Spark SQL string literal: in single quotes, backslashes and quotes
    escaped with a backslash (Spark's default, ``spark.sql.parser.escapedStringLiterals``
    off); the same refusals as :func:`literal`.

    Examples
    --------
    >>> print(spark_literal("it's a \\ path"))
    'it\'s a \\ path'
    """
    escaped = _checked(text, "literal").replace("\\", "\\\\").replace("'", "\\'")
    return "'" + escaped + "'"
