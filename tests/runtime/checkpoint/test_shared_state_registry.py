"""The shared-state registry: reference counts, ownership, CLAIM and NO_CLAIM.

The Hypothesis state machine restores from a snapshot (CLAIM or NO_CLAIM), then registers
checkpoints that share random files (new ones and old ones, the restored snapshot's included)
and releases them in random order. The registry's decisions are executed on real files in a
temporary directory, and after every step:

* no file is deleted while a held checkpoint refers to it;
* every owned file that no checkpoint holds is deleted (so eventually, once released, all are);
* under NO_CLAIM the restored files are never deleted: listing and bytes are unchanged.
"""

from __future__ import annotations

import hashlib
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    precondition,
    rule,
)

from undertow.core.errors import StateError
from undertow.runtime.checkpoint.claim_mode import RecoveryClaimMode
from undertow.runtime.checkpoint.shared_state_registry import Release, SharedStateRegistry


def test_file_deleted_when_the_last_holder_releases_it() -> None:
    registry = SharedStateRegistry()
    registry.register(1, ["shared/a", "shared/b"])
    registry.register(2, ["shared/b", "shared/c"])
    assert registry.holders("shared/b") == {1, 2}
    assert registry.release(1) == Release(1, delete=("shared/a",))
    assert registry.release(2) == Release(2, delete=("shared/b", "shared/c"))
    assert len(registry) == 0


def test_no_claim_restored_files_are_never_deleted_even_if_reused() -> None:
    registry = SharedStateRegistry()
    registry.register_restored(7, ["old/a", "old/b"], RecoveryClaimMode.NO_CLAIM)
    registry.register(8, ["old/b", "shared/new"])  # a later checkpoint re-uses a restored file
    assert not registry.is_owned("old/b")
    assert registry.release(7) == Release(7, delete=(), forget=("old/a",))
    assert registry.release(8) == Release(8, delete=("shared/new",), forget=("old/b",))


def test_claim_restored_files_are_owned() -> None:
    registry = SharedStateRegistry()
    registry.register_restored(7, ["old/a"], RecoveryClaimMode.CLAIM)
    registry.register(8, ["old/a"])
    assert registry.release(7).delete == ()
    assert registry.release(8).delete == ("old/a",)


def test_misuse_names_the_checkpoint() -> None:
    registry = SharedStateRegistry()
    registry.register(3, ["a"])
    with pytest.raises(StateError, match="checkpoint 3 registered its files twice"):
        registry.register(3, ["b"])
    registry.release(3)
    with pytest.raises(StateError, match="checkpoint 3 holds no files"):
        registry.release(3)


FILE_NAMES = [f"shared/f{i}" for i in range(12)]


class RegistryMachine(RuleBasedStateMachine):
    """The registry's decisions executed on files; the model is the set of held checkpoints."""

    @initialize(
        mode=st.sampled_from(list(RecoveryClaimMode)),
        restored=st.sets(st.sampled_from(FILE_NAMES), max_size=5),
    )
    def restore(self, mode: RecoveryClaimMode, restored: set[str]) -> None:
        self._tmp = tempfile.TemporaryDirectory()
        self.root = Path(self._tmp.name)
        self.registry = SharedStateRegistry()
        self.mode = mode
        self.held: dict[int, set[str]] = {0: {f"restored/{n}" for n in restored}}
        self.owned: set[str] = set(self.held[0]) if mode is RecoveryClaimMode.CLAIM else set()
        self.restored = set(self.held[0])
        self.created: set[str] = set()
        for path in self.held[0]:
            self._write(path)
        self.restored_bytes = self._digests(self.restored)
        self.registry.register_restored(0, self.held[0], mode)
        self.next_id = 1
        self.deleted: list[str] = []

    def _write(self, path: str) -> None:
        target = self.root / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(hashlib.sha256(path.encode()).digest())
        self.created.add(path)

    def _digests(self, paths: set[str]) -> dict[str, str]:
        return {p: hashlib.sha256((self.root / p).read_bytes()).hexdigest() for p in paths}

    def _live(self) -> set[str]:
        return {p for p in self.created if (self.root / p).exists()}

    @rule(
        reuse=st.sets(st.integers(0, 40), max_size=4),
        new=st.sets(st.sampled_from(FILE_NAMES), max_size=3),
    )
    def checkpoint(self, reuse: set[int], new: set[str]) -> None:
        """A checkpoint re-uses files some held checkpoint holds, and uploads new ones."""
        known = sorted({p for files in self.held.values() for p in files})
        files = {known[i % len(known)] for i in reuse} if known else set()
        cid = self.next_id
        self.next_id += 1
        uploaded = {f"chk{cid}/{n}" for n in new}  # new files get fresh names
        for path in uploaded:
            self._write(path)
        self.owned |= uploaded
        files |= uploaded
        self.registry.register(cid, files)
        self.held[cid] = files

    @precondition(lambda self: bool(self.held))
    @rule(data=st.data())
    def release(self, data: Any) -> None:
        cid = data.draw(st.sampled_from(sorted(self.held)))
        del self.held[cid]
        decision = self.registry.release(cid)
        for path in decision.delete:
            assert (self.root / path).exists(), f"{path} deleted twice"
            (self.root / path).unlink()
            self.deleted.append(path)

    @invariant()
    def nothing_held_is_deleted(self) -> None:
        live = self._live()
        for files in self.held.values():
            assert files <= live

    @invariant()
    def every_unheld_owned_file_is_deleted(self) -> None:
        held = {p for files in self.held.values() for p in files}
        assert self._live() == held | (self.created - self.owned)

    @invariant()
    def no_claim_never_touches_restored_files(self) -> None:
        if self.mode is RecoveryClaimMode.NO_CLAIM:
            assert self.restored <= self._live()
            assert self._digests(self.restored) == self.restored_bytes
            assert not self.restored & set(self.deleted)

    def teardown(self) -> None:
        if hasattr(self, "_tmp"):
            self._tmp.cleanup()


RegistryMachine.TestCase.settings = settings(
    max_examples=200, stateful_step_count=30, deadline=None, derandomize=True
)
test_registry_against_model = RegistryMachine.TestCase
