"""Properties of sampling (logit processors, seeded draws, step records) and beam search."""

import itertools
import math

import pytest
import random_models
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import transformer_core as tc
from transformer_core.decoding.generation import context_window, greedy_choice
from transformer_core.decoding.beam import beam_search, beam_search_lm, decoder_lm_step, encoder_decoder_step
from transformer_core.decoding.sampling import (
    STAGES,
    TOP_P_TOLERANCE,
    Sampler,
    SamplingConfig,
    SamplingError,
    apply_repetition_penalty,
    min_p_filter,
    process,
    top_k_filter,
    top_p_filter,
)

V = 40


def lm(vocab_size=V):
    """A random model whose every prediction depends on the whole context (see random_models)."""
    return random_models.lm(vocab_size)


probabilities = st.lists(st.floats(0.0, 1.0), min_size=2, max_size=30).filter(lambda xs: sum(xs) > 1e-3).map(
    lambda xs: torch.tensor(xs, dtype=torch.float32) / sum(xs)
)


# ---------------------------------------------------------------- the processors

@given(probabilities, st.integers(1, 40))
def test_top_k_keeps_exactly_k_candidates(probs, k):
    kept = top_k_filter(probs, k)
    assert int((kept > 0).sum()) <= min(k, probs.numel())
    n_positive = int((probs > 0).sum())
    assert int((kept > 0).sum()) == min(k, n_positive)
    assert torch.allclose(kept.sum(), torch.tensor(1.0), atol=1e-5)


def test_top_k_breaks_ties_towards_the_lower_id():
    probs = torch.full((100,), 0.01)  # long enough for an unstable sort to shuffle ties
    kept = top_k_filter(probs, 3)
    assert (kept > 0).nonzero().flatten().tolist() == [0, 1, 2]


@settings(max_examples=60)
@given(probabilities, st.floats(0.01, 1.0))
def test_top_p_keeps_the_minimal_prefix_reaching_p(probs, p):
    kept = top_p_filter(probs, p) > 0
    kept_mass = probs[kept].double().sum()
    assert kept_mass >= p - 1e-6 or p == 1.0
    # removing the least likely kept token would fall short of p: the set is minimal
    assert kept_mass - probs[kept].min() < p + 1e-6 or kept.sum() == 1
    # it is a prefix: every kept token is at least as likely as every cut one
    if (~kept).any():
        assert probs[kept].min() >= probs[~kept].max()


def test_top_p_on_a_known_distribution():
    probs = torch.tensor([0.1, 0.5, 0.15, 0.25])
    assert (top_p_filter(probs, 0.7) > 0).tolist() == [False, True, False, True]
    assert (top_p_filter(probs, 0.76) > 0).tolist() == [False, True, True, True]


# (probabilities, p, how many tokens the nucleus holds): totals that reach p exactly, just
# above it, and a p so small that only the most likely token can stay
TOP_P_BOUNDARIES = [
    ([0.7, 0.2, 0.1], 0.9, 2), ([0.7, 0.2, 0.1], 0.7, 1), ([0.7, 0.2, 0.1], 0.9001, 3),
    ([0.5, 0.5], 0.5, 1), ([0.25] * 4, 0.75, 3), ([0.6, 0.3, 0.1], 0.9, 2), ([0.1, 0.2, 0.3, 0.4], 0.7, 2),
    ([0.7, 0.2, 0.1], 1e-9, 1),
]


@pytest.mark.parametrize("probs, p, n_kept", TOP_P_BOUNDARIES)
def test_top_p_at_exact_boundaries_keeps_the_shortest_run_that_reaches_p(probs, p, n_kept):
    probs = torch.tensor(probs)
    kept = top_p_filter(probs, p) > 0
    assert int(kept.sum()) == n_kept and bool(kept[probs.argmax()])


