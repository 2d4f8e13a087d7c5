"""Figure 2: what a correction costs, against regenerating the turn from scratch.

The offline narrator makes each of its realistic faults on purpose (`--faults`)
and answers the engine's correction requests. Its own prose is a sentence or two, so
here every turn it means to write is lengthened to what a real model writes: 120 to
400 words (`model_length`, neutral sentences that name nothing in the story), before
any fault is made of it, so a rejected answer, its correction and the regeneration all
carry the same prose. Every request the engine makes is sized as the Anthropic
narrator would send it (`AnthropicNarrator.request_params`, the real prompt builders
of `engine/narrators/prompts.py`; nothing is sent anywhere), and every answer is sized
as written. Tokens are estimated the same way on both sides (`tokens`: a word piece of
up to six letters or digits, or one punctuation mark, as BPE tokenizers cut English
and JSON; no tokenizer is installed).

Baselines, in the same run:
- a full regeneration: the turn's original request sent again, answered with the
  whole turn (prose, patch and suggestions);
- a correction that resends the whole chain of failures: every rejected attempt
  and its issues, where storyloom sends only the latest.
"""

from __future__ import annotations

import asyncio
import json
import re
from collections import defaultdict
from collections.abc import AsyncIterator, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from benchmarks._common import COMMAND_CYCLE, Figure, Row, median

NOT_A_KEY = "benchmark-sizes-requests-only"
"""The Anthropic narrator refuses to build without a key; no request is ever sent."""


_TOKEN = re.compile(r"[^\W_]{1,6}|[^\w\s]|_")


def tokens(text: str) -> int:
    """Estimated tokens of a text: word pieces of up to six letters or digits, and each punctuation mark."""
    return len(_TOKEN.findall(text))


FILLER = (
    "The wind leans on the shutters and lets go again.",
    "Somewhere below, water slaps against stone in a slow, patient rhythm.",
    "You stand still a moment and listen to the weather.",
    "Salt has crusted every edge, and the air tastes of it.",
    "A gull complains far off, then thinks better of it.",
    "The light outside is thin and grey, the colour of old pewter.",
    "Your breath clouds, hangs, and is gone.",
    "Nothing here hurries; the place has outlasted worse days than this one.",
    "Rain ticks against the glass, now hard, now soft, never quite stopping.",
    "You feel the cold working its way through your sleeves.",
    "The whole building hums faintly, as if the gale were a note it had learned.",
    "Far out, the horizon is only a guess between two greys.",
)
"""Sentences that name no room, item or exit, so lengthened prose keeps every rule it kept."""
MODEL_WORDS = (120, 400)


def model_length(narrative: str) -> str:
    """The narrative lengthened to a real model's turn: 120-400 words, the same for the same narrative."""
    from random import Random

    rng = Random(narrative)
    goal = rng.randint(*MODEL_WORDS)
    parts, words = [narrative], len(narrative.split())
    paragraph: list[str] = []
    while words < goal:
        sentence = rng.choice(FILLER)
        paragraph.append(sentence)
        words += len(sentence.split())
        if len(paragraph) == 4:
            parts.append(" ".join(paragraph))
            paragraph = []
    if paragraph:
        parts.append(" ".join(paragraph))
    return "\n\n".join(parts)


@contextmanager
def model_length_turns() -> Iterator[None]:
    """While inside, every turn the offline narrator means to write carries model-length prose."""
    from storyloom.engine.narrators.offline import narrator as offline

    original = offline.write_turn

    def lengthened(*args: Any, **kwargs: Any) -> dict[str, Any]:
        turn = original(*args, **kwargs)
        return {**turn, "narrative": model_length(turn["narrative"])}

    offline.write_turn = lengthened  # type: ignore[assignment]
    try:
        yield
    finally:
        offline.write_turn = original  # type: ignore[assignment]


@dataclass
class _Recorder:
    """Wraps a narrator and keeps every request it was asked."""

    inner: Any
    requests: list[Any] = field(default_factory=list)

    @property
    def name(self) -> str:
        return self.inner.name

    @property
    def model(self) -> str:
        return self.inner.model

    def narrate(self, request: Any) -> AsyncIterator[Any]:
        self.requests.append(request)
        return self.inner.narrate(request)


