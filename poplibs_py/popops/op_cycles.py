"""PopLibs' cycle figures for popops' element-wise operation vertices, by operation and type.

``(cycles, natural, unroll)`` per inner-loop pass, as PopLibs' ``OpPerformanceInfo`` tables give
them (``lib/popops/popopsCycleEstimators.hpp``, measured on the simulator for the assembly and C++
codelets): with ``natural`` a pass takes one data-path vector (``Target.getVectorWidth``) in
``cycles`` plus a load/store and loop overhead that the estimator adds; else, with ``unroll`` > 0,
``unroll`` elements in ``cycles`` and no overhead; else one element in ``cycles`` plus the
overhead. Tables exist for the plain, in-place and scalar-broadcast forms of the vertices; types
poplar-py has no use for are left out.
"""

from __future__ import annotations

OpTable = dict[str, dict[str, tuple[int, bool, int]]]

UNARY: OpTable = {
    "ABSOLUTE": {"float": (1, False, 0), "half": (1, False, 0), "int": (2, False, 0)},
    "ASIN": {"half": (102, False, 0), "float": (102, False, 0)},
    "BITWISE_NOT": {
        "int": (1, True, 0), "unsigned int": (1, True, 0), "short": (2, False, 4),
        "unsigned short": (2, False, 4)
    },
    "CBRT": {"float": (27, True, 0), "half": (17, True, 0)},
    "CEIL": {"float": (2, True, 0), "half": (2, True, 0)},
    "COS": {"float": (2300, False, 0), "half": (25, False, 1)},
    "INVERSE": {"half": (15, False, 4), "float": (6, False, 2)},
    "COUNT_LEADING_ZEROS": {"int": (1, False, 0), "unsigned int": (1, False, 0)},
    "ERF": {"float": (41, False, 1), "half": (13, False, 1)},
    "GELU_ERF": {"float": (22, False, 1), "half": (16, False, 1)},
    "EXPONENT": {"float": (6, False, 2), "half": (4, False, 4)},
    "EXPONENT_MINUS_ONE": {"float": (4, False, 0), "half": (5, True, 0)},
    "EXPONENT2": {"float": (6, False, 2), "half": (4, False, 4)},
    "FLOOR": {"float": (2, True, 0), "half": (2, True, 0)},
    "IS_FINITE": {"float": (5, True, 0), "half": (5, True, 0)},
    "IS_INF": {"float": (3, True, 0), "half": (5, True, 0)},
    "IS_NAN": {"float": (3, True, 0), "half": (3, True, 0)},
    "LOGARITHM": {"float": (12, False, 2), "half": (4, False, 4)},
    "LOGARITHM_ONE_PLUS": {"float": (18, True, 0), "half": (18, True, 0)},
    "LOGICAL_NOT": {"bool": (17, False, 0)},
    "NEGATE": {"float": (2, False, 2), "half": (2, False, 4), "int": (2, False, 0)},
    "POPCOUNT": {"int": (1, False, 0), "unsigned int": (1, False, 0)},
    "NEARBY_INT": {"float": (2, True, 0), "half": (2, True, 0)},
    "ROUND": {"float": (2, True, 0), "half": (2, True, 0)},
    "SIGNUM": {"float": (5, True, 0), "half": (5, True, 0), "int": (5, False, 0)},
    "SIN": {"float": (2300, False, 0), "half": (25, False, 1)},
    "SQRT": {"float": (10, False, 2), "half": (23, False, 4), "int": (110, False, 0)},
    "SQUARE": {
        "float": (2, False, 2), "half": (2, False, 4), "int": (1, True, 0), "unsigned int": (1, True, 0)
    },
    "TAN": {"float": (5100, False, 1), "half": (5700, False, 1)},
    "TANH": {"float": (12, False, 2), "half": (4, False, 4)},
    "TRUNC": {"float": (3, False, 2), "half": (11, False, 4)},
    "SIGMOID": {"float": (12, False, 2), "half": (6, False, 4)},
    "RSQRT": {"float": (8, False, 2), "half": (19, False, 4)},
    "RELU": {"float": (3, False, 2), "half": (3, False, 4)},
}

#: in place, the unary vertices take the same figures but for these; the tests (IS_FINITE, IS_INF,
#: IS_NAN), whose BOOL result cannot overwrite their operand, have none
_UNARY_IN_PLACE_DIFFERENCES: OpTable = {
    "ABSOLUTE": {"float": (1, True, 0), "half": (1, True, 0)},
    "LOGARITHM": {"float": (14, False, 2), "half": (6, False, 4)},
    "LOGARITHM_ONE_PLUS": {"half": (17, True, 0)},
    "LOGICAL_NOT": {"bool": (17, True, 0)},
    "NEGATE": {"float": (3, False, 2), "half": (3, False, 4)},
    "TANH": {"float": (10, False, 2), "half": (2, False, 4)},
    "TRUNC": {"float": (4, False, 2)},
    "SIGMOID": {"float": (10, False, 2), "half": (4, False, 4)},
    "RELU": {"float": (2, False, 2), "half": (2, False, 4)},
}
UNARY_IN_PLACE: OpTable = {op: {**cycles, **_UNARY_IN_PLACE_DIFFERENCES.get(op, {})}
                           for op, cycles in UNARY.items() if op not in ("IS_FINITE", "IS_INF", "IS_NAN")}

