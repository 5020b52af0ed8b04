"""The watermark valve: combines per-channel watermarks and idleness into one output watermark.

Invariants after every call: every aligned channel's watermark is >= the last output
watermark, and if any channel is aligned, the minimum over aligned channels equals it. A
channel is aligned exactly when it is active and its watermark is >= the last output watermark.

Emitting: the output emits watermarks only while it is active. So when a call returns both a
watermark and a status change, emit the watermark first if the status became idle (``True``),
and the status first if it became active (``False``).

Threading and cost: pure code, no I/O, not thread-safe; owned by one task and called from its
task thread. A watermark that may move the minimum, and every status change, costs one scan of
the channels (O(channels)); any other call is O(1).

The longer story: docs/design.md, "Module notes", under this module's name.
"""

from __future__ import annotations

from undertow.core.types import MAX_WATERMARK, MIN_TIMESTAMP

__all__ = ["StatusWatermarkValve"]


class StatusWatermarkValve:
    """Per-channel watermarks and idleness of one input, and the combined output."""

    def __init__(self, num_channels: int) -> None:
        if num_channels < 1:
            raise ValueError(f"a watermark valve needs at least one channel, got {num_channels}")
        self._num_channels = num_channels
        self._watermarks = [MIN_TIMESTAMP] * num_channels
        self._idle = [False] * num_channels
        self._aligned = [True] * num_channels
        self._finished = [False] * num_channels
        self._active_channels = num_channels
        self._last_output = MIN_TIMESTAMP
        self._output_idle = False

    # inputs ----------------------------------------------------------------------------------
    def input_watermark(self, watermark: int, channel: int) -> int | None:
        """A watermark arrived on ``channel``; returns the new output watermark to emit, if any."""
        self._check_channel(channel)
        previous = self._watermarks[channel]
        if self._idle[channel] or watermark <= previous:
            return None
        self._watermarks[channel] = watermark
        if not self._aligned[channel]:
            if watermark < self._last_output:
                return None
            self._aligned[channel] = True  # caught up
        elif previous > self._last_output:
            return None  # it was not holding the minimum back
        return self._emit_min_of_aligned()

    def input_idle(self, channel: int, idle: bool) -> tuple[int | None, bool | None]:
        """``channel`` became idle (``True``) or active (``False``).

        Returns ``(watermark to emit or None, new output idleness or None if unchanged)``; see
        the module docstring for the order in which to emit both.
        """
        self._check_channel(channel)
        if self._finished[channel] or idle == self._idle[channel]:
            return None, None
        if idle:
            return self._mark_idle(channel)
        return self._mark_active(channel)

    def end_of_input(self, channel: int) -> tuple[int | None, bool | None]:
        """``channel`` ended: it counts as active with watermark ``MAX_WATERMARK`` from now on.

        Returns what :meth:`input_idle` returns. Later inputs on the channel are ignored.
        """
        self._check_channel(channel)
        if self._finished[channel]:
            return None, None
        status = self._activate(channel) if self._idle[channel] else None
        self._finished[channel] = True
        self._watermarks[channel] = MAX_WATERMARK
        self._aligned[channel] = True
        return self._emit_min_of_aligned(), status

    # state ------------------------------------------------------------------------------------
    @property
    def num_channels(self) -> int:
        return self._num_channels

    @property
    def last_output_watermark(self) -> int:
        """The last watermark returned for emission (``MIN_TIMESTAMP`` before the first)."""
        return self._last_output

    @property
    def is_idle(self) -> bool:
        """Whether the output is idle (all channels are idle)."""
        return self._output_idle

    def channel_watermark(self, channel: int) -> int:
        self._check_channel(channel)
        return self._watermarks[channel]

    def is_channel_idle(self, channel: int) -> bool:
        self._check_channel(channel)
        return self._idle[channel]

    def __repr__(self) -> str:
        return (
            f"StatusWatermarkValve(channels={self._num_channels}, "
            f"last_output={self._last_output}, idle={self._output_idle}, "
            f"active_channels={self._active_channels})"
        )

    # internals --------------------------------------------------------------------------------
    def _check_channel(self, channel: int) -> None:
        if not 0 <= channel < self._num_channels:
            raise IndexError(
                f"channel {channel} out of range for a valve of {self._num_channels} channels"
            )

    def _mark_idle(self, channel: int) -> tuple[int | None, bool | None]:
        self._idle[channel] = True
        self._aligned[channel] = False
        self._active_channels -= 1
        if self._active_channels == 0:
            # Nothing can hold the watermark back any more: flush the highest one.
            self._output_idle = True
            return self._emit_if_advanced(max(self._watermarks)), True
        if self._watermarks[channel] == self._last_output:
            # It may have been holding the minimum back.
            return self._emit_min_of_aligned(), None
        return None, None

    def _activate(self, channel: int) -> bool | None:
        """Mark ``channel`` active (not yet aligned); returns the output status change."""
        self._idle[channel] = False
        self._active_channels += 1
        if self._output_idle:
            self._output_idle = False
            return False
        return None

    def _mark_active(self, channel: int) -> tuple[int | None, bool | None]:
        status = self._activate(channel)
        if self._watermarks[channel] < self._last_output:
            return None, status  # not aligned until it catches up
        self._aligned[channel] = True
        return self._emit_min_of_aligned(), status

    def _emit_min_of_aligned(self) -> int | None:
        lowest = min(
            (wm for wm, aligned in zip(self._watermarks, self._aligned) if aligned),
            default=None,
        )
        return None if lowest is None else self._emit_if_advanced(lowest)

    def _emit_if_advanced(self, watermark: int) -> int | None:
        if watermark <= self._last_output:
            return None
        self._last_output = watermark
        return watermark