def test_top_p_counts_a_run_short_of_p_by_the_tolerance_as_reaching_it():
    probs = torch.tensor([0.5, 0.5])
    assert int((top_p_filter(probs, 0.5 + TOP_P_TOLERANCE) > 0).sum()) == 1
    assert int((top_p_filter(probs, 0.5 + 2 * TOP_P_TOLERANCE) > 0).sum()) == 2


@pytest.mark.parametrize("probs, p, n_kept", TOP_P_BOUNDARIES)
def test_top_p_boundaries_agree_with_transformers(probs, p, n_kept):
    transformers = pytest.importorskip("transformers")
    theirs = transformers.generation.logits_process.TopPLogitsWarper(p)(None, torch.tensor(probs).log()[None])[0]
    assert int(torch.isfinite(theirs).sum()) == n_kept  # which of tied tokens stays differs: ours the lower id


def test_min_p_keeps_tokens_relative_to_the_top_one():
    probs = torch.tensor([0.5, 0.3, 0.12, 0.08])
    assert (min_p_filter(probs, 0.2) > 0).tolist() == [True, True, True, False]


def test_repetition_penalty_makes_seen_tokens_less_likely():
    logits = torch.tensor([2.0, -1.0, 0.5, 1.0])
    out = apply_repetition_penalty(logits, [0, 1, 1, 2], 2.0)
    assert out.tolist() == [1.0, -2.0, 0.25, 1.0] and logits.tolist() == [2.0, -1.0, 0.5, 1.0]


@settings(max_examples=40)
@given(st.integers(0, 2**31 - 1), st.floats(0.05, 3.0), st.integers(0, 50), st.floats(0.05, 1.0), st.floats(0, 0.5),
       st.floats(0.5, 2.0))
def test_every_processed_distribution_sums_to_one(seed, temperature, k, p, min_p, penalty):
    logits = torch.randn(V, generator=torch.Generator().manual_seed(seed)) * 3
    config = SamplingConfig(temperature=temperature, top_k=k, top_p=p, min_p=min_p, repetition_penalty=penalty)
    stages = process(logits, [1, 2, 2, 7], config)
    assert list(stages) == list(STAGES)
    for probs in stages.values():
        assert torch.allclose(probs.sum(), torch.tensor(1.0), atol=1e-5)
        assert (probs >= 0).all()


def test_temperature_zero_is_argmax():
    model = lm()
    greedy = tc.generate(model, [1, 2, 3], 20)
    assert tc.generate(model, [1, 2, 3], 20, choose=Sampler(SamplingConfig(temperature=0))) == greedy
    # and sampling at a tiny temperature converges to it
    assert tc.generate(model, [1, 2, 3], 20, choose=Sampler(SamplingConfig(temperature=1e-4, seed=5))) == greedy


@pytest.mark.parametrize("bad", [dict(temperature=-0.1), dict(top_k=-1), dict(top_p=0.0), dict(top_p=1.5),
                                 dict(min_p=-0.1), dict(repetition_penalty=0.0)])
def test_settings_outside_their_range_raise_sampling_error(bad):
    (name, value), = bad.items()
    with pytest.raises(SamplingError, match=rf"^{name} must be .*, got {value}$"):
        SamplingConfig(**bad)
    assert SamplingConfig(temperature=0).greedy and not SamplingConfig(temperature=0.5).greedy


def test_an_infinite_repetition_penalty_is_refused_and_no_finite_one_gives_nan():
    with pytest.raises(SamplingError, match=r"^repetition_penalty must be finite and > 0 \(1 = off\), got inf$"):
        SamplingConfig(repetition_penalty=math.inf)  # it sent a seen logit of exactly 0 to NaN
    logits = torch.tensor([0.0, 1.0, -1.0, -0.0])
    for penalty in (1e-30, 0.5, 2.0, 1e30):
        sampler = Sampler(SamplingConfig(temperature=1.0, repetition_penalty=penalty))
        token, record = sampler(logits, [0, 1, 2, 3])
        assert not any(math.isnan(p) for probs in record.probs.values() for p in probs) and record.chosen_prob > 0


