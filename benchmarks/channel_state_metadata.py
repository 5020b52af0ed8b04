"""Channel-state metadata at FLINK-33734's shape: written, read back and restored.

Shape: one all-to-all vertex at parallelism P, unaligned checkpoint; every subtask has P input
channels (gate 0), each with one in-flight buffer of 1 B..32 KiB, and its own state file;
subtasks share channel-state files 5 per file (as :class:`ChannelStateFileWriter` groups
them). The whole :class:`CheckpointMetadata` (every subtask, nothing sampled) is encoded with
the real codec, committed as ``_metadata`` through :class:`CheckpointStorage` into a temporary
directory, then restored: read back under the size limit, authenticated, decoded, and every
channel-state handle resolved to its file region and chunk offsets (the chunks are counted
and must sum to the region). The state and channel-state files themselves are not written
(368 GB at P = 4800); only their handles are.

Compared with Flink's published facts (FLINK-33734): at P = 4800 its ``_metadata`` was 950 MB
before the fix, 68 % of it repeated file paths. Target: ours <= 0.35 x 950 MB at P = 4800, and
restorable (the restore above succeeds with the default size limit).

Usage: ``python benchmarks/channel_state_metadata.py [--parallelism P ...] [--seed N]``
"""

from __future__ import annotations

import argparse
import random
import tempfile
import time
import uuid
from collections.abc import Callable
from typing import Any

from undertow.core.config import Configuration, Options
from undertow.runtime.checkpoint.channel_state_files import FILE_HEADER
from undertow.runtime.checkpoint.channel_state_handles import (
    ChannelStateDirection,
    ChannelStateHandles,
    MergedChannelStateHandle,
    pack_channels,
)
from undertow.runtime.checkpoint.metadata import (
    CheckpointMetadata,
    VertexMetadata,
    decode_metadata,
    encode_metadata,
)
from undertow.storage import CheckpointStorage, FileHandle

CHECKPOINT = 123
PER_FILE = 5
FLINK_BYTES = 950 * 1000 * 1000  # FLINK-33734: "950MB"
FLINK_REPEATED_PATHS = 0.68
TARGET_RATIO = 0.35
KEY = bytes(range(32))


def build(parallelism: int, rng: random.Random) -> CheckpointMetadata:
    """The checkpoint's metadata at ``parallelism``: every subtask's state and channel state."""
    subtasks: dict[int, FileHandle] = {}
    channel_state: dict[int, ChannelStateHandles] = {}
    for first in range(0, parallelism, PER_FILE):
        members = range(first, min(first + PER_FILE, parallelism))
        lengths = {m: [rng.randint(1, 32 * 1024) for _ in range(parallelism)] for m in members}
        size = FILE_HEADER.size + sum(sum(ls) for ls in lengths.values())
        name = f"channel-state-{uuid.UUID(int=rng.getrandbits(128)).hex}"
        shared = FileHandle(f"chk-{CHECKPOINT}/{name}", size, f"{rng.getrandbits(256):064x}")
        position = FILE_HEADER.size
        for m in members:
            packed = pack_channels([((0, c), [length]) for c, length in enumerate(lengths[m])])
            handle = MergedChannelStateHandle(
                f"Keyed Aggregation ({m + 1}/{parallelism})", CHECKPOINT,
                ChannelStateDirection.INPUT, shared, None, position, sum(lengths[m]),
                f"{rng.getrandbits(256):064x}", packed,
            )  # fmt: skip
            channel_state[m] = ChannelStateHandles(handle, None)
            position += handle.range_length
            state = f"chk-{CHECKPOINT}/v1-{m}-{uuid.UUID(int=rng.getrandbits(128)).hex}.state"
            sha = f"{rng.getrandbits(256):064x}"
            subtasks[m] = FileHandle(state, rng.randint(100, 10_000), sha)
    vertex = VertexMetadata(
        1, "Keyed Aggregation", ("keyed-aggregation",), parallelism, max(128, parallelism),
        subtasks=subtasks, channel_state=channel_state,
    )  # fmt: skip
    return CheckpointMetadata(
        "5eed" * 8, CHECKPOINT, 1_700_000_000_000, 1_700_000_001_000, False, (vertex,),
        properties={"unaligned": "true"},
    )  # fmt: skip


