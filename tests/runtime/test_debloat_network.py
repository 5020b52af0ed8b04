"""Buffer debloating through the network layer: NewBufferSize over LocalLink and TCP, the
record writer cutting at the announced limits, and a gate's debloater measuring a consumer."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from undertow.graph.partitioners import ForwardPartitioner
from undertow.runtime.network.buffer import Buffer
from undertow.runtime.network.buffer_debloater import DebloatSettings
from undertow.runtime.network.credit import ProtocolViolation, SenderChannel
from undertow.runtime.network.gate_debloater import TaskDebloater
from undertow.runtime.network.input_gate import InputGate
from undertow.runtime.network.partition import ResultPartition
from undertow.runtime.network.record_writer import RecordWriter
from undertow.runtime.network.transport import LocalLink, NetworkEnvironment

SEGMENT = 32 * 1024


def _local(
    *, floating: int = 8, credit: int = 2, sender_floating: int = 8
) -> tuple[ResultPartition, InputGate, RecordWriter]:
    partition = ResultPartition(
        "P", [0], buffers_per_channel=credit, floating_buffers=sender_floating,
        max_buffers_per_channel=10,
    )  # fmt: skip
    gate = InputGate("G", 1, floating)
    channel = gate.add_channel(0, "G/0", credit)
    link = LocalLink(partition.subpartitions[0], channel)
    partition.subpartitions[0].link = link
    channel.connect(link)
    return partition, gate, RecordWriter(partition, ForwardPartitioner(), SEGMENT)


def test_new_buffer_size_must_be_positive() -> None:
    sender = SenderChannel(2, name="sp0")
    with pytest.raises(ProtocolViolation, match="sp0: NewBufferSize must be positive, got 0"):
        sender.new_buffer_size(0, 5)
    assert sender.buffer_size is None
    sender.new_buffer_size(512, 7)
    assert (sender.buffer_size, sender.max_records, sender.credit) == (512, 7, 2)


def test_writer_cuts_buffers_at_the_announced_record_limit() -> None:
    partition, gate, writer = _local()
    writer.emit(list(range(100)), None)
    assert writer.has_pending  # 100 small ints do not fill 90 % of 32 KiB
    writer.flush_all()
    gate.announce_buffer_size(SEGMENT, 7)  # what a gate's debloater sends
    assert partition.subpartitions[0].sender.max_records == 7
    for i in range(70):
        writer.emit([i], None)
    assert not writer.has_pending  # cut at 7 records, no flush needed
    batches: list[list[int]] = []
    while (item := gate.poll()) is not None:
        batches.append(item[1][0])
        gate.release(item[0])
    assert batches == [list(range(100))] + [list(range(i, i + 7)) for i in range(0, 70, 7)]


def test_writer_cuts_buffers_at_the_announced_byte_size_and_big_records_go_whole() -> None:
    _, gate, writer = _local(floating=100, sender_floating=100)
    arrived: list[Buffer] = []
    gate.channels[0].subscribe_arrivals(arrived.append)
    gate.announce_buffer_size(1024, SEGMENT)
    records = [f"r{i:06}" for i in range(2000)]  # ~10 bytes pickled each
    for start in range(0, 2000, 50):
        writer.emit(records[start : start + 50], None)
    big = "x" * 5000  # larger than the announced size: one buffer, not cut at 1 KiB
    writer.emit([big], None)
    writer.flush_all()
    sizes = [len(b) for b in arrived]
    assert len(sizes) > 15
    assert max(sizes[:-1]) <= 1024
    assert sizes[-1] > 5000 and not arrived[-1].partial
    values: list[Any] = []
    while (item := gate.poll()) is not None:
        values.extend(item[1][0])
        gate.release(item[0])
    assert values == [*records, big]


def test_finished_channels_get_no_announcement() -> None:
    partition, gate, _ = _local()
    gate.mark_finished(gate.channels[0])
    gate.announce_buffer_size(512, 3)
    assert partition.subpartitions[0].sender.buffer_size is None


def test_gate_debloater_measures_a_slow_consumer_and_shrinks_the_producers_buffers() -> None:
    partition, gate, writer = _local()
    # the aim held at the target (as Flink aims), so the limits are the target's
    settings = DebloatSettings(target_ms=1000.0, period_ms=200.0, samples=20, min_target_ms=1000)
    debloater = TaskDebloater([gate], settings, now_ms=0.0, idle_ms=0.0)
    # backpressure: the producer filled every credit and queued more
    for i in range(12):
        writer.emit(list(range(i * 1000, i * 1000 + 1000)), None)
        writer.flush_all()
    # 10 queued at the channel (all its buffers), +1 the buffer the sender is filling (the
    # whole edge); the 2 queued at the sender since are not known yet: backlog travels with
    # the next buffer (there is no BacklogAnnouncement)
    assert gate.buffers_in_use() == 11
    # the consumer takes one batch of 1000 records per period: 5000 records/s
    item = gate.poll()
    assert item is not None
    gate.note_processed(len(item[1][0]))  # what the task does per chunk
    gate.release(item[0])
    decisions = debloater.tick(now_ms=200.0, idle_ms=0.0)
    decision = decisions[0]
    assert decision is not None and decision.announce
    assert decision.records_per_second == pytest.approx(5000.0)
    in_use = decision.buffers_in_use
    assert decision.max_records == round(5000 / in_use)  # 1 s of records over the buffers
    sender = partition.subpartitions[0].sender
    assert (sender.buffer_size, sender.max_records) == (decision.buffer_size, decision.max_records)
    assert debloater.statistics().debloated_max_records == decision.max_records
    assert debloater.statistics().estimated_time_to_consume_buffers_ms == pytest.approx(
        1000.0, rel=0.05
    )
    # idle time is not measured: a period spent waiting for input changes nothing
    assert debloater.tick(now_ms=400.0, idle_ms=200.0) == [None]
    assert debloater.announcements == 1
    assert debloater.statistics().announcements == 1  # what the worker reports at the end


def test_new_buffer_size_crosses_a_tcp_connection() -> None:
    async def main() -> None:
        failures: list[BaseException] = []
        envs = [
            NetworkEnvironment(i, b"k", bind_host="127.0.0.1", max_frame_size=1 << 20,
                               on_failure=failures.append)
            for i in range(2)
        ]  # fmt: skip
        partition = ResultPartition(
            "P", [3], buffers_per_channel=2, floating_buffers=8, max_buffers_per_channel=10
        )
        envs[0].subpartitions[3] = partition.subpartitions[0]
        gate = InputGate("G", 1, 8)
        envs[1].input_channels[3] = gate.add_channel(3, "G/3", 2)
        ports = {i: await env.start_server() for i, env in enumerate(envs)}
        peers = {i: ("127.0.0.1", p) for i, p in ports.items()}
        await asyncio.gather(envs[0].connect_peers(peers, {1}), envs[1].connect_peers(peers, {0}))
        for env in envs:
            env.wire(3, 0, 1)
        writer = RecordWriter(partition, ForwardPartitioner(), SEGMENT)
        gate.announce_buffer_size(300, 4)
        sender = partition.subpartitions[0].sender
        for _ in range(200):
            if sender.max_records == 4:
                break
            await asyncio.sleep(0.005)
        assert (sender.buffer_size, sender.max_records) == (300, 4)
        for i in range(10):
            writer.emit([i], None)
        writer.flush_all()
        got: list[list[int]] = []
        for _ in range(400):
            item = gate.poll()
            if item is None:
                await asyncio.sleep(0.005)
                continue
            got.append(item[1][0])
            gate.release(item[0])
            if sum(map(len, got)) == 10:
                break
        assert got == [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9]]
        # what the producer applied and the consumer received, as the task metrics count it
        assert (writer.buffer_sizes_received, writer.records_out, writer.buffers_out) == (1, 10, 3)
        assert gate.buffers_consumed == 3
        assert failures == []
        for env in envs:
            env.close()
        await asyncio.sleep(0.01)

    asyncio.run(asyncio.wait_for(main(), 10))


def test_first_measurement_comes_early() -> None:
    _, gate, _ = _local()
    debloater = TaskDebloater([gate], DebloatSettings(period_ms=200.0), now_ms=0.0, idle_ms=0.0)
    assert debloater.next_tick_ms() == 25.0  # producers start at a few records per buffer
    debloater.tick(now_ms=25.0, idle_ms=0.0)  # active, nothing consumed: to the minimum
    assert debloater.announcements == 1
    assert debloater.next_tick_ms() == 200.0


def test_the_tasks_starved_time_in_a_period_moves_the_aim() -> None:
    _, gate, writer = _local()
    settings = DebloatSettings(min_target_ms=100.0)  # the aim, down to 100 ms
    debloater = TaskDebloater([gate], settings, now_ms=0.0, idle_ms=0.0, starved_ms=0.0)
    now, idle, starved = 0.0, 0.0, 0.0
    aims = []
    for starved_in_period in (0.0, 0.0, 20.0, 0.0):
        writer.emit(list(range(100)), None)
        writer.flush_all()
        item = gate.poll()
        assert item is not None
        gate.note_processed(len(item[1][0]))
        gate.release(item[0])
        now, idle, starved = now + 200.0, idle + starved_in_period, starved + starved_in_period
        [decision] = debloater.tick(now_ms=now, idle_ms=idle, starved_ms=starved)
        assert decision is not None
        aims.append(decision.aim_ms)
    shrink = 19 / 21  # the EMA's alpha per period without starvation
    # doubled after the starved period, but never above the target
    assert aims == pytest.approx([1000 * shrink, 1000 * shrink**2, 1000, 1000 * shrink])
