"""benchmarks/keyed_access.py and its two-build runner benchmarks/ab_sides.py: the keys cycle
over every key with no key twice in a row, the sides alternate and their medians are compared."""

from __future__ import annotations

import itertools
import json
import sys
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
import ab_sides
import keyed_access


def test_keys_cycle_over_every_key_never_twice_in_a_row() -> None:
    keys = keyed_access.keys_of(1000, 3000)
    assert sorted(set(keys)) == list(range(1000)) and keys.count(7) == 3
    assert all(a != b for a, b in itertools.pairwise(keys))


def test_the_targets_compare_ten_thousand_keys_with_the_dict_and_the_typed_state() -> None:
    medians = {"after": {"heap, 10,000 keys": 350.0, keyed_access.FLOOR: 70.0,
                         keyed_access.TYPED: 480.0}}  # fmt: skip
    assert keyed_access.targets(medians) == [
        "target heap keyed access, 10,000 keys, vs dict: 5.0x (goal <= 6x): met",
        "target declared state type checked: +130 ns a write against the untyped state "
        "(goal <= 150 ns): met"]  # fmt: skip
    medians["after"]["heap, 10,000 keys"] = 700.0
    assert keyed_access.targets(medians)[0].endswith("10.0x (goal <= 6x): missed")
    medians["after"][keyed_access.TYPED] = 900.0
    assert keyed_access.targets(medians)[1].endswith("+200 ns a write against the untyped "
                                                     "state (goal <= 150 ns): missed")  # fmt: skip


def test_the_sides_alternate_and_their_medians_are_returned(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    calls: list[str] = []
    figures = {"before": iter([10.0, 30.0, 20.0]), "after": iter([5.0, 1.0, 3.0])}

    class Done:
        def __init__(self, python: str) -> None:
            side = "before" if python == "old-python" else "after"
            calls.append(side)
            self.stdout = "noise\n" + json.dumps({"x": next(figures[side])}) + "\n"

    monkeypatch.setattr(ab_sides.subprocess, "run", lambda cmd, **kw: Done(cmd[0]))
    medians: Any = ab_sides.compare("script.py", ["--n", "1"], ["x"], "ns", before="old-python",
                                    rounds=3, weighted=False)  # fmt: skip
    assert calls == ["before", "after", "after", "before", "before", "after"]
    assert medians == {"before": {"x": 20.0}, "after": {"x": 3.0}}
    assert capsys.readouterr().out.splitlines()[-1].split() == ["x", "20", "3", "0.15"]
