"""benchmarks/record_settings.py: variants parse into settings, and each variant's ratio is
taken against the first variant of its own round (the machine's phase moves both)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
import record_settings

from .smoke import assert_targets, lines_after, run_script


def test_a_variant_is_a_name_and_its_settings() -> None:
    assert record_settings.parse_variant("defaults:") == ("defaults", {})
    assert record_settings.parse_variant("small: taskmanager.memory.segment-size=4kb, a.b=c=d") == (
        "small",
        {"taskmanager.memory.segment-size": "4kb", "a.b": "c=d"},
    )
    with pytest.raises(SystemExit, match="not KEY=VALUE"):
        record_settings.parse_variant("broken:segment-size")


def test_ratios_are_per_round_against_the_first_variant_then_the_median() -> None:
    # round 2 is slower for both (a loaded phase): per round, "big" costs 1.2x each time
    per_row = {"base": [100.0, 110.0, 200.0], "big": [120.0, 132.0, 240.0]}
    got = record_settings.ratios(per_row)
    assert got["base"] == pytest.approx(1.0)
    assert got["big"] == pytest.approx(1.2)
    # the ratio of the medians would say 110 / 200 = 0.55 here; by round: 1.1, 1.1, 0.5
    per_row = {"base": [100.0, 300.0, 200.0], "big": [110.0, 330.0, 100.0]}
    assert record_settings.ratios(per_row)["big"] == pytest.approx(1.1)


@pytest.mark.bench_smoke
def test_the_script_still_runs_a_round_at_a_tiny_size() -> None:
    """tests/benchmarks/smoke.py: one round of two variants over 40,000 rows prints both rows
    and the target line (at this size CPU per row is within the clock's tick of 0: the
    figures mean nothing)."""
    out = run_script("record_settings.py", "--rows", "40000", "--rounds", "1",
                     "--variant", "defaults:", "--variant",
                     "small:taskmanager.memory.segment-size=8kb")  # fmt: skip
    table = lines_after(out, "variant ")[:2]
    assert [row.split()[0] for row in table] == ["defaults", "small"], out
    assert_targets(out, "record-path-first-variant-vs-cheapest")
