"""PrintTensor's text format (Poplar SDK 3, PrintTensorFmt defaults).

``v1-debug: [1.0000000 1.5000000 2.0000000 2.5000000]``: floats in fixed notation
with 8 significant digits' worth of decimals (7), scientific when values are very
large or small; integers plain; every element padded to one width; 2-D and higher
tensors as nested rows; more than 1000 elements summarised with 3 edge items and
"..."; lines longer than 75 characters wrapped. A 0-D tensor prints bare.
"""

from __future__ import annotations

import numpy as np

SUMMARISE_THRESHOLD = 1000
EDGE_ITEMS = 3
MAX_LINE_WIDTH = 75
DIGITS = 8


def _formatter(values: np.ndarray):
    if values.dtype == np.bool_:
        return lambda x: "1" if x else "0"
    if not np.issubdtype(values.dtype, np.floating):
        return lambda x: str(int(x))
    finite = np.abs(values[np.isfinite(values)].astype(np.float64))
    nonzero = finite[finite > 0]
    scientific = nonzero.size > 0 and (nonzero.max() >= 1e8 or nonzero.min() < 1e-4)
    decimals = DIGITS - 1

    def fmt(x: float) -> str:
        if np.isnan(x):
            return "nan"
        if np.isinf(x):
            return "inf" if x > 0 else "-inf"
        return f"{float(x):.{decimals}e}" if scientific else f"{float(x):.{decimals}f}"

    return fmt


def _pick(values: np.ndarray, summarise: bool) -> np.ndarray:
    """The elements that will be shown (edges of every dimension when summarising)."""
    if not summarise:
        return values
    for axis in range(values.ndim):
        if values.shape[axis] > 2 * EDGE_ITEMS:
            idx = np.r_[0:EDGE_ITEMS, values.shape[axis] - EDGE_ITEMS:values.shape[axis]]
            values = np.take(values, idx, axis=axis)
    return values


def _row(items: list[str], indent: int) -> str:
    """One bracketed row, wrapped at MAX_LINE_WIDTH with continuation lines aligned."""
    lines, current = [], " " * indent + "["
    for i, item in enumerate(items):
        piece = item if i == 0 else " " + item
        if len(current) + len(piece) + 1 > MAX_LINE_WIDTH and i > 0:
            lines.append(current)
            current = " " * (indent + 1) + item
        else:
            current += piece
    lines.append(current + "]")
    return "\n".join(lines)


def format_tensor(title: str, values: np.ndarray) -> str:
    """The text PrintTensor writes (without the trailing newline)."""
    prefix = f"{title}: " if title else ""
    if values.ndim == 0:
        return prefix + _formatter(values.reshape(1))(values[()])
    summarise = values.size > SUMMARISE_THRESHOLD
    shown = _pick(values, summarise)
    fmt = _formatter(shown.reshape(-1))
    strings = np.array([fmt(x) for x in shown.reshape(-1)], dtype=object).reshape(shown.shape)
    width = max((len(s) for s in strings.reshape(-1)), default=0)
    strings = np.vectorize(lambda s: s.rjust(width), otypes=[object])(strings) if strings.size else strings

    def render(block: np.ndarray, full_len: list[int], indent: int) -> str:
        cut = summarise and full_len[0] > 2 * EDGE_ITEMS
        if block.ndim == 1:
            items = list(block)
            if cut:
                items = items[:EDGE_ITEMS] + ["..."] + items[EDGE_ITEMS:]
            return _row(items, indent)
        rows = [render(block[i], full_len[1:], indent + 2) for i in range(block.shape[0])]
        if cut:
            rows = rows[:EDGE_ITEMS] + [" " * (indent + 2) + "..."] + rows[EDGE_ITEMS:]
        return " " * indent + "[\n" + "\n".join(rows) + "\n" + " " * indent + "]"

    body = render(strings, list(values.shape), 0)
    return prefix + body
