"""poputil OptionParsing.hpp: OptionSpec and OptionHandler as PopLibs' OptionParsingTest and PopLibs'
own option structs use them; parse's value parsers; PopLibs' error messages."""

import pytest

import poplar_py as poplar
from poplibs_py.poputil import (
    OptionHandler,
    OptionSpec,
    PoplibsArgumentError,
    createOptionalDoubleHandler,
    createOptionalEnumHandler,
    parse,
)

InvalidOption = poplar.InvalidOptionError


def test_ensure_value_is_within_bounds():
    check = OptionHandler.ensureValueIsWithinBounds
    check(0.0, 0.0, True, 10.0, False)
    with pytest.raises(InvalidOption, match=r"Value must be greater than 0\.000000"):
        check(0.0, 0.0, False, 10.0, False)
    check(10.0, 0.0, False, 10.0, True)
    with pytest.raises(InvalidOption, match=r"Value must be less than 10\.000000"):
        check(10.0, 0.0, False, 10.0, False)
    for lo_inc, hi_inc in ((False, True), (True, False), (False, False)):
        check(5.0, 0.0, lo_inc, 10.0, hi_inc)
        check(5, 0, lo_inc, 10, hi_inc)
    with pytest.raises(InvalidOption, match=r"greater than or equal to 3$"):
        check(2, 3, True, 10, True)


class Options:
    partialsType = poplar.FLOAT
    availableMemoryProportion = 0.6
    numIPUs = 1
    useFastPath = False
    name = ""
    seed = None
    method = None


def _spec(opts, tiles):
    return OptionSpec({
        "partialsType": OptionHandler.createWithEnum((opts, "partialsType"),
                                                     {"half": poplar.HALF, "float": poplar.FLOAT}),
        "availableMemoryProportion": OptionHandler.createWithDouble((opts, "availableMemoryProportion"), 0.0),
        "numIPUs": OptionHandler.createWithInteger((opts, "numIPUs")),
        "useFastPath": OptionHandler.createWithBool((opts, "useFastPath")),
        "name": OptionHandler.createWithString(lambda v: setattr(opts, "name", v)),
        "tiles": OptionHandler.createWithList(tiles),
        "seed": createOptionalDoubleHandler((opts, "seed"), 0.0),
        "method": createOptionalEnumHandler((opts, "method"), {"amp": 1, "slic": 2}),
    })


def test_spec_parses_into_options():
    opts, tiles = Options(), []
    spec = _spec(opts, tiles)
    spec.parseAll({"partialsType": "half", "availableMemoryProportion": "0.25", "numIPUs": "0x10",
                   "useFastPath": True, "name": "conv1", "tiles": "1,2, 0x1f", "seed": 3, "method": "slic"})
    assert opts.partialsType == poplar.HALF and opts.availableMemoryProportion == 0.25
    assert opts.numIPUs == 16 and opts.useFastPath is True and opts.name == "conv1"
    assert tiles == [1, 2, 31] and opts.seed == 3.0 and opts.method == 2
    spec.parse("method", "none")
    assert opts.method is None
    spec.parse("numIPUs", 4)  # a number given in a Python dict is its string
    assert opts.numIPUs == 4
    assert "numIPUs" in spec and spec.names()[0] == "availableMemoryProportion"


def test_spec_errors_as_poplibs():
    opts = Options()
    spec = _spec(opts, [])
    with pytest.raises(InvalidOption, match=r"^Unrecognised option 'bogus'$"):
        spec.parse("bogus", "1")
    spec.parse("bogus", "1", ignoreUnknown=True)
    spec.parseAll({"bogus": "1"}, ignoreUnknown=True)
    with pytest.raises(InvalidOption, match=r"^Invalid value 'quarter' for option 'partialsType': Not one of "
                                            r"the values: \['float', 'half'\]$"):
        spec.parse("partialsType", "quarter")
    with pytest.raises(InvalidOption, match="Invalid value '12 ' for option 'numIPUs': Not a valid integer"):
        spec.parse("numIPUs", "12 ")
    with pytest.raises(InvalidOption, match=r"for option 'availableMemoryProportion': Value must be greater "
                                            r"than or equal to 0\.000000"):
        spec.parse("availableMemoryProportion", "-0.5")
    with pytest.raises(InvalidOption, match="Not a floating point number"):
        spec.parse("availableMemoryProportion", "lots")
    with pytest.raises(InvalidOption, match="Not a comma-separated list of integers"):
        spec.parse("tiles", "1,x")
    with pytest.raises(InvalidOption, match=r"option 'useFastPath'.*\['false', 'true'\]"):
        spec.parse("useFastPath", "yes")
    with pytest.raises(InvalidOption, match="Invalid value 'None' for option 'name'"):
        spec.parse("name", None)
    assert opts.numIPUs == 1  # nothing stored by a failed parse


def test_value_parsers():
    assert parse.asInteger("42") == 42 and parse.asInteger(" -7") == -7 and parse.asInteger("0xff") == 255
    for bad in ("4.5", "", "0X10", "1e3", str(2**31)):
        with pytest.raises(InvalidOption, match="Not a valid integer"):
            parse.asInteger(bad)
    assert parse.asInteger(str(2**31), 64) == 2**31
    assert parse.asFloatingPoint("1.5e2") == 150.0 and parse.asFloatingPoint(" .5x") == 0.5
    assert parse.asBool("true") is True and parse.asBool("false") is False
    assert parse.asEnum("b", {"a": 1, "b": 2}) == 2
    assert parse.describeEnumValues({"z": 0, "a": 1}) == "['a', 'z']"
    assert parse.describeEnumValues({}) == "[]"


def test_default_double_bounds_and_handler_errors():
    got = {}
    h = OptionHandler.createWithDouble((got, "x"))
    h.parseValue("2.5")
    assert got == {"x": 2.5}
    with pytest.raises(InvalidOption, match="greater than or equal to"):
        h.parseValue("0")  # PopLibs' default lower bound is the smallest positive double
    custom = OptionHandler(lambda v: got.__setitem__("raw", v))
    OptionSpec([("raw", custom)]).parse("raw", "anything")
    assert got["raw"] == "anything"
    with pytest.raises(PoplibsArgumentError, match="output must be a callable"):
        OptionHandler.createWithInteger(3)
    with pytest.raises(PoplibsArgumentError, match="an option name and an OptionHandler"):
        OptionSpec({"x": 3})
    with pytest.raises(PoplibsArgumentError, match="options must be a dict"):
        OptionSpec({}).parseAll([("x", 1)])
