"""Tutorial 10 (GPT with tensor, pipeline and data parallelism and sharded Adam): one training step
of the simulated Pod against the same step in numpy, for several splits."""

import sys
from dataclasses import replace
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

import poplar_py as poplar

TUT = Path(__file__).resolve().parents[2] / "tutorials" / "tut10_gpt"
sys.path.insert(0, str(TUT))

import breakdown  # noqa: E402
import gpt  # noqa: E402
import reference  # noqa: E402
from model import Sizes, Stage, parameter_shapes  # noqa: E402

SIZES = Sizes(hidden=32, heads=4, layers=2, seq=8, batch=2)
LR = 1e-2


def device(ipus: int, tiles: int = 16) -> poplar.Device:
    m = poplar.IPUModel("ipu21")
    m.numIPUs, m.tilesPerIPU = ipus, tiles
    return m.createDevice()


def _step(sizes: Sizes, split: gpt.Split, phased=False, recompute=False, outlined=False):
    """One step on the Pod and the same step in numpy (float64), from the same parameters and
    micro-batches: (trainer, micro-batches, loss, numpy's loss, numpy's parameters)."""
    trainer = gpt.Trainer(sizes, split, LR, device(split.ipus), phased=phased, recompute=recompute,
                          outlined=outlined)
    full = gpt.initial_parameters(sizes, seed=1)
    trainer.write_parameters(full)
    data = gpt.batches(gpt.DATA.read_bytes(), sizes, split, np.random.default_rng(2))
    loss = trainer.step(data, 1)
    groups = [data.replica(d * split.tp) for d in range(split.dp)]  # each data-parallel group's
    expected_loss, expected = reference.train_step(
        {k: v.astype(np.float64) for k, v in full.items()}, {}, sizes, groups, LR, 1
    )
    return trainer, data, loss, expected_loss, expected


def _shards(trainer, expected: dict[str, np.ndarray]):
    """(replica, name, its parameter on the Pod, numpy's shard of it) for every replica's parameters."""
    for r in range(trainer.split.replicas):
        for name, value in trainer.read_parameters(r).items():
            yield r, name, value, gpt.shard_of(name, expected[name], trainer.split.tp, trainer.replica_tp(r))


def _assert_parameters_match(trainer, expected: dict[str, np.ndarray], atol: float) -> None:
    # a key bias's gradient is zero (softmax ignores what every key adds alike): Adam's first step
    # makes a step of its float rounding, on the Pod and in numpy alike
    for r, name, value, want in _shards(trainer, expected):
        tolerance = LR if name.endswith(".bk") else atol
        np.testing.assert_allclose(value, want, rtol=1e-4, atol=tolerance, err_msg=f"replica {r} {name}")


#: (phased, recompute, outlined)
MODES = {"resident": (False, False, False), "phased": (True, False, False),
         "recomputed": (False, True, False), "outlined": (False, False, True),
         "outlined-recomputed": (False, True, True), "phased-recomputed": (True, True, False)}


#: every mode on the simplest split and on the one using all three parallelisms, every split resident
STEP_CASES = [(*split, mode) for split in [(1, 1, 1), (2, 2, 2)] for mode in MODES] + [
    (*split, "resident") for split in [(2, 1, 1), (1, 1, 2), (1, 2, 2)]]


@pytest.mark.parametrize("tp,pp,dp,mode", STEP_CASES)
def test_a_step_matches_numpy(tp, pp, dp, mode):
    split = gpt.Split(tp, pp, dp, accum=2)
    trainer, _, loss, expected_loss, expected = _step(SIZES, split, *MODES[mode])
    assert loss == pytest.approx(expected_loss, rel=1e-5)
    _assert_parameters_match(trainer, expected, 1e-3 * LR)


@pytest.mark.parametrize("tp,pp,dp,layers_per_ipu,phased,serialization", [
    (1, 1, 1, None, False, 1), (2, 1, 2, None, False, 1), (1, 2, 2, (0, 2), False, 3),
    (2, 2, 1, (0, 2), True, 1)])