@dataclass
class _Turn:
    """One played turn: the requests made for it and the attempts' raw outputs."""

    requests: dict[int, Any] = field(default_factory=dict)
    outputs: dict[int, str] = field(default_factory=dict)
    committed: dict[str, Any] | None = None


async def _play(
    pack: Any, kinds: tuple[str, ...], turns: int, *, budget: int, stubborn: float, seed: int
) -> list[_Turn]:
    from storyloom.engine.lifecycle import Session
    from storyloom.engine.narrators.offline import OfflineNarrator

    narrator = _Recorder(OfflineNarrator(pack, seed=seed, faults=1.0, fault_kinds=kinds, stubborn=stubborn))
    session = Session(pack, narrator, budget=budget)
    played: list[_Turn] = []
    with model_length_turns():
        await _turns(session, narrator, played, turns)
    return played


async def _turns(session: Any, narrator: _Recorder, played: list[_Turn], turns: int) -> None:
    for index in range(turns):
        record = _Turn()
        seen = len(narrator.requests)
        async for event in session.play(COMMAND_CYCLE[index % len(COMMAND_CYCLE)]):
            if event.event == "attempt_finished":
                record.outputs[event.attempt] = (event.raw or "") + event.text
            elif event.event == "turn_committed":
                record.committed = {
                    "narrative": event.narrative,
                    "state_patch": list(event.state_patch),
                    "suggestions": list(event.suggestions),
                }
        for request in narrator.requests[seen:]:
            record.requests[request.attempt] = request
        played.append(record)


def _size(narrator: Any, request: Any) -> int:
    return len(json.dumps(narrator.request_params(request), ensure_ascii=False).encode())


CACHE_LOOKBACK = 20
"""How many content blocks before a breakpoint Anthropic looks back for a cached prefix."""


def _flat(messages: list[dict[str, Any]]) -> list[tuple[int, str, str]]:
    """The messages' content blocks in order, each as (message, role, its JSON without `cache_control`)."""
    return [
        (index, message["role"], json.dumps({k: v for k, v in block.items() if k != "cache_control"}, sort_keys=True))
        for index, message in enumerate(messages)
        for block in message["content"]
    ]


def _breakpoints(messages: list[dict[str, Any]]) -> list[int]:
    """The positions (in `_flat` order) of the blocks that carry a `cache_control` breakpoint."""
    blocks = [block for message in messages for block in message["content"]]
    return [index for index, block in enumerate(blocks) if "cache_control" in block]


def _cut(messages: list[dict[str, Any]], count: int) -> list[dict[str, Any]]:
    """The messages up to their first `count` content blocks."""
    kept: list[dict[str, Any]] = []
    for message in messages:
        if count <= 0:
            break
        kept.append({**message, "content": message["content"][:count]})
        count -= len(message["content"])
    return kept


def _cached_blocks(ours: dict[str, Any], earlier: dict[str, Any]) -> int | None:
    """How many of our message blocks an earlier request's cache entries serve, by Anthropic's rules
    (docs: prompt caching, "what invalidates the cache"): None when the tools differ (the whole
    cache is invalid); 0 when `tool_choice` or the thinking settings differ (tools and system stay
    cached, the messages do not); else the longest prefix the earlier request wrote at one of its
    breakpoints that ours repeats, found within `CACHE_LOOKBACK` blocks before one of our breakpoints."""
    if ours["tools"] != earlier["tools"]:
        return None
    if ours["system"] != earlier["system"]:
        return None  # never within a turn; counted as nothing cached rather than modelled
    if ours.get("tool_choice") != earlier.get("tool_choice") or ours.get("thinking") != earlier.get("thinking"):
        return 0
    mine, theirs = _flat(ours["messages"]), _flat(earlier["messages"])
    reach = _breakpoints(ours["messages"])
    for end in sorted(_breakpoints(earlier["messages"]), reverse=True):
        whole = end + 1 <= len(mine) and mine[: end + 1] == theirs[: end + 1]
        if whole and any(end <= at < end + CACHE_LOOKBACK for at in reach):
            return end + 1
    return 0


