"""Async model inference: call a (simulated) remote model once per record with async I/O.

Each review goes to a "sentiment model" behind a network call (``asyncio.sleep`` stands in for
the round trip and sometimes times out); ``AsyncDataStream.unordered_wait_with_retry`` keeps up
to 20 requests in flight per subtask, retries timed-out calls with a fixed delay and answers
``None`` for a review whose calls all failed within the time limit. Checkpoints every second
hold the requests in flight, so a restart re-issues them: each review is scored exactly once.

Run it with ``python examples/async_model_inference.py`` (or ``undertow run ...``).
"""

from __future__ import annotations

import asyncio
import functools
import json
import random

from undertow.common import Time, Types
from undertow.datastream import (
    AsyncDataStream,
    AsyncFunction,
    AsyncRetryStrategy,
    CheckpointingMode,
    RuntimeContext,
    StreamExecutionEnvironment,
    async_retry_predicates,
)

REVIEWS = [
    (user, text)
    for user in range(1, 9)
    for text in ("great product", "did not work", "fine, I guess", "love it", "broke at once")
]


class SentimentModel(AsyncFunction[tuple[int, str], str]):
    """Scores one review per call; a call takes 10-50 ms and one in five times out."""

    def open(self, runtime_context: RuntimeContext) -> None:
        self.random = random.Random(runtime_context.get_index_of_this_subtask())

    async def async_invoke(self, value: tuple[int, str]) -> list[str]:
        await asyncio.sleep(self.random.uniform(0.01, 0.05))  # the network round trip
        if self.random.random() < 0.2:
            raise TimeoutError("model endpoint did not answer")
        user, text = value
        score = "negative" if ("not" in text or "broke" in text) else "positive"
        return [json.dumps({"user_id": user, "comments": text, "analysis_result": score})]

    def timeout(self, value: tuple[int, str]) -> list[str]:
        user, text = value  # no answer in time: a default result instead of a failed job
        return [json.dumps({"user_id": user, "comments": text, "analysis_result": None})]


def main() -> None:
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(2)
    env.enable_checkpointing(1000, CheckpointingMode.EXACTLY_ONCE)
    reviews = env.from_collection(REVIEWS, type_info=Types.TUPLE([Types.INT(), Types.STRING()]))
    retry = AsyncRetryStrategy.fixed_delay(
        max_attempts=5,
        backoff_time_millis=20,
        result_predicate=None,
        exception_predicate=functools.partial(
            async_retry_predicates.exception_type_predicate, expected_error_type=TimeoutError
        ),
    )
    scored = AsyncDataStream.unordered_wait_with_retry(
        reviews, SentimentModel(), Time.seconds(5), retry, capacity=20,
        output_type=Types.STRING(),
    )  # fmt: skip
    scored.print()
    env.execute("async model inference")


if __name__ == "__main__":
    main()
