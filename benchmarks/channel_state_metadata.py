"""Channel-state metadata: merged handles vs one handle per channel (FLINK-33734).

Shape: one all-to-all vertex at parallelism P; every subtask has P input channels (gate 0),
each with one in-flight buffer of 1 B..32 KiB; subtasks share channel-state files 5 per file.

* *merged*: undertow's format, one :class:`MergedChannelStateHandle` per subtask and file,
  encoded with ``handles_to_json`` as it goes into ``_metadata`` (file path relative to the job
  directory, file sha256, range sha256, packed channel array in base64).
* *per-channel*: the baseline written here, Flink's format before FLINK-33734 in JSON: one
  handle per channel carrying subtask index, channel, offsets, size and the shared file's full
  path and size (``s3://bucket/checkpoints/<job id>/chk-123/<uuid>``). A second baseline uses
  the relative path, to show what merging gains without the shorter path.

Bytes and times are measured on a sample of S subtasks (all of them when P <= S) and scaled by
P / S: every subtask contributes the same kind of entry, so the totals are linear in the
number of subtasks. The number of files is counted by running the real
:class:`ChannelStateFileWriter` with P subtasks (one small buffer each, nothing inlined).

Targets: merged <= 35 % of per-channel (full paths), files <= subtasks / 5.

Usage: ``python benchmarks/channel_state_metadata.py [--quick] [--sample S] [--seed N]``
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from undertow.runtime.checkpoint.channel_state_files import FILE_HEADER, ChannelStateFileWriter
from undertow.runtime.checkpoint.channel_state_handles import (
    ChannelStateDirection,
    ChannelStateHandles,
    MergedChannelStateHandle,
    handles_from_json,
    handles_to_json,
    pack_channels,
)
from undertow.storage import FileHandle

JOB_ID = uuid.UUID(int=0x5EED).hex  # 32 hex digits
CHECKPOINT = 123
PER_FILE = 5
TARGET_RATIO = 0.35


def dumps(document: Any) -> bytes:
    """As the metadata codec encodes its body."""
    return json.dumps(document, sort_keys=True, separators=(",", ":"), ensure_ascii=True).encode()


@dataclass(frozen=True, slots=True)
class PerChannelHandle:
    """The baseline: Flink's ``InputChannelStateHandle`` before FLINK-33734."""

    subtask_index: int
    gate: int
    channel: int
    offsets: tuple[int, ...]
    size: int
    file_path: str
    file_size: int


def per_channel_to_json(h: PerChannelHandle) -> dict[str, Any]:
    return {
        "subtask": h.subtask_index,
        "info": [h.gate, h.channel],
        "offsets": list(h.offsets),
        "size": h.size,
        "delegate": {"path": h.file_path, "size": h.file_size},
    }


def per_channel_from_json(d: dict[str, Any]) -> PerChannelHandle:
    gate, channel = d["info"]
    delegate = d["delegate"]
    return PerChannelHandle(
        d["subtask"], gate, channel, tuple(d["offsets"]), d["size"], delegate["path"],
        delegate["size"],
    )  # fmt: skip


def build_sample(parallelism: int, sample: int, rng: random.Random) -> tuple[
    dict[str, Any], list[PerChannelHandle], list[PerChannelHandle]
]:  # fmt: skip
    """Merged handles (as the metadata's per-subtask JSON map) and both baselines."""
    merged: dict[int, ChannelStateHandles] = {}
    full: list[PerChannelHandle] = []
    relative: list[PerChannelHandle] = []
    for first in range(0, sample, PER_FILE):
        members = range(first, min(first + PER_FILE, sample))
        lengths = {m: [rng.randint(1, 32 * 1024) for _ in range(parallelism)] for m in members}
        file_size = FILE_HEADER.size + sum(sum(ls) for ls in lengths.values())
        name = uuid.UUID(int=rng.getrandbits(128)).hex
        file = FileHandle(f"chk-{CHECKPOINT}/{name}", file_size, f"{rng.getrandbits(256):064x}")
        full_path = f"s3://bucket/checkpoints/{JOB_ID}/chk-{CHECKPOINT}/{name}"
        position = FILE_HEADER.size
        for m in members:
            handle = merged_handle(m, parallelism, lengths[m], position, file, rng)
            merged[m] = ChannelStateHandles(handle, None)
            for c, length in enumerate(lengths[m]):
                for target, path in ((full, full_path), (relative, file.path)):
                    target.append(PerChannelHandle(m, 0, c, (position,), length, path, file_size))
                position += length
    document = {str(m): handles_to_json(h) for m, h in merged.items()}
    return document, full, relative