def test_each_processor_returns_the_distribution_untouched_at_its_off_value():
    logits = torch.tensor([2.0, -1.0, 0.5, 1.0])
    probs = torch.softmax(logits, -1)
    assert apply_repetition_penalty(logits, [0, 2], 1.0) is logits and apply_repetition_penalty(logits, [], 1.5) is logits
    assert top_k_filter(probs, 0) is probs and top_k_filter(probs, 4) is probs
    tail = torch.tensor([1 - 1e-7, 1e-7])  # p = 1 keeps even a token the tolerance would drop
    assert top_p_filter(tail, 1.0) is tail
    assert min_p_filter(probs, 0.0) is probs


def test_min_p_may_be_one_which_keeps_only_the_most_likely_tokens_and_no_more_than_one():
    probs = process(torch.tensor([1.0, 3.0, 3.0, 0.0]), [], SamplingConfig(min_p=1.0))["min-p"]
    assert probs.tolist() == [0.0, 0.5, 0.5, 0.0]  # the two tied at the top
    with pytest.raises(SamplingError, match=r"^min_p must be in \[0, 1\] \(0 = off\), got 1.5$"):
        SamplingConfig(min_p=1.5)


def test_temperature_divides_the_logits_and_zero_is_argmax_with_ties_to_the_lower_id():
    from transformer_core.decoding.sampling import apply_temperature

    logits = torch.tensor([1.0, 3.0, 3.0, -2.0])
    assert apply_temperature(logits, 0).tolist() == [0.0, 1.0, 0.0, 0.0]
    assert torch.allclose(apply_temperature(logits, 2.0), torch.softmax(logits / 2, -1))
    assert greedy_choice(logits, []) == (1, None)


def test_min_p_keeps_a_token_exactly_at_its_threshold():
    probs = torch.tensor([0.5, 0.25, 0.125, 0.125])
    assert (min_p_filter(probs, 0.25) > 0).tolist() == [True, True, True, True]  # 0.25 x 0.5 = 0.125 stays
    assert torch.allclose(min_p_filter(probs, 0.5), torch.tensor([2 / 3, 1 / 3, 0, 0]))


def test_the_stages_come_in_order_and_a_record_keeps_the_chosen_token_even_when_it_ranks_low():
    from transformer_core.decoding.sampling import record_step

    logits = torch.tensor([3.0, 2.0, 1.0, 0.0, -1.0])
    # penalised [1.5, 2, 1, 0, -1]; at T = 0.5 about [.24, .66, .09, .012, .002]: top-k cuts token 4,
    # top-p (0.9) token 3, min-p (0.2 x the top) token 2
    config = SamplingConfig(temperature=0.5, top_k=4, top_p=0.9, min_p=0.2, repetition_penalty=2.0)
    stages = process(logits, [0], config)
    assert list(stages) == list(STAGES)
    record = record_step(7, stages, chosen=4, n_candidates=2)
    assert record.step == 7 and record.candidates == [1, 0, 4]  # the penalty put token 1 first
    assert record.probs["raw"] == pytest.approx(torch.softmax(logits, -1)[[1, 0, 4]].tolist())
    assert record.kept == {"raw": 5, "penalty": 5, "temperature": 5, "top-k": 4, "top-p": 3, "min-p": 2}
    assert record.chosen == 4 and record.chosen_prob == 0.0  # cut: the record says so
    assert record.chosen_raw_prob == pytest.approx(float(torch.softmax(logits, -1)[4]))
    everything = record_step(0, stages, chosen=2, n_candidates=5)
    assert everything.candidates == [1, 0, 2, 3, 4] and everything.chosen_prob == 0.0  # min-p cut it
    assert [everything.cut_at(stage) for stage in STAGES[1:]] == [[], [], [4], [3], [2]]


