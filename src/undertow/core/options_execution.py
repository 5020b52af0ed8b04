"""The options of a job's execution: where it runs (the local targets, Spark), its mode,
parallelism, chaining and buffer timeout, the pipeline's settings, the worker's interpreter
and mailbox, and the restart strategy; Flink's keys and defaults (its "Configuration" page).
Part of :class:`undertow.core.config.Options`.
"""

from __future__ import annotations

from undertow.core.config_option import (
    bool_option,
    choice,
    duration_option,
    float_option,
    int_option,
    map_option,
    memory_option,
    non_negative,
    positive,
    precise_duration_option,
    str_option,
)


class ExecutionOptions:
    """Execution, pipeline, worker, Spark deployment and restart options."""

    # execution ---------------------------------------------------------------------------
    TARGET = str_option(
        "execution.target",
        "spark",
        "where the job runs: spark (a barrier stage on local or remote Spark), local (worker "
        "processes, no Spark), local-threads (worker threads)",
        check=choice("local", "local-threads", "spark"),
    )
    LOCAL_FORK_SERVER = bool_option(
        "execution.local.fork-server",
        True,
        "target local: fork worker processes from a server process that has undertow's worker "
        "modules imported (as Spark's Python daemon forks its workers), so a worker skips an "
        "interpreter's start and imports; false starts every worker as a fresh interpreter (as "
        "does a job that sets python.executable or python.requirements)",
    )
    RUNTIME_MODE = str_option(
        "execution.runtime-mode",
        "STREAMING",
        "STREAMING, BATCH or AUTOMATIC",
        check=choice("STREAMING", "BATCH", "AUTOMATIC"),
    )
    BUFFER_TIMEOUT = duration_option(
        "execution.buffer-timeout",
        100,
        "flush partially filled output buffers after this time",
        deprecated_keys=("execution.buffer-timeout.interval",),
    )
    FLUSH_WHEN_IDLE = bool_option(
        "undertow.network.flush-when-idle",
        True,
        "a task about to wait for input sends its partly filled output buffers at once, "
        "instead of after execution.buffer-timeout (only when that timeout is above 0: -1 "
        "keeps flushing full buffers only)",
    )
    PARALLELISM = int_option(
        "parallelism.default",
        1,
        "default parallelism of operators; unset, a job on one machine (targets local and "
        "local-threads, or a local Spark master) gets that machine's cores, as in Flink's "
        "MiniCluster (see default_parallelism)",
        check=positive,
    )
    MAX_PARALLELISM = int_option(
        "pipeline.max-parallelism", 128, "number of key groups", check=positive
    )
    OPERATOR_CHAINING = bool_option(
        "pipeline.operator-chaining.enabled", True, deprecated_keys=("pipeline.operator-chaining",)
    )
    WORKERS = int_option(
        "undertow.workers", 0, "number of workers; 0 = one per core (<= slots)", check=non_negative
    )
    AUTO_WATERMARK_INTERVAL = duration_option(
        "pipeline.auto-watermark-interval", 200, "periodic watermark interval; 0 disables"
    )
    GLOBAL_JOB_PARAMETERS = map_option(
        "pipeline.global-job-parameters", "read by functions with get_job_parameter"
    )
    WORKER_GC_THRESHOLD = int_option(
        "undertow.worker.gc-threshold", 20_000,
        "a worker raises its interpreter's young-generation collection threshold to this "
        "many net container allocations (Python's default: 700; never lowered; 0 leaves it)",
        check=non_negative,
    )  # fmt: skip
    MAILBOX_SLICE = precise_duration_option(
        "undertow.task.mailbox-slice",
        2,
        "longest stretch of record processing between mails",
        check=positive,
    )
    MAILBOX_SLICE_CHECKPOINT = precise_duration_option(
        "undertow.task.mailbox-slice-during-checkpoint",
        0.25,
        "the slice while a checkpoint passes through the worker (see runtime/task/pace.py)",
        check=positive,
    )
    COLLECT_BUFFER_SIZE = memory_option(
        "undertow.collect.buffer-size", 32 * 1024 * 1024,
        "execute_and_collect: most bytes of results the driver holds that the iterator has "
        "not yet returned (plus one batch); the collect sink waits for credit beyond it, "
        "backpressuring the job as a slow reader does (Flink's collect-sink.batch-size.max "
        "bounds the sink's buffer instead)",
        check=positive,
    )  # fmt: skip
    # deployment on Spark -----------------------------------------------------------------
    PIPELINE_NAME = str_option("pipeline.name", "", "the job's name (Spark application name)")
    SPARK_MASTER = str_option(
        "spark.master",
        "local[*]",
        "Spark master of the session undertow builds (ignored when a session is active)",
    )
    SPARK_LOG_LEVEL = str_option(
        "undertow.spark.log-level",
        "WARN",
        "log level of the Spark session undertow builds",
        check=choice("ALL", "DEBUG", "ERROR", "FATAL", "INFO", "OFF", "TRACE", "WARN"),
    )
    SPARK_SHIP_PACKAGE = str_option(
        "undertow.spark.ship-package",
        "auto",
        "ship undertow to the executors with the job: auto (unless the master is local), "
        "always, never",
        check=choice("auto", "always", "never"),
    )
    # restart -----------------------------------------------------------------------------
    #: Unset: exponential-delay with checkpointing, else none (``runtime.master.restart``).
    RESTART_STRATEGY = str_option(
        "restart-strategy.type", "none",
        "none, fixed-delay, failure-rate or exponential-delay (unset: exponential-delay with "
        "checkpointing, else none)",
    )  # fmt: skip
    RESTART_FIXED_ATTEMPTS = int_option(
        "restart-strategy.fixed-delay.attempts", 1, "fixed-delay: restarts before the job fails"
    )
    RESTART_FIXED_DELAY = duration_option(
        "restart-strategy.fixed-delay.delay", 1000, "fixed-delay: the wait before a restart"
    )
    RESTART_RATE_MAX_FAILURES = int_option(
        "restart-strategy.failure-rate.max-failures-per-interval", 1,
        "failure-rate: restarts allowed within any failure-rate-interval",
    )  # fmt: skip
    RESTART_RATE_INTERVAL = duration_option(
        "restart-strategy.failure-rate.failure-rate-interval", 60_000,
        "failure-rate: the interval max-failures-per-interval counts in",
    )  # fmt: skip
    RESTART_RATE_DELAY = duration_option(
        "restart-strategy.failure-rate.delay", 1000, "failure-rate: the wait before a restart"
    )
    RESTART_EXP_INITIAL = duration_option(
        "restart-strategy.exponential-delay.initial-backoff", 1000,
        "exponential-delay: the first restart's wait",
    )  # fmt: skip
    RESTART_EXP_MAX = duration_option(
        "restart-strategy.exponential-delay.max-backoff", 60_000,
        "exponential-delay: the longest wait",
    )  # fmt: skip
    RESTART_EXP_MULTIPLIER = float_option(
        "restart-strategy.exponential-delay.backoff-multiplier", 1.5,
        "exponential-delay: the factor from one wait to the next",
    )  # fmt: skip
    RESTART_EXP_RESET = duration_option(
        "restart-strategy.exponential-delay.reset-backoff-threshold", 3_600_000,
        "exponential-delay: healthy running after which the wait is the first again",
    )  # fmt: skip
    RESTART_EXP_JITTER = float_option(
        "restart-strategy.exponential-delay.jitter-factor", 0.1,
        "exponential-delay: the largest share a wait moves by, either way",
    )  # fmt: skip
    RESTART_EXP_ATTEMPTS = int_option(
        "restart-strategy.exponential-delay.attempts-before-reset-backoff", 2**31 - 1,
        "exponential-delay: restarts in a row (no reset between) before the job fails",
    )  # fmt: skip