def _uncached(narrator: Any, request: Any, earlier: list[Any]) -> int:
    """Bytes of a request the provider's cache cannot serve, given the earlier requests of its turn
    (seconds before it): the best any one of them left cached (`_cached_blocks`). Cache entries of
    other turns are not counted: a correction's own entries (its `tool_choice`) serve a later turn only
    if that turn is corrected alike within the cache's five minutes, which real fault rates make rare."""
    params = narrator.request_params(request)
    best: int | None = None
    for before in earlier:
        blocks = _cached_blocks(params, narrator.request_params(before))
        if blocks is not None and (best is None or blocks > best):
            best = blocks
    if best is None:
        return _size_of(params)
    return _size_of(params) - _size_of({**params, "messages": _cut(params["messages"], best)})


def _size_of(params: dict[str, Any]) -> int:
    return len(json.dumps(params, ensure_ascii=False).encode())


def _chain_size(narrator: Any, requests: dict[int, Any], upto: int) -> int:
    """Bytes of a correction request that carries every rejected attempt so far, not only the latest."""
    params = narrator.request_params(requests[2])
    messages = params["messages"]
    for attempt in range(3, upto + 1):
        narrator._append_correction(messages, requests[attempt])
    return len(json.dumps({**params, "messages": messages}, ensure_ascii=False).encode())


def _shape(answer: str) -> str:
    """The fields a correction's answer sent, in words ("state_patch alone", "the whole turn")."""
    try:
        sent = set(json.loads(answer))
    except (ValueError, TypeError):
        return "unreadable"
    if {"narrative", "state_patch", "suggestions"} <= sent:
        return "the whole turn"
    return " + ".join(sorted(sent)) + (" alone" if len(sent) == 1 else "")


def _third_corrections(figure: Figure, pack: Any, sizer: Any, quick: bool) -> int:
    """The rows of the 3rd correction against the 1st and against the chain baseline, from turns whose
    mistakes are stubborn; returns how many turns reached it."""
    chained = asyncio.run(
        _play(
            pack,
            ("stat_bounds", "take_reach", "wrong_type", "prose_item"),
            4 if quick else 24,
            budget=3,
            stubborn=1.0,
            seed=5,
        )
    )
    first, third, chain_third, base, third_uncached = [], [], [], [], []
    for turn in chained:
        if 4 not in turn.requests:
            continue
        base.append(_size(sizer, turn.requests[1]))
        first.append(_size(sizer, turn.requests[2]))
        third.append(_size(sizer, turn.requests[4]))
        chain_third.append(_chain_size(sizer, turn.requests, 4))
        third_uncached.append(_uncached(sizer, turn.requests[4], [turn.requests[n] for n in (1, 2, 3)]))
    if first:
        growth = median([t / f for t, f in zip(third, first, strict=True)])
        chain_growth = median([t / f for t, f in zip(chain_third, first, strict=True)])
        figure.add(Row("request bytes, 3rd correction", median(third), median(chain_third)))
        figure.add(
            Row(
                "request growth, 3rd / 1st correction (x)",
                growth,
                chain_growth,
                target="flat (<= 1.05)",
                met=growth <= 1.05,
            )
        )
        extra = median(third_uncached)
        chain_extra = median([t - b for t, b in zip(chain_third, base, strict=True)])
        figure.add(Row("uncached bytes of the 3rd correction", extra, chain_extra))
    return len(first)