def test_a_greedy_sampler_takes_the_top_token_and_counts_its_steps():
    sampler = Sampler(SamplingConfig(temperature=0, seed=3), n_candidates=3)
    logits = torch.tensor([0.1, 2.0, 0.3])
    (first, record), (second, later) = sampler(logits, []), sampler(logits, [1])
    assert first == second == 1 and (record.step, later.step) == (0, 1) and record.chosen_prob == 1.0
    assert len(record.candidates) == 3 and sampler.step == 2


def test_a_sampler_draws_only_from_the_last_stage_and_records_ten_candidates():
    sampler = Sampler(SamplingConfig(temperature=1.5, min_p=0.3, seed=1))
    logits = torch.arange(20.0) / 4
    records = [sampler(logits, [])[1] for _ in range(200)]
    assert all(r.chosen_prob > 0 for r in records)  # never a token min-p cut
    assert len({r.chosen for r in records}) > 1 and len(records[0].candidates) == 10


def test_with_the_cache_each_step_feeds_one_token_and_without_it_the_whole_text():
    model = lm()
    fed = []
    model.embed.register_forward_hook(lambda module, args, out: fed.append(args[0].shape[1]))
    cached = tc.generate(model, [1, 2, 3, 4], 5)
    assert fed == [4, 1, 1, 1, 1]
    fed.clear()
    assert tc.generate(model, [1, 2, 3, 4], 5, use_cache=False) == cached and fed == [4, 5, 6, 7, 8]


def test_generation_stops_right_after_a_stop_token_and_needs_a_prompt():
    model = lm()
    free = tc.generate(model, [1, 2], 12)
    stop = free[4]
    assert tc.generate(model, [1, 2], 12, stop_ids=(stop,)) == free[: free.index(stop) + 1]
    with pytest.raises(ValueError, match="^generation needs a prompt of at least one token$"):
        tc.generate(model, [], 5)


# ---------------------------------------------------------------- seeded generation and records

def test_the_same_seed_gives_the_same_text_and_another_seed_another():
    model = lm()
    config = SamplingConfig(temperature=1.2, seed=7)
    first = tc.generate(model, [4], 30, choose=Sampler(config))
    assert tc.generate(model, [4], 30, choose=Sampler(config)) == first
    assert tc.generate(model, [4], 30, choose=Sampler(SamplingConfig(temperature=1.2, seed=8))) != first


def test_streamed_tokens_equal_the_non_streamed_result():
    model = lm()
    config = SamplingConfig(temperature=0.9, top_k=20, top_p=0.95, seed=3)
    streamed = [token for token, _ in tc.stream(model, [5, 6], 25, choose=Sampler(config))]
    assert streamed == tc.generate(model, [5, 6], 25, choose=Sampler(config))


def test_step_records_agree_with_the_produced_text():
    model = lm()
    config = SamplingConfig(temperature=1.0, top_k=8, top_p=0.9, min_p=0.02, repetition_penalty=1.2, seed=11)
    ids = [1, 2]
    for step, (token, record) in enumerate(tc.stream(model, [1, 2], 30, choose=Sampler(config))):
        assert record.step == step and record.chosen == token
        assert token in record.candidates
        final = record.probs[STAGES[-1]][record.candidates.index(token)]
        assert final == pytest.approx(record.chosen_prob) and final > 0
        # the record is the processed distribution of this very prefix
        logits, _ = tc.next_token_logits(model, ids, use_cache=False)
        assert record.chosen_prob == pytest.approx(float(process(logits, ids, config)["min-p"][token]), abs=1e-5)
        assert record.kept["top-k"] == 8 and record.kept["min-p"] <= record.kept["top-p"] <= 8
        for stage in STAGES[1:]:
            for cut in record.cut_at(stage):
                assert cut != token
        ids.append(token)


# ---------------------------------------------------------------- one context policy