def test_a_masked_model_step_matches_numpy(tp, pp, dp, layers_per_ipu, phased, serialization):
    # BERT's objective: attention both ways, 3 masked positions a sequence predicting their bytes
    # (a vocabulary beyond the text's bytes too), the head's products serialised or not
    sizes = replace(SIZES, predictions=3, vocab=301, serialization=serialization)
    split = gpt.Split(tp, pp, dp, accum=2, layers_per_ipu=layers_per_ipu)
    trainer, data, loss, expected_loss, expected = _step(sizes, split, phased)
    assert data.positions is not None and data.targets.shape == (split.replicas, 2, sizes.batch, 3)
    assert (np.take_along_axis(data.tokens, data.positions, axis=-1) == gpt.MASK).all()
    assert loss == pytest.approx(expected_loss, rel=1e-5)
    # Adam's first step divides a gradient by its size: one near its epsilon moves by a fraction of
    # the rate that float's rounding shifts (0.25% of it seen)
    _assert_parameters_match(trainer, expected, 5e-3 * LR)


@pytest.mark.parametrize("phased", [False, True], ids=["resident", "phased"])
@pytest.mark.parametrize("layers_per_ipu", [(0, 2), (2, 0)])
def test_stages_take_the_layers_they_are_given(layers_per_ipu, phased):
    # the embeddings alone on the first IPU, as Graphcore pipelines BERT (or a stage of the head
    # alone): the same step as numpy's
    split = gpt.Split(1, len(layers_per_ipu), 1, accum=len(layers_per_ipu), layers_per_ipu=layers_per_ipu)
    trainer, _, loss, expected_loss, expected = _step(SIZES, split, phased)
    assert [len(st.layers) for st in trainer.stages] == list(layers_per_ipu)
    assert loss == pytest.approx(expected_loss, rel=1e-5)
    _assert_parameters_match(trainer, expected, 1e-3 * LR)


@pytest.mark.parametrize("phased", [False, True], ids=["resident", "phased"])
@pytest.mark.parametrize("tp,pp,dp", [(1, 1, 2), (2, 2, 2)])
def test_a_half_step_stays_near_numpys_float_step(tp, pp, dp, phased):
    # weights, activations and gradients in half, products with half partials, Adam in float: the
    # loss within half's precision of float's; an Adam step moves a weight by about the learning
    # rate, the sign of its gradient's, so a weight is the float step's, less half's rounding,
    # unless its gradient is too small for half to give its sign (a step the other way; a key
    # bias's gradient is zero but for rounding: every step is one of those)
    split = gpt.Split(tp, pp, dp, accum=2)
    trainer, _, loss, expected_loss, expected = _step(replace(SIZES, half=True), split, phased)
    assert loss == pytest.approx(expected_loss, rel=2e-3)
    for _, name, value, want in _shards(trainer, expected):
        assert value.dtype == np.float16
        error = np.abs(value.astype(np.float64) - want)
        assert error.max() <= 2.1 * LR, name
        assert name.endswith(".bk") or (error <= 0.1 * LR).mean() >= 0.9, name


@pytest.mark.parametrize("accum,layers_per_ipu", [(4, (0, 1, 1)), (6, (0, 1, 1, 1))])
def test_the_pipeline_bubble_is_gpipes(accum, layers_per_ipu):
    # the first IPU holds the embedding and the head (a stage of its own after the last), light
    # beside the blocks of the others, as in Graphcore's BERT: GPipe's bubble over the P stages
    # that take time (the light passes on the first IPU add a little fill and drain)
    pp = len(layers_per_ipu)
    sizes = Sizes(hidden=128, heads=4, layers=sum(layers_per_ipu), seq=16, batch=1)
    split = gpt.Split(1, pp, 1, accum, layers_per_ipu)
    trainer = gpt.Trainer(sizes, split, LR, device(split.ipus, tiles=64))
    trainer.write_parameters(gpt.initial_parameters(sizes, seed=1))
    trainer.step(gpt.batches(gpt.DATA.read_bytes(), sizes, split, np.random.default_rng(2)), 1)
    execution = trainer.engine.getProfile()["execution"]
    bubble = breakdown.bubble(execution, trainer.pipeline, range(pp))
    heavy = pp - 1
    assert bubble == pytest.approx((heavy - 1) / (accum + heavy - 1), abs=0.05)
    assert "pipeline bubble" in gpt.describe_cycles(execution, trainer)


