"""Names of tensor views, made only when asked for: a view keeps (base name, format, arguments...)
and :func:`resolve_name` formats the chain (``x[2]``, ``x[1:3]``, ``x.slice(0,4,1)``,
``x.reshape({2,2})``, ``concat(a,b)``)."""

from __future__ import annotations

from collections.abc import Sequence

#: the formats of views' names; a view's name is kept as (base name, format, arguments...) until
#: asked for, a concatenation's arguments being the names of its next three parts and whether more
#: follow
INDEX, RANGE, SLICE, OP, CONCAT = "{}[{}]", "{}[{}:{}]", "{}.slice({},{},{})", "{}.{}", "concat({})"


def short(name: str) -> str:
    """``name``, cut to 120 characters."""
    return name if len(name) < 120 else name[:117] + "..."


def resolve_name(name: str | tuple) -> str:
    """The name of a view whose name was kept as (base, format, arguments...)."""
    chain = []
    while type(name) is not str:
        chain.append(name)
        name = name[0]
    for _, fmt, *args in reversed(chain):
        if fmt is CONCAT:
            name = fmt.format(",".join([name, *map(resolve_name, args[:-1])]) + (",..." if args[-1] else ""))
        else:
            name = fmt.format(name if fmt is INDEX or fmt is RANGE else short(name), *args)
    return name


def shape_str(shape: Sequence[int]) -> str:
    """A shape as Poplar prints it: ``{2,3}``."""
    return "{" + ",".join(str(d) for d in shape) + "}"