def merged_handle(
    m: int, parallelism: int, lengths: list[int], start: int, file: FileHandle, rng: random.Random
) -> MergedChannelStateHandle:
    """What the writer reports for subtask ``m``: one chunk per channel, in channel order."""
    packed = pack_channels([((0, c), [length]) for c, length in enumerate(lengths)])
    return MergedChannelStateHandle(
        f"Keyed Aggregation ({m + 1}/{parallelism})", CHECKPOINT, ChannelStateDirection.INPUT,
        file, None, start, sum(lengths), f"{rng.getrandbits(256):064x}", packed,
    )  # fmt: skip


def timed(action: Callable[[], Any]) -> tuple[float, Any]:
    started = time.perf_counter()
    result = action()
    return time.perf_counter() - started, result


def count_files(parallelism: int) -> int:
    """Files the real writer produces for ``parallelism`` subtasks, one buffer each."""
    written: list[str] = []

    def write(checkpoint_id: int, name: str, data: bytes) -> FileHandle:
        written.append(name)
        return FileHandle.of(f"chk-{checkpoint_id}/{name}", data)

    async def run() -> None:
        writer = ChannelStateFileWriter(write, PER_FILE, inline_threshold=0)
        subtasks = [writer.register(f"s{i}") for i in range(parallelism)]
        for sub in subtasks:
            sub.start(CHECKPOINT)
            sub.add_input(CHECKPOINT, (0, 0), b"x" * 64)
            sub.finish_input(CHECKPOINT)
            sub.finish_output(CHECKPOINT)
        await asyncio.gather(*(sub.result(CHECKPOINT) for sub in subtasks))

    asyncio.run(run())
    return len(written)


def measure(parallelism: int, sample: int, rng: random.Random) -> dict[str, Any]:
    sample = min(sample, parallelism)
    scale = parallelism / sample
    merged_doc, full, relative = build_sample(parallelism, sample, rng)
    row: dict[str, Any] = {"p": parallelism, "sample": sample, "channels": parallelism**2}
    enc, merged_bytes = timed(lambda: dumps(merged_doc))
    dec, _ = timed(lambda: [handles_from_json(v) for v in json.loads(merged_bytes).values()])
    row["merged"] = (len(merged_bytes) * scale, enc * scale, dec * scale)
    for key, handles in (("full", full), ("relative", relative)):
        enc, data = timed(lambda handles=handles: dumps([per_channel_to_json(h) for h in handles]))
        dec, _ = timed(lambda data=data: [per_channel_from_json(d) for d in json.loads(data)])
        row[key] = (len(data) * scale, enc * scale, dec * scale)
    row["files"] = count_files(parallelism)
    return row


def human(n: float) -> str:
    for unit in ("B", "KB", "MB", "GB"):
        if n < 1024 or unit == "GB":
            return f"{n:.1f} {unit}" if unit != "B" else f"{n:.0f} B"
        n /= 1024
    return f"{n:.1f} GB"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="sample 10 subtasks per shape")
    parser.add_argument("--sample", type=int, default=None, help="subtasks measured (def. 100)")
    parser.add_argument("--seed", type=int, default=33734)
    args = parser.parse_args()
    sample = args.sample or (10 if args.quick else 100)
    sample = max(PER_FILE, sample - sample % PER_FILE)
    rng = random.Random(args.seed)
    print(f"all-to-all, every channel 1 buffer in flight, {PER_FILE} subtasks per file; "
          f"measured on {sample} subtasks per shape, scaled to P\n")  # fmt: skip
    header = (f"{'P':>5} {'channels':>10} | {'merged':>10} {'enc s':>6} {'dec s':>6} | "
              f"{'per-channel':>11} {'enc s':>6} {'dec s':>6} | {'ratio':>6} "
              f"{'rel-path':>10} {'ratio':>6} | {'files':>5} {'subtasks':>8} | target")  # fmt: skip
    print(header)
    print("-" * len(header))
    failed = False
    for parallelism in (100, 1000, 4800):
        row = measure(parallelism, sample, rng)
        merged, full, relative = row["merged"], row["full"], row["relative"]
        ratio, ratio_rel = merged[0] / full[0], merged[0] / relative[0]
        ok = ratio <= TARGET_RATIO and row["files"] <= parallelism / PER_FILE
        failed |= not ok
        print(f"{parallelism:>5} {row['channels']:>10} | {human(merged[0]):>10} {merged[1]:>6.2f} "
              f"{merged[2]:>6.2f} | {human(full[0]):>11} {full[1]:>6.2f} {full[2]:>6.2f} | "
              f"{ratio:>6.1%} {human(relative[0]):>10} {ratio_rel:>6.1%} | {row['files']:>5} "
              f"{parallelism:>8} | {'PASS' if ok else 'FAIL'}")  # fmt: skip
    print(f"\ntargets: merged <= {TARGET_RATIO:.0%} of per-channel (full paths); "
          f"files <= subtasks / {PER_FILE}: {'PASS' if not failed else 'FAIL'}")  # fmt: skip
    raise SystemExit(1 if failed else 0)


if __name__ == "__main__":
    main()