def _pipelined_step(accum: int, outlined: bool):
    sizes = Sizes(hidden=128, heads=4, layers=4, seq=16, batch=1)
    split = gpt.Split(1, 2, 1, accum)
    trainer = gpt.Trainer(sizes, split, LR, device(split.ipus, tiles=64), recompute=outlined,
                          outlined=outlined)
    trainer.write_parameters(gpt.initial_parameters(sizes, seed=1))
    trainer.step(gpt.batches(gpt.DATA.read_bytes(), sizes, split, np.random.default_rng(2)), 1)
    return trainer, trainer.engine.getProfile()["execution"]


@pytest.mark.parametrize("outlined", [False, True], ids=["inline", "outlined"])
def test_the_steady_state_projects_a_longer_step(outlined):
    # a step of 6 micro-batches projected from one of 2 lands near the step of 6 itself: the
    # further micro-batches run at the busiest stage's pace (outlined, in the functions it calls)
    trainer, short = _pipelined_step(2, outlined)
    _, long = _pipelined_step(6, outlined)
    projected = breakdown.steady_state(short, trainer.pipeline, range(2), 2, 6)
    assert projected == pytest.approx(long["totalCycles"], rel=0.03)
    assert breakdown.steady_state(short, trainer.pipeline, range(2), 2, 2) == short["totalCycles"]
    span, busy = breakdown.pipeline_busy(short, trainer.pipeline, range(2))
    assert sorted(busy) == [0, 1] and 0 < min(busy.values()) <= max(busy.values()) < span
    assert breakdown.pipeline_span(short, trainer.pipeline, range(2)) == (span, max(busy.values()))


def test_bert_base_is_graphcores_configuration_with_the_flags_given_winning():
    args = gpt.parse_args(["--bert-base", "--batch", "2", "--dp", "1"])
    s, split = gpt.sizes_of(args), gpt.split_of(args)
    assert (s.layers, s.hidden, s.heads, s.seq, s.vocab, s.predictions, s.half) == (
        12, 768, 12, 128, 30522, 20, True)
    assert (split.tp, split.pp, split.dp, split.layers_per_ipu, s.batch, args.steady) == (
        1, 4, 1, (0, 4, 4, 4), 2, 512)
    assert args.recompute and args.outlined and s.serialization == 4
    bert = gpt.parse_args(["--bert-base"])
    assert gpt.sizes_of(bert).batch == 32 and bert.steps == 1  # Graphcore's micro-batch, one step
    # Graphcore's published 16,391 sequences/s on a Bow Pod16, in model FLOPs per IPU
    flops = s.flops_per_token * s.seq * gpt.GRAPHCORE_BERT_BASE_SEQUENCES
    assert flops / 16 / 1e12 == pytest.approx(71.6, abs=0.05)


def test_the_products_memory_proportion_reaches_poplin():
    s = gpt.sizes_of(gpt.parse_args(["--half", "--memory-proportion", "0.28"]))
    options = Stage.options.fget  # the property reads the sizes only
    assert options(SimpleNamespace(s=s)) == {"partialsType": "half", "availableMemoryProportion": "0.28"}
    assert options(SimpleNamespace(s=replace(s, memory_proportion=None))) == {"partialsType": "half"}


