"""The settings of a worker's network stack, read once from the job's configuration.

Partitions, gates, record writers and the network environment take a
:class:`NetworkSettings` instead of reading options where they are built; :meth:`of` is the
one place that reads them, and a bad value fails there with a ``ConfigurationError`` naming
the option and the value. Buffer debloating has its own
(:class:`~undertow.runtime.network.buffer_debloater.DebloatSettings`), the per-gate overdraft
is a task's (:class:`~undertow.runtime.task.settings.TaskSettings`).

An immutable value: any thread.
"""

from __future__ import annotations

from dataclasses import dataclass

from undertow.core.config import Configuration, Options


@dataclass(frozen=True, slots=True)
class NetworkSettings:
    """What the network stack reads of the configuration (the keys in the field comments)."""

    #: ``taskmanager.memory.segment-size`` (bytes): a record writer's buffer size.
    segment_size: int = 32 * 1024
    #: ``taskmanager.network.memory.buffers-per-channel``: exclusive credits of a channel.
    buffers_per_channel: int = 2
    #: ``taskmanager.network.memory.floating-buffers-per-gate``.
    floating_buffers_per_gate: int = 8
    #: ``taskmanager.network.memory.max-buffers-per-channel``: a subpartition's backlog cap.
    max_buffers_per_channel: int = 10
    #: ``undertow.network.max-frame-size`` (bytes): the largest frame accepted from a peer.
    max_frame_size: int = 64 * 1024 * 1024
    #: ``undertow.network.bind-host``: the address a worker's data server binds and advertises.
    bind_host: str = "127.0.0.1"

    @classmethod
    def of(cls, config: Configuration) -> NetworkSettings:
        """Read and validate every network option of ``config`` once."""
        return cls(
            segment_size=config.get(Options.SEGMENT_SIZE),
            buffers_per_channel=config.get(Options.BUFFERS_PER_CHANNEL),
            floating_buffers_per_gate=config.get(Options.FLOATING_BUFFERS_PER_GATE),
            max_buffers_per_channel=config.get(Options.MAX_BUFFERS_PER_CHANNEL),
            max_frame_size=config.get(Options.MAX_FRAME_SIZE),
            bind_host=config.get(Options.BIND_HOST),
        )