BINARY: OpTable = {
    "ADD": {"float": (1, True, 0), "half": (1, True, 0), "int": (7, False, 1), "unsigned int": (7, False, 1)},
    "ATAN2": {"float": (272, False, 2), "half": (578, False, 4)},
    "BITWISE_AND": {
        "int": (7, False, 1), "unsigned int": (7, False, 1), "short": (3, False, 4),
        "unsigned short": (3, False, 4)
    },
    "BITWISE_OR": {
        "int": (7, False, 1), "unsigned int": (7, False, 1), "short": (3, False, 4),
        "unsigned short": (3, False, 4)
    },
    "BITWISE_XOR": {
        "int": (7, False, 1), "unsigned int": (7, False, 1), "short": (5, False, 2),
        "unsigned short": (5, False, 2)
    },
    "BITWISE_XNOR": {
        "int": (7, False, 1), "unsigned int": (7, False, 1), "short": (6, False, 2),
        "unsigned short": (6, False, 2)
    },
    "DIVIDE": {
        "float": (10, False, 2), "half": (21, False, 4), "int": (277, False, 1),
        "unsigned int": (265, False, 1)
    },
    "LOGICAL_AND": {"bool": (5, False, 4)},
    "LOGICAL_OR": {"bool": (5, False, 4)},
    "MAXIMUM": {
        "float": (3, False, 2), "half": (4, False, 4), "int": (7, False, 1), "unsigned int": (8, False, 1)
    },
    "MINIMUM": {
        "float": (3, False, 2), "half": (4, False, 4), "int": (7, False, 1), "unsigned int": (8, False, 1)
    },
    "MULTIPLY": {
        "float": (1, True, 0), "half": (1, True, 0), "int": (7, False, 1), "unsigned int": (7, False, 1)
    },
    "POWER": {"float": (312, False, 1), "half": (325, False, 1), "int": (32, False, 1)},
    "REMAINDER": {
        "float": (133, False, 2), "half": (300, False, 4), "int": (292, False, 1),
        "unsigned int": (282, False, 1)
    },
    "SHIFT_LEFT": {"int": (7, False, 1), "unsigned int": (7, False, 1)},
    "SHIFT_RIGHT": {"int": (7, False, 1), "unsigned int": (7, False, 1)},
    "SHIFT_RIGHT_SIGN_EXTEND": {"int": (7, False, 1)},
    "SUBTRACT": {
        "float": (1, True, 0), "half": (1, True, 0), "int": (7, False, 1), "unsigned int": (7, False, 1)
    },
    "EQUAL": {
        "float": (14, False, 4), "half": (9, False, 4), "int": (22, False, 4),
        "unsigned int": (22, False, 4), "short": (22, False, 4), "unsigned short": (22, False, 4),
        "bool": (6, False, 4)
    },
    "GREATER_THAN": {
        "float": (14, False, 4), "half": (9, False, 4), "int": (22, False, 4),
        "unsigned int": (22, False, 4), "bool": (31, False, 4)
    },
    "GREATER_THAN_EQUAL": {
        "float": (14, False, 4), "half": (9, False, 4), "int": (26, False, 4),
        "unsigned int": (26, False, 4), "bool": (28, False, 4)
    },
    "LESS_THAN": {
        "float": (14, False, 4), "half": (9, False, 4), "int": (22, False, 4),
        "unsigned int": (22, False, 4), "bool": (28, False, 4)
    },
    "LESS_THAN_EQUAL": {
        "float": (14, False, 4), "half": (9, False, 4), "int": (26, False, 4),
        "unsigned int": (26, False, 4), "bool": (28, False, 4)
    },
    "NOT_EQUAL": {
        "float": (20, False, 4), "half": (11, False, 4), "int": (22, False, 4),
        "unsigned int": (22, False, 4), "short": (22, False, 4), "unsigned short": (22, False, 4),
        "bool": (5, False, 4)
    },
}

#: in place, the binary vertices take the same figures but for these; comparisons, whose BOOL
#: result cannot overwrite an operand of another type, exist only for BOOL
_COMPARISONS = ("EQUAL", "NOT_EQUAL", "GREATER_THAN", "GREATER_THAN_EQUAL", "LESS_THAN", "LESS_THAN_EQUAL")
BINARY_IN_PLACE: OpTable = {
    **{op: cycles for op, cycles in BINARY.items() if op not in _COMPARISONS},
    "DIVIDE": {**BINARY["DIVIDE"], "unsigned int": (264, False, 1)},
    "MAXIMUM": {**BINARY["MAXIMUM"], "float": (4, False, 2)},
    "MINIMUM": {**BINARY["MINIMUM"], "float": (4, False, 2)},
    "POWER": {**BINARY["POWER"], "int": (34, False, 1)},
    **{op: {"bool": BINARY[op]["bool"]} for op in _COMPARISONS},
}