def test_bert_base_attaches_to_the_pods_ipus_and_asks_for_bow_ones(monkeypatch, capsys):
    monkeypatch.setattr(gpt, "Trainer", None)  # never reached
    with pytest.raises(SystemExit, match=r"poplar-py run --arch ipu21 tutorials/tut10_gpt/gpt.py --bert"):
        gpt.main(["--bert-base"])
    assert "Attached to device 120: 16 IPUs at 1.33 GHz" in capsys.readouterr().out


@pytest.mark.parametrize("flags,culprit", [
    (["--pod", "16", "--tp", "4"], "--pp 2 x --tp 4 x --dp 4 = 32 IPUs, but a Pod16 has 16"),
    (["--tp", "3", "--pp", "1", "--dp", "1"], "--tp 3 must divide --heads 8"),
    (["--pp", "4", "--layers", "2", "--tp", "1", "--dp", "1"], "--pp 4 is more stages than --layers 2"),
    (["--pp", "2", "--accum", "1", "--tp", "1", "--dp", "1"], "--accum 1 is fewer micro-batches"),
    (["--pp", "2", "--tp", "1", "--dp", "1", "--layers-per-ipu", "0,1"],
     "--layers-per-ipu 0,1 must give each of the --pp 2 stages a number of layers, 2"),
    (["--pp", "2", "--tp", "1", "--dp", "1", "--layers-per-ipu", "0,1,1"], "--layers-per-ipu 0,1,1 must"),
    (["--pp", "1", "--tp", "1", "--dp", "1", "--vocab", "100"], "--vocab 100 must hold the text's 256 bytes"),
    (["--pp", "1", "--tp", "1", "--dp", "1", "--predictions", "200"], "--predictions 200 must be 0"),
    (["--pp", "1", "--tp", "1", "--dp", "1", "--phased", "--outlined"], "give one of them"),
    (["--pp", "1", "--tp", "1", "--dp", "1", "--embedding-serialization", "0"],
     "--embedding-serialization 0 must be from 1 to --vocab 256"),
])
def test_a_split_that_cannot_run_is_named_before_any_graph(flags, culprit, monkeypatch):
    monkeypatch.setattr(gpt, "Trainer", None)  # never reached
    with pytest.raises(SystemExit, match=culprit.replace("+", r"\+")):
        gpt.main(flags)


def test_model_flops_are_six_per_weight_and_token_and_the_attention():
    # training (no recomputation) multiplies every weight matrix's elements by a token three times
    # (forward, and the backward's two products), 2 FLOPs a multiply-add; attention's two products
    # are over the sequence
    s = Sizes(hidden=768, heads=12, layers=12, seq=128, vocab=30522)
    shapes = parameter_shapes(s, 1, range(s.layers), True)
    weights = sum(np.prod(shape) for name, shape in shapes.items()
                  if name.split(".")[-1] in ("wq", "wk", "wv", "wo", "w1", "w2", "wte"))
    assert s.flops_per_token == 6 * weights + 3 * 2 * 2 * s.seq * s.hidden * s.layers


def test_the_tutorial_prints_its_figures(capsys):
    poplar.target.setModelDefaults(tilesPerIPU=16)
    try:
        gpt.main(["--tp", "2", "--pp", "2", "--dp", "1", "--accum", "2", "--layers", "2", "--hidden", "32",
                  "--heads", "4", "--seq", "8", "--steps", "2", "--phased"])
    finally:
        poplar.target.setModelDefaults()
    out = capsys.readouterr().out
    assert "unigram entropy 3.013 nats per byte" in out
    assert "the Pod's SRAM" in out and "IPU 1 of each replica (stage 1): SRAM" in out
    assert out.count("  cycles: compute") == 2 and "tp all-reduce" in out and "pipeline bubble" in out
    losses = [float(line.split()[3]) for line in out.splitlines() if line.startswith("step ")]
    assert out.count(" model TFLOPS per IPU") == 2
    assert len(losses) == 2 and losses[1] < losses[0] < 6