def run(quick: bool = False) -> Figure:
    """Play every fault kind; size corrections against regenerations and the chain baseline."""
    from storyloom.engine.narrators.anthropic import AnthropicNarrator
    from storyloom.engine.narrators.offline import FAULT_KINDS
    from storyloom.engine.narrators.offline.narrator import RESENDS_PROSE_SHARE
    from storyloom.engine.packs import load_pack

    pack = load_pack("lighthouse")
    sizer = AnthropicNarrator(api_key=NOT_A_KEY)
    per_kind = 2 if quick else 30
    figure = Figure(2, "correction cost", "a full regeneration of the turn; a correction resending the whole chain")

    out_ratio: dict[str, list[float]] = defaultdict(list)
    correction_out: dict[bool, list[int]] = defaultdict(list)
    regen_out: dict[bool, list[int]] = defaultdict(list)
    sent_correction: list[int] = []
    sent_regen: list[int] = []
    uncached: list[int] = []
    kept_out: list[int] = []
    kept_regen: list[int] = []
    shapes: dict[str, int] = defaultdict(int)
    narratives: list[int] = []
    for index, kind in enumerate(FAULT_KINDS):  # a seed each: the same seed would draw alike for every kind
        for turn in asyncio.run(_play(pack, (kind,), per_kind, budget=2, stubborn=0.0, seed=11 + index)):
            if 2 not in turn.requests or turn.committed is None:
                continue
            whole = json.dumps(turn.committed, ensure_ascii=False)
            answer = turn.outputs.get(2, "")
            prose_kept = turn.requests[2].kept_narrative == turn.committed["narrative"]
            correction_out[prose_kept].append(tokens(answer))
            regen_out[prose_kept].append(tokens(whole))
            if prose_kept and '"narrative"' not in answer:
                kept_out.append(tokens(answer))
                kept_regen.append(tokens(whole))
            if prose_kept:
                shapes[_shape(answer)] += 1
            narratives.append(len(turn.committed["narrative"].split()))
            out_ratio[kind].append(tokens(answer) / tokens(whole))
            sent_correction.append(_size(sizer, turn.requests[2]))
            sent_regen.append(_size(sizer, turn.requests[1]))
            uncached.append(_uncached(sizer, turn.requests[2], [turn.requests[1]]))

    def ratio(flags: tuple[bool, ...]) -> tuple[float, float]:
        ours = sum(sum(correction_out[f]) for f in flags)
        theirs = sum(sum(regen_out[f]) for f in flags)
        count = sum(len(correction_out[f]) for f in flags) or 1
        return ours / count, theirs / count

    ours, theirs = ratio((True,))
    figure.add(
        Row(
            "output tokens per correction, only the patch was wrong",
            ours,
            theirs,
            target="ratio <= 0.3",
            met=theirs > 0 and ours / theirs <= 0.3,
        )
    )
    if kept_out:
        ours, theirs = (
            sum(kept_out) / len(kept_out),
            sum(kept_regen) / len(kept_regen),
        )
        figure.add(
            Row(
                "output tokens per correction that left the prose out",
                ours,
                theirs,
                target="ratio <= 0.15",
                met=ours / theirs <= 0.15,
            )
        )
    ours, theirs = ratio((True, False))
    figure.add(Row("output tokens per correction, whole fault mix", ours, theirs))
    figure.add(
        Row("request bytes per correction (vs the turn's own request)", median(sent_correction), median(sent_regen))
    )
    figure.add(Row("uncached request bytes per correction (Anthropic's cache rules)", median(uncached), None))

    reached = _third_corrections(figure, pack, sizer, quick)
    figure.notes += [
        "answers of the corrections that kept the prose: "
        + ", ".join(f"{count} {shape}" for shape, count in sorted(shapes.items(), key=lambda kv: -kv[1]))
        + f" (the offline narrator sends the whole turn anyway in {RESENDS_PROSE_SHARE:.0%} of them, "
        "as a model that disregards the request would: a floor under the 'only the patch was wrong' row)",
        "uncached bytes by Anthropic's cache rules (its docs: a change of tools invalidates everything, of "
        "tool_choice the messages only), against the earlier requests of the same turn",
        f"{sum(len(v) for v in out_ratio.values())} corrected turns over {len(out_ratio)} fault kinds; "
        f"{len(correction_out[True])} with only the patch wrong (the prose on screen was kept)",
        "output/regeneration by fault kind: " + ", ".join(f"{k} {median(v):.2f}" for k, v in out_ratio.items()),
        f"median committed narrative {median(narratives):.0f} words (model length: {MODEL_WORDS[0]}-{MODEL_WORDS[1]}); "
        f"{len(kept_out)} of {len(correction_out[True])} corrections that kept the prose left it out",
        f"{reached} turns reached a 3rd correction (stubborn faults, budget 3)",
        "tokens estimated alike on both sides (word pieces of up to 6 letters, and punctuation); "
        "request bytes as the Anthropic narrator would send them",
    ]
    return figure