BROADCAST: OpTable = {
    "ADD": {"float": (1, True, 0), "half": (1, True, 0), "int": (6, False, 1), "unsigned int": (6, False, 1)},
    "ATAN2": {"float": (272, False, 2), "half": (578, False, 4)},
    "BITWISE_AND": {
        "int": (6, False, 1), "unsigned int": (6, False, 1), "short": (2, False, 4),
        "unsigned short": (2, False, 4)
    },
    "BITWISE_OR": {
        "int": (6, False, 1), "unsigned int": (6, False, 1), "short": (2, False, 4),
        "unsigned short": (2, False, 4)
    },
    "BITWISE_XOR": {
        "int": (6, False, 1), "unsigned int": (6, False, 1), "short": (4, False, 2),
        "unsigned short": (4, False, 2)
    },
    "BITWISE_XNOR": {
        "int": (6, False, 1), "unsigned int": (6, False, 1), "short": (4, False, 2),
        "unsigned short": (4, False, 2)
    },
    "DIVIDE": {
        "float": (6, False, 2), "half": (8, False, 2), "int": (277, False, 1),
        "unsigned int": (260, False, 1)
    },
    "LOGICAL_AND": {"bool": (4, False, 4)},
    "LOGICAL_OR": {"bool": (4, False, 4)},
    "MAXIMUM": {
        "float": (3, False, 2), "half": (3, False, 4), "int": (6, False, 1), "unsigned int": (7, False, 1)
    },
    "MINIMUM": {
        "float": (3, False, 2), "half": (3, False, 4), "int": (6, False, 1), "unsigned int": (8, False, 1)
    },
    "MULTIPLY": {
        "float": (1, True, 0), "half": (1, True, 0), "int": (6, False, 1), "unsigned int": (6, False, 1)
    },
    "POWER": {"float": (312, False, 1), "half": (325, False, 1), "int": (23, False, 1)},
    "REMAINDER": {
        "float": (93, False, 2), "half": (225, False, 4), "int": (280, False, 1),
        "unsigned int": (267, False, 1)
    },
    "SHIFT_LEFT": {"int": (6, False, 1), "unsigned int": (6, False, 1)},
    "SHIFT_RIGHT": {"int": (6, False, 1), "unsigned int": (6, False, 1)},
    "SHIFT_RIGHT_SIGN_EXTEND": {"int": (6, False, 1)},
    "SUBTRACT": {
        "float": (1, True, 0), "half": (1, True, 0), "int": (6, False, 1), "unsigned int": (6, False, 1)
    },
    "INV_STD_DEV_TO_VARIANCE": {"float": (11, False, 2), "half": (10, False, 2)},
    "VARIANCE_TO_INV_STD_DEV": {"float": (12, False, 2), "half": (24, False, 4)},
    "EQUAL": {
        "float": (12, False, 4), "half": (8, False, 4), "int": (16, False, 4),
        "unsigned int": (16, False, 4), "short": (16, False, 4), "unsigned short": (16, False, 4),
        "bool": (14, False, 4)
    },
    "GREATER_THAN": {
        "float": (12, False, 4), "half": (8, False, 4), "int": (16, False, 4),
        "unsigned int": (16, False, 4), "bool": (12, False, 4)
    },
    "GREATER_THAN_EQUAL": {
        "float": (12, False, 4), "half": (8, False, 4), "int": (20, False, 4),
        "unsigned int": (20, False, 4), "bool": (12, False, 4)
    },
    "LESS_THAN": {
        "float": (12, False, 4), "half": (8, False, 4), "int": (16, False, 4),
        "unsigned int": (16, False, 4), "bool": (16, False, 4)
    },
    "LESS_THAN_EQUAL": {
        "float": (12, False, 4), "half": (8, False, 4), "int": (20, False, 4),
        "unsigned int": (20, False, 4), "bool": (16, False, 4)
    },
    "NOT_EQUAL": {
        "float": (18, False, 4), "half": (10, False, 4), "int": (16, False, 4),
        "unsigned int": (16, False, 4), "short": (16, False, 4), "unsigned short": (16, False, 4),
        "bool": (4, False, 4)
    },
}

#: in place, the broadcast vertices take the same figures but for these (comparisons: BOOL only)
BROADCAST_IN_PLACE: OpTable = {
    **{op: cycles for op, cycles in BROADCAST.items() if op not in _COMPARISONS},
    "POWER": {**BROADCAST["POWER"], "int": (25, False, 1)},
    "INV_STD_DEV_TO_VARIANCE": {**BROADCAST["INV_STD_DEV_TO_VARIANCE"], "float": (7, True, 0)},
    **{op: {"bool": BROADCAST[op]["bool"]} for op in _COMPARISONS},
    "EQUAL": {"bool": (5, False, 4)},
}
