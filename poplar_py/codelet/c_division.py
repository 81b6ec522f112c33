"""C's integer division for codelets: ``cdiv(a, b)`` and ``cmod(a, b)``.

Python's ``//`` and ``%`` round the quotient toward minus infinity; C and C++ truncate it toward
zero (``-7 / 2 == -3``, ``-7 % 2 == -1``), so a port of C++ ``a / b`` and ``a % b`` on integers
uses these two. In codelets they compile to the machine's truncating division; on the host (and
in the interpreter mode) they are these functions. Both give 0 for ``b == 0`` and wrap for
``MIN / -1``, like the codelets' ``//`` and ``%``; the result has the type ``a // b`` would have.
"""

from __future__ import annotations

from typing import Any


def _trunc_divmod(a: Any, b: Any) -> tuple[Any, Any]:
    if not b:
        zero = a * 0 + b  # (b is 0) of the type a // b has
        return zero, zero
    q, r = a // b, a % b  # floor division: r has the sign of b
    if r and (a < 0) != (b < 0):  # an inexact negative quotient: truncation rounds it up
        q, r = q + 1, r - b
    return q, r


def cdiv(a: Any, b: Any) -> Any:
    """C's ``a / b`` on integers: the quotient rounded toward zero (0 when ``b`` is 0)."""
    return _trunc_divmod(a, b)[0]


def cmod(a: Any, b: Any) -> Any:
    """C's ``a % b`` on integers: ``a - b * cdiv(a, b)``, with the sign of ``a`` (0 when ``b`` is 0)."""
    return _trunc_divmod(a, b)[1]