@given(st.integers(1, 400), st.integers(1, 64))
def test_the_context_window_fills_then_restarts_at_half_and_grows_one_token_a_step(n_tokens, max_len):
    window = context_window(n_tokens, max_len)
    assert 1 <= window <= min(n_tokens, max_len)
    if n_tokens <= max_len:
        assert window == n_tokens
    following = context_window(n_tokens + 1, max_len)
    # one more token: the window grows by it, or (full) restarts at half the context
    assert following == window + 1 or (window == max_len and following == max(max_len // 2, 1))


def test_cached_step_by_step_and_recomputed_generation_agree_past_the_context():
    model = random_models.lm(max_len=16)
    prompt = torch.randint(0, V, (20,), generator=torch.Generator().manual_seed(3)).tolist()  # overflows already
    config = SamplingConfig(temperature=1.0, top_k=20, seed=3)
    cached = tc.generate(model, prompt, 40, choose=Sampler(config))
    recomputed = tc.generate(model, prompt, 40, choose=Sampler(config), use_cache=False)
    one_at_a_time, sampler = list(prompt), Sampler(config)  # as the Generate tab's Step: a fresh cache each time
    for _ in range(40):
        logits, _ = tc.next_token_logits(model, one_at_a_time)
        one_at_a_time.append(sampler(logits, one_at_a_time)[0])
    assert cached == recomputed == one_at_a_time[len(prompt):]
    ids, cache = list(prompt), None  # the same window, so the same logits, at every step
    for token in cached:
        logits, cache = tc.next_token_logits(model, ids, cache)
        window = ids[-context_window(len(ids), 16):]
        with torch.no_grad():
            assert torch.allclose(logits, model(torch.tensor([window]))[0, -1], atol=1e-5)
        ids.append(token)


# ---------------------------------------------------------------- beam search

def _sequence_logprob(model, prompt, tokens):
    """log p(tokens | prompt) by one full forward pass, no cache."""
    ids = torch.tensor([prompt + tokens])
    with torch.no_grad():
        logprobs = torch.log_softmax(model(ids)[0, :-1].float(), -1)
    positions = range(len(prompt) - 1, len(prompt) + len(tokens) - 1)
    return sum(float(logprobs[i, t]) for i, t in zip(positions, tokens))


def test_beam_search_with_width_one_equals_greedy():
    model = lm()
    assert beam_search_lm(model, [3, 1, 4], 1, 30).best.tokens == tc.generate(model, [3, 1, 4], 30)


@pytest.mark.parametrize("width", [2, 5, 8])
def test_beam_scores_are_the_true_log_probabilities(width):
    model = lm()
    result = beam_search_lm(model, [2, 7], width, 12)
    assert len(result.hypotheses) == width
    for h in result.hypotheses:  # the cache rows followed their beams
        assert h.logprob == pytest.approx(_sequence_logprob(model, [2, 7], h.tokens), abs=1e-4)
    assert [h.score for h in result.hypotheses] == sorted((h.score for h in result.hypotheses), reverse=True)


def test_beam_tree_keeps_width_candidates_per_step_and_links_parents():
    model = lm()
    width = 4
    result = beam_search_lm(model, [9], width, 6)
    cumulative = {0: 0.0}
    for candidates in result.steps:
        kept = [c for c in candidates if c.status == "kept"]
        assert len(kept) == width
        assert {c.slot for c in kept} == set(range(width))
        assert all(c.status == "pruned" for c in candidates if c not in kept)
        assert min(c.cumulative for c in kept) >= max(c.cumulative for c in candidates if c not in kept)
        for c in candidates:
            assert c.cumulative == pytest.approx(cumulative[c.parent] + c.logprob, abs=1e-5)
        cumulative = {c.slot: c.cumulative for c in kept}


def test_beam_search_over_two_steps_with_the_whole_vocabulary_is_exhaustive():
    vocab = 6
    model = lm(vocab_size=vocab)
    result = beam_search_lm(model, [1], vocab, 2)
    best = max(itertools.product(range(vocab), repeat=2), key=lambda seq: _sequence_logprob(model, [1], list(seq)))
    assert result.best.tokens == list(best)


EOS = 0


def _table_logprobs(seed: int, prefix: tuple[int, ...], vocab: int) -> torch.Tensor:
    """A made-up model's next-token log-probabilities: a random table over whole prefixes,
    eos often the likeliest token early on (so short hypotheses finish and tempt an early stop)."""
    generator = torch.Generator().manual_seed(hash((seed, *prefix)) % 2**62)
    scale = 8 * torch.rand((), generator=generator)  # some steps near-certain, some near-uniform
    return torch.log_softmax(scale * torch.randn(vocab, generator=generator), -1)


class PrefixCache:
    """Stands in for the KV cache: each row holds its beam's whole prefix, so a row that does
    not follow its beam (a missing or wrong `reorder`) scores the wrong prefix."""

    def __init__(self):
        self.rows = None

    def reorder(self, index: torch.Tensor) -> None:
        self.rows = [self.rows[i] for i in index.tolist()]


def _prefix_step(logprobs):
    """A beam-search step function for a model given as prefix (tuple) -> log-probabilities (V,)."""

    def step(tokens: torch.Tensor, cache: PrefixCache) -> torch.Tensor:
        new = [tuple(row) for row in tokens.tolist()]
        cache.rows = new if cache.rows is None else [row + t for row, t in zip(cache.rows, new)]
        return torch.stack([logprobs(row) for row in cache.rows])

    return step


def _brute_force(seed: int, prompt: list[int], vocab: int, max_new_tokens: int, length_penalty: float):
    """Every hypothesis beam search could return (ended by eos, or max_new_tokens long), best first."""
    hypotheses = []
    for length in range(1, max_new_tokens + 1):
        for tokens in itertools.product(range(vocab), repeat=length):
            if EOS in tokens[:-1] or (tokens[-1] != EOS and length < max_new_tokens):
                continue
            logprob = sum(float(_table_logprobs(seed, tuple(prompt) + tokens[:i], vocab)[t])
                          for i, t in enumerate(tokens))
            hypotheses.append((list(tokens), logprob / length**length_penalty))
    return sorted(hypotheses, key=lambda h: -h[1])


# (vocabulary, width, new tokens) where fewer live extensions than `width` compete at every step
# but the last, so nothing is pruned that could still rank: beam search is exact there and must
# rank the best hypotheses as the brute force does
EXHAUSTIVE = [(2, 2, 10), (3, 5, 3), (4, 4, 2)]


@pytest.mark.parametrize("vocab, width, max_new_tokens", EXHAUSTIVE)
@pytest.mark.parametrize("length_penalty", [-0.5, 0.0, 0.5, 1.0, 2.0])
def test_beam_search_finds_what_brute_force_finds_with_and_without_a_length_penalty(vocab, width, max_new_tokens,
                                                                                    length_penalty):
    for seed in range(12):
        step = _prefix_step(lambda prefix: _table_logprobs(seed, prefix, vocab))
        result = beam_search(step, PrefixCache(), [1], width, max_new_tokens, length_penalty, eos_id=EOS)
        expected = _brute_force(seed, [1], vocab, max_new_tokens, length_penalty)[:width]
        assert [h.tokens for h in result.hypotheses] == [tokens for tokens, _ in expected], seed
        assert [h.score for h in result.hypotheses] == pytest.approx([score for _, score in expected], abs=1e-5)


def test_a_short_finished_hypothesis_does_not_stop_a_longer_one_that_scores_better():
    # eos first (p 0.6), then a token that is followed by itself almost surely
    def logprobs(prefix):
        return torch.tensor([0.6, 0.4] if len(prefix) == 1 else [0.001, 0.999]).log()

    result = beam_search(_prefix_step(logprobs), PrefixCache(), [1], 1, 10, length_penalty=1.0, eos_id=EOS)
    assert result.best.tokens == [1] * 10
    assert result.best.score == pytest.approx((math.log(0.4) + 9 * math.log(0.999)) / 10)
    assert result.best.score > math.log(0.6)  # the [eos] the search used to stop at


@pytest.mark.parametrize("p_eos", [0.6, 0.5])  # eos likelier than the alternative, or tied with it
def test_the_search_stops_as_soon_as_no_live_beam_can_beat_the_finished_ones(p_eos):
    def logprobs(prefix):
        return torch.tensor([p_eos, 1 - p_eos]).log()

    result = beam_search(_prefix_step(logprobs), PrefixCache(), [1], 1, 10, length_penalty=0.0, eos_id=EOS)
    assert result.best.tokens == [EOS] and len(result.steps) == 1


def test_finished_hypotheses_end_at_eos():
    model = lm()
    eos = tc.generate(model, [3], 1)[0]  # the likeliest first token ends a hypothesis at once
    result = beam_search_lm(model, [3], 3, 10, length_penalty=0.0, eos_id=eos)
    ended = [c for step in result.steps for c in step if c.status == "finished"]
    assert ended and all(c.token == eos for c in ended)
    assert [eos] in [h.tokens for h in result.hypotheses]  # one token at log p > any 10-token beam's
    assert all(eos not in h.tokens[:-1] for h in result.hypotheses)  # nothing runs on past an eos


def test_beam_search_rejects_bad_width_and_too_long_requests():
    model = lm()
    for width in (0, 9):
        with pytest.raises(ValueError, match=f"^beam width must be between 1 and 8, got {width}$"):
            beam_search_lm(model, [1], width, 5)
    with pytest.raises(ValueError, match=r"prompt \(60\) \+ new tokens \(5\) must fit in the context of 64 tokens"):
        beam_search_lm(model, [1] * 60, 2, 5)
    assert len(beam_search_lm(model, [1] * 60, 2, 4).best.tokens) == 4  # exactly full is fine
    with pytest.raises(ValueError, match="^beam search needs a prompt of at least one token$"):
        beam_search(decoder_lm_step(model), model.new_cache(), [], 2, 4)


def test_beam_scores_divide_by_length_to_the_penalty_which_is_1_by_default():
    model = lm()
    eos = tc.generate(model, [3], 1)[0]
    for result, penalty in ((beam_search_lm(model, [3], 4, 6, eos_id=eos), 1.0),
                            (beam_search_lm(model, [3], 4, 6, length_penalty=0.5, eos_id=eos), 0.5)):
        assert {len(h.tokens) for h in result.hypotheses} != {6}  # finished ones of other lengths compete
        for h in result.hypotheses:
            assert h.score == pytest.approx(h.logprob / len(h.tokens) ** penalty)


class DeviceSpy(torch.nn.Module):
    """A model whose weights live on the meta device: it records where its inputs arrive."""

    def __init__(self, vocab: int = 5):
        super().__init__()
        self.weight = torch.nn.Parameter(torch.empty(1, device="meta"))
        self.vocab, self.seen = vocab, []

    def forward(self, idx, cache=None):
        self.seen.append(idx.device.type)
        return torch.zeros(*idx.shape, self.vocab)

    def encode(self, src, lengths):
        self.seen.append(src.device.type)
        return torch.zeros(1, src.shape[1], 4)

    def decode(self, tgt, memory, lengths, cache=None):
        self.seen.append(tgt.device.type)
        assert memory.shape[0] == tgt.shape[0] and (lengths is None or lengths.shape == (tgt.shape[0],))
        return torch.zeros(*tgt.shape, self.vocab)


def test_step_functions_send_the_tokens_to_the_models_device_and_return_log_probabilities():
    spy = DeviceSpy()
    logprobs = decoder_lm_step(spy)(torch.tensor([[1, 2], [1, 2]]), None)
    assert logprobs.shape == (2, 5) and torch.allclose(logprobs.exp().sum(-1), torch.ones(2))
    for lengths in (None, torch.tensor([3])):  # a source without padding needs no lengths
        step = encoder_decoder_step(spy, torch.tensor([[1, 2, 3]]), lengths, 2)
        assert step(torch.tensor([[0], [0]]), None).shape == (2, 5)
    assert spy.seen == ["meta"] * 5


def test_beam_search_drives_an_encoder_decoder_through_the_same_interface():
    model = random_models.encdec()
    src, lengths = torch.randint(0, 30, (1, 9)), torch.tensor([7])
    # greedy translation by full recomputation
    memory, tgt = model.encode(src, lengths), [0]
    with torch.no_grad():
        for _ in range(12):
            tgt.append(int(model.decode(torch.tensor([tgt]), memory, lengths)[0, -1].argmax()))
    width_one = beam_search(encoder_decoder_step(model, src, lengths, 1), model.new_cache(), [0], 1, 12)
    assert width_one.best.tokens == tgt[1:]
    wide = beam_search(encoder_decoder_step(model, src, lengths, 4), model.new_cache(), [0], 4, 12)
    with torch.no_grad():
        for h in wide.hypotheses:
            logprobs = torch.log_softmax(model.decode(torch.tensor([[0] + h.tokens[:-1]]), memory, lengths)[0], -1)
            assert h.logprob == pytest.approx(sum(float(logprobs[i, t]) for i, t in enumerate(h.tokens)), abs=1e-4)


# ---------------------------------------------------------------- the quality benchmark's scoring

@given(st.integers(2, 300), st.integers(2, 64), st.data())
def test_sliding_windows_score_every_token_once_with_enough_context(n_tokens, context, data):
    from benchmarks.lm_quality import windows

    stride = data.draw(st.integers(1, context))
    scored = []
    for begin, end, first in windows(n_tokens, context, stride):
        assert end - begin <= context
        assert begin == 0 or first - begin >= context - stride  # every target sees context - stride tokens or more
        scored += range(first, end)
    assert scored == list(range(1, n_tokens))


def test_sliding_window_nll_equals_one_full_pass_when_the_text_fits():
    from benchmarks.lm_quality import sliding_window_nll

    model = lm()
    ids = torch.randint(0, V, (50,)).tolist()
    with torch.no_grad():
        logprobs = torch.log_softmax(model(torch.tensor([ids]))[0].double(), -1)
    expected = -sum(float(logprobs[t - 1, ids[t]]) for t in range(3, 50))
    nll, count = sliding_window_nll(model, ids, 3, stride=7)
    assert count == 47 and nll == pytest.approx(expected, rel=1e-9)


def test_sliding_window_nll_gives_each_token_its_windowed_context():
    from benchmarks.lm_quality import sliding_window_nll, windows

    model = lm()  # max_len 64, so 150 tokens need several windows
    ids = torch.randint(0, V, (150,)).tolist()
    expected = 0.0
    with torch.no_grad():
        for begin, end, first in windows(150, 64, 16):
            logprobs = torch.log_softmax(model(torch.tensor([ids[begin:end]]))[0].double(), -1)
            expected -= sum(float(logprobs[t - begin - 1, ids[t]]) for t in range(first, end))
    nll, count = sliding_window_nll(model, ids, 1, stride=16, batch_size=3)
    assert count == 149 and nll == pytest.approx(expected, rel=1e-6)


def test_a_vanishing_temperature_is_argmax_not_nan():
    from transformer_core.decoding.sampling import apply_temperature

    logits = torch.tensor([1.0, 3.0, -2.0, 3.0 - 1e-3])
    probs = apply_temperature(logits, 1e-308)  # logits / T overflows unless the top logit is shifted to 0
    assert not torch.isnan(probs).any()
    assert probs.tolist() == [0.0, 1.0, 0.0, 0.0]
