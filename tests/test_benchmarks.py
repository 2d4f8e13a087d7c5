"""The benchmarks run on tiny sizes and report every field a reader of the table needs.

No timing is asserted here: the figures belong to `python -m benchmarks` on a
quiet machine, not to the test suite.
"""

from __future__ import annotations

import json
import math

import pytest

from benchmarks import FIGURES, figure_module
from benchmarks.__main__ import main, table
from benchmarks._common import Figure, Row, percentile


def _check_figure(figure: Figure, number: int) -> None:
    assert figure.number == number
    assert figure.name and figure.baseline, "every figure names its baseline"
    assert figure.rows, "every figure reports at least one row"
    for row in figure.rows:
        assert row.metric
        assert row.storyloom is not None and math.isfinite(row.storyloom) and row.storyloom >= 0
        if row.baseline is not None:
            assert math.isfinite(row.baseline) and row.baseline >= 0
        if row.target:
            assert row.met in (True, False), f"{row.metric}: a row with a target says whether it is met"


@pytest.mark.parametrize("number", [2, 3, 6, 7, 8])
def test_in_process_benchmarks_run_at_a_tiny_size(number):
    _check_figure(figure_module(number).run(quick=True), number)


@pytest.mark.slow
@pytest.mark.parametrize("number", [1, 4, 5, 9])
def test_subprocess_benchmarks_run_at_a_tiny_size(number):
    _check_figure(figure_module(number).run(quick=True), number)


def test_each_figure_with_a_baseline_reports_its_ratio():
    figure = figure_module(7).run(quick=True)
    row = figure.rows[0]
    assert row.baseline is not None and row.ratio == pytest.approx(row.storyloom / row.baseline)
    assert row.to_json()["ratio"] == pytest.approx(row.ratio)


def test_the_correction_figure_compares_the_third_correction_with_the_first():
    figure = figure_module(2).run(quick=True)
    growth = next(r for r in figure.rows if r.metric.startswith("request growth"))
    assert growth.baseline is not None and growth.baseline > 1, "the chain baseline grows with each failure"
    assert growth.target and growth.met is not None


def test_the_command_prints_a_table_and_writes_json(tmp_path, capsys):
    out = tmp_path / "results.json"
    assert main(["--quick", "--only", "7", "3", "--json", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "| # | figure | metric | storyloom | baseline | ratio | target | met |" in printed
    assert "validation" in printed and "journal" in printed
    data = json.loads(out.read_text(encoding="utf-8"))
    assert data["quick"] is True and not data["failed"]
    assert {f["number"] for f in data["figures"]} == {3, 7}
    assert data["machine"]["machine"] and data["machine"]["date"]
    for figure in data["figures"]:
        for row in figure["rows"]:
            assert {"metric", "storyloom", "baseline", "ratio", "target", "met"} <= set(row)


def test_the_markdown_table_names_the_date_and_machine(tmp_path, capsys):
    page = tmp_path / "table.md"
    assert main(["--quick", "--only", "7", "--json", str(tmp_path / "r.json"), "--markdown", str(page)]) == 0
    text = page.read_text(encoding="utf-8")
    assert text.startswith("storyloom benchmarks, ") and " UTC, " in text
    assert "| 7 | validation |" in text


def test_a_missed_target_is_shown_in_bold():
    figure = Figure(9, "demo", "nothing")
    figure.add(Row("s", 2.0, 1.0, target="ratio <= 1.3", met=False))
    assert "| 2 | 1 | 2x | ratio <= 1.3 | **no** |" in table([figure])


def test_every_figure_has_a_module_with_run():
    assert sorted(FIGURES) == list(range(1, 10))
    for number in FIGURES:
        assert callable(figure_module(number).run)


def test_percentile_is_nearest_rank():
    samples = list(range(1, 101))
    assert percentile(samples, 50) == 50
    assert percentile(samples, 99) == 99
    assert percentile([3.0], 99) == 3.0


def test_the_correction_figure_plays_turns_of_model_length():
    from benchmarks.correction import MODEL_WORDS, model_length, model_length_turns, tokens
    from storyloom.engine.narrators.offline import narrator as offline

    short = "You take the rope."
    long = model_length(short)
    assert long.startswith(short) and long == model_length(short), "the same prose lengthens the same way"
    assert MODEL_WORDS[0] <= len(long.split()) <= MODEL_WORDS[1] + 20
    assert tokens('{"op": "add"}') == 9, "each brace, quote and colon is a token, as JSON costs a model"
    original = offline.write_turn
    with model_length_turns():
        assert offline.write_turn is not original
    assert offline.write_turn is original, "the offline narrator is itself again after the figure"
    figure = figure_module(2).run(quick=True)
    words = next(n for n in figure.notes if n.startswith("median committed narrative"))
    assert int(words.split()[3]) >= MODEL_WORDS[0]


@pytest.mark.slow
def test_the_whole_path_split_measures_each_part_without_the_screen():
    from benchmarks import whole_path_split

    found = whole_path_split.measure(runs=1, count=40)
    assert set(found) == {"openai", "anthropic", "read", "bare"}
    for case, cpus in found.items():
        assert len(cpus) == 1 and math.isfinite(cpus[0]) and cpus[0] > 0, case


@pytest.mark.slow
def test_the_whole_path_profiles_the_real_process_over_the_stream(tmp_path, monkeypatch):
    import pstats

    from benchmarks import terminal

    monkeypatch.setenv(terminal.CPROFILE_ENV, str(tmp_path))
    terminal.measure([0], kinds=("openai",), count=40)
    profile = pstats.Stats(str(tmp_path / "whole-openai-0.prof")).get_stats_profile()
    narrate = profile.func_profiles.get("narrate")
    assert narrate is not None and narrate.file_name.replace("\\", "/").endswith("engine/narrators/openai.py")


def test_the_uncached_bytes_of_a_correction_follow_anthropic_s_cache_rules():
    """What a correction sends that the cache cannot serve, by Anthropic's table of what invalidates it:
    another tool list, everything; another tool_choice, the messages (the tools and system stay
    cached); the same, only what follows the longest prefix an earlier request of the turn cached."""
    from benchmarks.correction import _uncached

    class Sizer:
        def request_params(self, params):
            return params

    def size(params):
        return len(json.dumps(params, ensure_ascii=False).encode())

    mark = {"type": "ephemeral"}
    turn = {
        "tools": [{"name": "report_turn"}, {"name": "submit_patch"}],
        "system": [{"type": "text", "text": "rules " * 50, "cache_control": mark}],
        "tool_choice": {"type": "tool", "name": "report_turn"},
        "messages": [{"role": "user", "content": [{"type": "text", "text": "state " * 200, "cache_control": mark}]}],
    }
    rejected = [
        {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "report_turn", "input": {}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "wrong"}]},
    ]
    correction = {**turn, "messages": [*turn["messages"], *rejected]}
    assert _uncached(Sizer(), correction, [turn]) == size(correction) - size(turn)
    forced = {**correction, "tool_choice": {"type": "tool", "name": "submit_patch"}}
    assert _uncached(Sizer(), forced, [turn]) == size(forced) - size({**forced, "messages": []})
    retooled = {**correction, "tools": [{"name": "report_turn"}]}
    assert _uncached(Sizer(), retooled, [turn]) == size(retooled)
    again = {**forced, "messages": [*turn["messages"], *rejected, *rejected]}  # the next correction, forced alike
    assert _uncached(Sizer(), again, [turn, forced]) == size(again) - size({**again, "messages": turn["messages"]})