def resolve(meta: CheckpointMetadata) -> int:
    """Resolve every channel-state handle to its file region and chunks; the chunk count."""
    chunks = 0
    for vertex in meta.vertices:
        for index, handles in vertex.channel_state.items():
            for handle in (handles.input, handles.output):
                if handle is None:
                    continue
                assert handle.file is not None and vertex.subtasks[index] is not None
                end = handle.range_start
                for entry in handle.entries():
                    assert entry.offset == end
                    end += entry.length
                    chunks += 1
                assert end == handle.range_start + handle.range_length <= handle.file.size
    return chunks


def timed(action: Callable[[], Any]) -> tuple[float, Any]:
    started = time.perf_counter()
    result = action()
    return time.perf_counter() - started, result


def run(parallelism: int, rng: random.Random) -> dict[str, Any]:
    limit = Configuration({}).get(Options.METADATA_MAX_SIZE)
    build_s, meta = timed(lambda: build(parallelism, rng))
    encode_s, payload = timed(lambda: encode_metadata(meta, KEY, limit))
    with tempfile.TemporaryDirectory(prefix="undertow-metadata-bench-") as root:
        storage = CheckpointStorage(root, "5eed" * 8)
        write_s, _ = timed(lambda: storage.commit_metadata(CHECKPOINT, payload))
        read_s, data = timed(lambda: storage.read_metadata(CHECKPOINT, limit))
        decode_s, restored = timed(
            lambda: decode_metadata(data, KEY, root, expected_checkpoint_id=CHECKPOINT)
        )
    resolve_s, chunks = timed(lambda: resolve(restored))
    assert chunks == parallelism * parallelism, (chunks, parallelism)
    return {
        "p": parallelism, "bytes": len(payload), "build": build_s, "encode": encode_s,
        "write": write_s, "read": read_s, "decode": decode_s, "resolve": resolve_s,
        "chunks": chunks, "limit": limit,
    }  # fmt: skip


def mb(n: float) -> str:
    return f"{n / 1e6:.1f} MB"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--parallelism", type=int, nargs="+", default=[100, 1000, 4800])
    parser.add_argument("--seed", type=int, default=33734)
    args = parser.parse_args()
    rng = random.Random(args.seed)
    print(
        f"all-to-all, unaligned, 1 buffer in flight per channel, {PER_FILE} subtasks per "
        f"channel-state file; full metadata written to disk and restored\n"
    )
    header = (
        f"{'P':>5} {'channels':>10} | {'_metadata':>10} {'B/chan':>6} | {'build':>6} {'encode':>6} "
        f"{'write':>6} {'read':>6} {'decode':>6} {'resolve':>7} s | restored"
    )
    print(header)
    print("-" * len(header))
    at_4800: dict[str, Any] | None = None
    for parallelism in args.parallelism:
        row = run(parallelism, rng)
        print(
            f"{parallelism:>5} {row['chunks']:>10} | {mb(row['bytes']):>10} "
            f"{row['bytes'] / row['chunks']:>6.2f} | {row['build']:>6.1f} {row['encode']:>6.1f} "
            f"{row['write']:>6.1f} "
            f"{row['read']:>6.1f} {row['decode']:>6.1f} {row['resolve']:>7.1f}   | "
            f"yes, {row['chunks']} chunks"
        )
        if parallelism == 4800:
            at_4800 = row
    if at_4800 is None:
        return
    ratio = at_4800["bytes"] / FLINK_BYTES
    print(
        f"\nFLINK-33734 (P = 4800): Flink's _metadata was {mb(FLINK_BYTES)} before the fix, "
        f"{FLINK_REPEATED_PATHS:.0%} of it repeated paths; without them "
        f"{mb(FLINK_BYTES * (1 - FLINK_REPEATED_PATHS))}."
    )
    ok = ratio <= TARGET_RATIO and at_4800["bytes"] <= at_4800["limit"]
    print(
        f"ours: {mb(at_4800['bytes'])} = {ratio:.3f} x 950 MB (target <= {TARGET_RATIO}), "
        f"under the default limit of {at_4800['limit'] / 2**20:.0f} MiB "
        f"(undertow.checkpointing.metadata.max-size) and restored: {'PASS' if ok else 'FAIL'}"
    )
    raise SystemExit(0 if ok else 1)


if __name__ == "__main__":
    main()
