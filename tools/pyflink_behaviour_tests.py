"""Which test proves the behaviour of each PyFlink 2.3 name that undertow supports.

``tools/pyflink_names.py`` marks a name *supported* only when it is listed here, with the pytest
node id of a test that runs the name and checks its result (PyFlink's expected values where the
test mirrors one of PyFlink's own, in ``tests/conformance``). A name undertow has but that is
not listed is *untested*. Found by reading tests/ (an AST search for tests that use the name,
or the method that returns it, then checked by hand); ``tests/test_pyflink_compatibility_doc.py``
checks that every node id names a test function that exists and is not skipped.
"""

from __future__ import annotations

#: PyFlink name -> pytest node id (``path::function`` or ``path::Class::function``).
BEHAVIOUR_TESTS: dict[str, str] = {
    "AggregateFunction": (
        "tests/runtime/test_window_operator.py::test_aggregate_with_window_function"
    ),
    "AggregatingState": "tests/conformance/test_data_stream.py::test_aggregating_state",
    "AggregatingStateDescriptor": "tests/conformance/test_data_stream.py::test_aggregating_state",
    "AllWindowFunction": (
        "tests/runtime/test_window_operator.py::test_all_window_functions_with_a_constant_key"
    ),
    "AsyncDataStream": (
        "tests/datastream/test_async_io.py::test_a_result_that_is_not_a_list_fails_the_job"
    ),
    "AsyncFunction": (
        "tests/datastream/test_async_io.py::test_a_result_that_is_not_a_list_fails_the_job"
    ),
    "AsyncRetryPredicate": (
        "tests/datastream/test_async_io.py::"
        "test_retry_decision_follows_predicates_and_attempt_limit"
    ),
    "AsyncRetryStrategy": (
        "tests/datastream/test_async_io.py::"
        "test_retry_decision_follows_predicates_and_attempt_limit"
    ),
    "AvroRowDeserializationSchema": (
        "tests/datastream/test_avro_row_schemas.py::"
        "test_writes_the_bytes_flinks_serializer_writes_and_reads_them_back"
    ),
    "AvroRowSerializationSchema": (
        "tests/datastream/test_avro_row_schemas.py::"
        "test_writes_the_bytes_flinks_serializer_writes_and_reads_them_back"
    ),
    "BaseBroadcastProcessFunction": (
        "tests/e2e/test_connect.py::test_broadcast_process_function_shares_rules_with_every_subtask"
    ),
    "BroadcastConnectedStream": (
        "tests/conformance/test_data_stream.py::test_keyed_co_broadcast_process"
    ),
    "BroadcastProcessFunction": (
        "tests/e2e/test_connect.py::test_broadcast_process_function_shares_rules_with_every_subtask"
    ),
    "BroadcastState": (
        "tests/e2e/test_connect.py::"
        "test_keyed_broadcast_process_function_combines_keyed_and_broadcast_state"
    ),
    "BroadcastStream": "tests/conformance/test_data_stream.py::test_broadcast",
    "BucketAssigner": "tests/connectors/file/test_sink_parts.py::test_bucket_assigners",
    "BulkFormat": (
        "tests/e2e/test_file_connectors.py::"
        "test_parquet_files_to_parquet_sink_exactly_once_with_a_failure"
    ),
    "ByteArraySchema": (
        "tests/datastream/test_row_schemas.py::test_byte_array_schema_passes_bytes_through"
    ),
    "CheckpointConfig": (
        "tests/conformance/test_stream_execution_environment.py::test_get_checkpoint_config"
    ),
    "CheckpointingMode": (
        "tests/conformance/test_check_point_config.py::test_get_set_checkpointing_mode"
    ),
    "CloseableIterator": "tests/conformance/test_data_stream.py::test_execute_and_collect",
    "CoFlatMapFunction": "tests/conformance/test_data_stream.py::test_keyed_co_flat_map",
    "CoMapFunction": (
        "tests/datastream/test_key_context.py::test_keyed_map_function_sees_each_records_key"
    ),
    "CompletableFuture": (
        "tests/datastream/test_job_client.py::test_get_job_status_is_a_done_future_of_the_status_now"
    ),
    "ContinuousProcessingTimeTrigger": (
        "tests/runtime/test_window_operator.py::"
        "test_continuous_processing_time_trigger_fires_every_interval_until_the_window_ends"
    ),
    "CoProcessFunction": (
        "tests/datastream/test_side_outputs_yield.py::"
        "test_co_process_function_yields_to_a_side_output"
    ),
    "Configuration": "tests/conformance/test_stream_execution_environment.py::test_configure",
    "ConnectedStreams": (
        "tests/datastream/test_key_context.py::test_keyed_co_map_with_connected_streams_key_by"
    ),
    "ContinuousEventTimeTrigger": (
        "tests/runtime/test_window_operator.py::test_continuous_event_time_trigger_fires_early"
    ),
    "CountSlidingWindowAssigner": "tests/conformance/test_window.py::test_count_sliding_window",
    "CountTrigger": (
        "tests/runtime/test_window_operator.py::test_global_window_count_trigger_fire_vs_purge"
    ),
    "CountTumblingWindowAssigner": (
        "tests/runtime/test_window_operator.py::test_count_tumbling_windows"
    ),
    "CountWindow": "tests/conformance/test_window.py::test_count_sliding_window",
    "CsvReaderFormat": (
        "tests/connectors/file/test_formats.py::test_csv_encoder_round_trips_through_the_reader"
    ),
    "CsvRowDeserializationSchema": (
        "tests/datastream/test_row_schemas.py::test_csv_options_and_errors"
    ),
    "CsvRowSerializationSchema": (
        "tests/datastream/test_row_schemas.py::test_csv_options_and_errors"
    ),
    "CsvBulkWriters": (
        "tests/connectors/file/test_formats.py::test_csv_bulk_writers_write_the_schemas_lines"
    ),
    "CsvSchema": (
        "tests/connectors/file/test_formats.py::test_csv_encoder_round_trips_through_the_reader"
    ),
    "CsvSchemaBuilder": (
        "tests/connectors/file/test_formats.py::test_csv_schema_built_as_pyflinks_docs_build_it"
    ),
    "DataStream": "tests/conformance/test_data_stream.py::test_basic_operations",
    "DataStreamSink": (
        "tests/e2e/test_file_connectors.py::test_csv_files_to_text_sink_exactly_once_with_a_failure"
    ),
    "DeliveryGuarantee": (
        "tests/e2e/test_kafka_sink.py::test_at_least_once_loses_nothing_under_a_random_worker_kill"
    ),
    "DeserializationSchema": (
        "tests/common/test_serialization.py::test_simple_string_schema_round_trip"
    ),
    "Duration": "tests/conformance/test_state_ttl_config.py::test_explicit_duration_is_preserved",
    "DynamicEventTimeSessionWindows": (
        "tests/datastream/test_window_assigners.py::"
        "test_dynamic_session_gap_from_extractor_or_callable"
    ),
    "DynamicProcessingTimeSessionWindows": (
        "tests/runtime/test_window_operator.py::"
        "test_dynamic_processing_time_sessions_take_each_records_gap"
    ),
    "EmbeddedRocksDBStateBackend": (
        "tests/state/test_backend_selection.py::test_configuration_selects_rocksdb"
    ),
    "Encoder": (
        "tests/common/test_serialization.py::test_simple_string_encoder_writes_str_and_newline"
    ),
    "EventTimeSessionWindows": (
        "tests/e2e/test_event_time.py::test_event_time_session_windows_with_process"
    ),
    "EventTimeTrigger": (
        "tests/conformance/test_window.py::test_event_time_session_window_with_purging_trigger"
    ),
    "ExecutionConfig": "tests/conformance/test_stream_execution_environment.py::test_get_config",
    "ExponentialBackoffDelayRetryStrategy": (
        "tests/datastream/test_async_io.py::test_exponential_backoff_matches_pyflinks_sequence"
    ),
    "ExternalizedCheckpointRetention": (
        "tests/conformance/test_check_point_config.py::"
        "test_get_set_externalized_checkpoints_cleanup"
    ),
    "FileCompactStrategy": (
        "tests/connectors/file/test_sink_compaction.py::"
        "test_strategy_and_compactor_builders_check_their_values"
    ),
    "FileCompactor": (
        "tests/connectors/file/test_sink_compaction.py::"
        "test_strategy_and_compactor_builders_check_their_values"
    ),
    "FileEnumeratorProvider": (
        "tests/connectors/test_pyflink_connector_names.py::"
        "test_file_source_defaults_and_bad_providers"
    ),
    "FileSink": (
        "tests/connectors/file/test_sink_parts.py::"
        "test_a_file_sink_writes_into_its_base_path_unless_told_to_bucket"
    ),
    "FileSource": (
        "tests/e2e/test_file_connectors.py::test_csv_files_to_text_sink_exactly_once_with_a_failure"
    ),
    "FileSourceBuilder": (
        "tests/connectors/test_pyflink_connector_names.py::"
        "test_file_source_builder_takes_pyflinks_providers"
    ),
    "FileSplitAssignerProvider": (
        "tests/connectors/test_pyflink_connector_names.py::"
        "test_file_source_builder_takes_pyflinks_providers"
    ),
    "FilterFunction": "tests/conformance/test_data_stream.py::test_keyed_filter",
    "FixedDelayRetryStrategy": (
        "tests/datastream/test_async_io.py::"
        "test_retry_decision_follows_predicates_and_attempt_limit"
    ),
    "FlatMapFunction": "tests/conformance/test_data_stream.py::test_keyed_flat_map",
    "GlobalWindow": "tests/datastream/test_window_assigners.py::test_global_windows",
    "GlobalWindows": "tests/datastream/test_window_assigners.py::test_global_windows",
    "HashMapStateBackend": "tests/state/test_backend_selection.py::test_default_is_hashmap",
    "HybridSource": (
        "tests/e2e/test_hybrid_source.py::test_two_bounded_sources_give_all_records_in_source_order"
    ),
    "HybridSourceBuilder": (
        "tests/e2e/test_hybrid_source.py::test_two_bounded_sources_give_all_records_in_source_order"
    ),
    "Instant": "tests/common/test_time.py::test_instant_epoch_millis_round_trip",
    "JobClient": (
        "tests/datastream/test_job_client.py::"
        "test_get_job_execution_result_is_a_future_of_the_result"
    ),
    "JobExecutionResult": (
        "tests/datastream/test_job_client.py::"
        "test_get_job_execution_result_is_a_future_of_the_result"
    ),
    "JobStatus": "tests/e2e/test_failures.py::test_cancelling_a_running_job",
    "JsonRowDeserializationSchema": (
        "tests/datastream/test_row_schemas.py::test_json_schema_gives_the_row_type"
    ),
    "JsonRowSerializationSchema": (
        "tests/datastream/test_row_schemas.py::test_json_round_trip_with_nested_rows"
    ),
    "KeySelector": "tests/conformance/test_data_stream.py::test_keyed_map",
    "KeyedBroadcastProcessFunction": (
        "tests/e2e/test_connect.py::"
        "test_keyed_broadcast_process_function_combines_keyed_and_broadcast_state"
    ),
    "KeyedCoProcessFunction": (
        "tests/e2e/test_connect.py::test_keyed_co_process_function_joins_by_key_with_state"
    ),
    "KeyedProcessFunction": (
        "tests/conformance/test_data_stream.py::test_keyed_process_function_with_state"
    ),
    "KeyedStream": "tests/conformance/test_data_stream.py::test_keyed_sum",
    "ListState": "tests/conformance/test_data_stream.py::test_keyed_process_function_with_state",
    "ListStateDescriptor": "tests/state/test_keyed_backends.py::test_list_state",
    "MapFunction": (
        "tests/e2e/test_keyed_state.py::"
        "test_map_function_on_a_keyed_stream_uses_state_of_the_record_key"
    ),
    "MapState": (
        "tests/e2e/test_keyed_state.py::"
        "test_map_function_on_a_keyed_stream_uses_state_of_the_record_key"
    ),
    "MapStateDescriptor": (
        "tests/e2e/test_keyed_state.py::"
        "test_map_function_on_a_keyed_stream_uses_state_of_the_record_key"
    ),
    "MemorySize": (
        "tests/conformance/test_stream_execution_environment.py::test_register_slot_sharing_group"
    ),
    "MergingWindowAssigner": (
        "tests/datastream/test_window_assigners.py::test_session_windows_assign_and_merge"
    ),
    "NeverTrigger": (
        "tests/runtime/test_window_operator.py::"
        "test_global_windows_fire_only_as_a_users_trigger_says"
    ),
    "NoRetryStrategy": (
        "tests/datastream/test_async_io.py::"
        "test_retry_decision_follows_predicates_and_attempt_limit"
    ),
    "NumberSequenceSource": (
        "tests/e2e/test_wordcount.py::test_number_sequence_source_feeds_a_keyed_sum"
    ),
    "OperatorStateStore": (
        "tests/connectors/test_pyflink_connector_names.py::"
        "test_operator_state_backend_is_an_operator_state_store"
    ),
    "OutputFileConfig": (
        "tests/e2e/test_file_connectors.py::"
        "test_parquet_files_to_parquet_sink_exactly_once_with_a_failure"
    ),
    "OutputTag": "tests/conformance/test_data_stream.py::test_process_multiple_side_output",
    "ParquetBulkWriters": (
        "tests/e2e/test_file_connectors.py::"
        "test_parquet_files_to_parquet_sink_exactly_once_with_a_failure"
    ),
    "ParquetColumnarRowInputFormat": (
        "tests/connectors/file/test_formats.py::"
        "test_parquet_writer_and_reader_resume_across_row_groups"
    ),
    "Partitioner": "tests/e2e/test_wordcount.py::test_exchanges_deliver_every_record_exactly_once",
    "ProcessAllWindowFunction": "tests/conformance/test_window.py::test_window_all_reduce_process",
    "ProcessFunction": "tests/conformance/test_data_stream.py::test_process_function",
    "ProcessWindowFunction": (
        "tests/datastream/test_side_outputs_yield.py::"
        "test_process_window_function_yields_to_a_side_output"
    ),
    "ProcessingTimeSessionWindows": (
        "tests/runtime/test_window_operator.py::test_processing_time_sessions"
    ),
    "ProcessingTimeTrigger": (
        "tests/runtime/test_window_operator.py::test_tumbling_processing_time_with_the_manual_clock"
    ),
    "PurgingTrigger": "tests/conformance/test_window.py::test_global_window_with_purging_trigger",
    "ReadOnlyBroadcastState": (
        "tests/state/test_operator_state.py::test_broadcast_state_and_read_only_view"
    ),
    "ReduceFunction": (
        "tests/datastream/test_key_context.py::"
        "test_reduce_function_reads_the_state_of_the_current_records_key"
    ),
    "ReducingState": "tests/conformance/test_data_stream.py::test_reducing_state",
    "ReducingStateDescriptor": "tests/conformance/test_data_stream.py::test_reducing_state",
    "RestartStrategies": (
        "tests/e2e/test_failures.py::"
        "test_failure_rate_fails_the_job_after_too_many_failures_in_the_interval"
    ),
    "RestartStrategyConfiguration": (
        "tests/common/test_restart_strategy.py::"
        "test_every_strategy_round_trips_through_the_configuration"
    ),
    "RetryPredicate": (
        "tests/datastream/test_async_io.py::"
        "test_a_users_strategy_retries_as_its_retry_predicate_says"
    ),
    "RollingPolicy": (
        "tests/connectors/file/test_sink_parts.py::"
        "test_on_checkpoint_rolling_policy_rolls_only_on_checkpoints"
    ),
    "Row": "tests/common/test_row.py::test_named_row_keeps_names_in_the_order_given_like_pyflink_2",
    "RowKind": "tests/common/test_row.py::test_set_field_names_and_row_kind",
    "RuntimeContext": (
        "tests/e2e/test_keyed_state.py::"
        "test_runtime_context_describes_the_subtask_and_carries_job_parameters"
    ),
    "RuntimeExecutionMode": (
        "tests/conformance/test_stream_execution_environment.py::test_set_runtime_mode"
    ),
    "SerializationSchema": (
        "tests/common/test_serialization.py::test_simple_string_schema_round_trip"
    ),
    "RowFieldExtractorSchema": (
        "tests/common/test_serialization.py::"
        "test_row_field_extractor_schema_takes_one_bytes_field_as_flink_does"
    ),
    "SessionWindowTimeGapExtractor": (
        "tests/conformance/test_window.py::test_event_time_dynamic_gap_session_window"
    ),
    "SimpleStringSchema": (
        "tests/common/test_serialization.py::test_simple_string_schema_round_trip"
    ),
    "Sink": "tests/e2e/test_final_checkpoint.py::test_the_job_ends_only_after_its_final_checkpoint",
    "SinkFunction": "tests/conformance/test_data_stream.py::test_process_function",
    "SlidingEventTimeWindows": (
        "tests/e2e/test_event_time.py::test_sliding_event_time_windows_with_aggregate"
    ),
    "SlidingProcessingTimeWindows": (
        "tests/datastream/test_window_assigners.py::test_processing_time_assigners_use_the_clock"
    ),
    "SlotSharingGroup": (
        "tests/conformance/test_stream_execution_environment.py::test_register_slot_sharing_group"
    ),
    "Source": "tests/e2e/test_event_time.py::test_in_batch_mode_nothing_is_late",
    "StateBackend": (
        "tests/state/test_backend_selection.py::test_set_state_backend_writes_flinks_keys"
    ),
    "StateTtlConfig": (
        "tests/e2e/test_keyed_state.py::test_state_ttl_expires_values_after_their_time_to_live"
    ),
    "StreamExecutionEnvironment": "tests/conformance/test_data_stream.py::test_basic_operations",
    "StreamFormat": "tests/connectors/file/test_formats.py::test_text_lines_and_resume",
    "Time": "tests/conformance/test_window.py::test_event_time_sliding_window",
    "TimeDomain": "tests/e2e/test_event_time.py::test_event_time_timers_fire_at_end_of_input",
    "TimeWindow": "tests/conformance/test_window.py::test_event_time_sliding_window",
    "TimerService": "tests/e2e/test_event_time.py::test_event_time_timers_fire_at_end_of_input",
    "Trigger": (
        "tests/runtime/test_window_operator.py::"
        "test_global_windows_fire_only_as_a_users_trigger_says"
    ),
    "TriggerResult": "tests/datastream/test_window_assigners.py::test_trigger_result_flags",
    "TumblingEventTimeWindows": (
        "tests/e2e/test_event_time.py::test_tumbling_event_time_windows_with_reduce"
    ),
    "TumblingProcessingTimeWindows": (
        "tests/runtime/test_window_operator.py::test_tumbling_processing_time_with_the_manual_clock"
    ),
    "TypeInformation": "tests/common/test_typeinfo.py::test_basic_types_are_values",
    "KafkaOffsetResetStrategy": (
        "tests/connectors/kafka/test_kafka_offsets.py::"
        "test_committed_offsets_fall_back_to_the_reset_strategy"
    ),
    "KafkaOffsetsInitializer": (
        "tests/connectors/kafka/test_kafka_offsets.py::test_earliest_latest_and_timestamp"
    ),
    "KafkaRecordSerializationSchema": (
        "tests/connectors/kafka/test_kafka_sink_builder.py::"
        "test_a_record_becomes_topic_key_value_and_timestamp"
    ),
    "KafkaRecordSerializationSchemaBuilder": (
        "tests/connectors/kafka/test_kafka_sink_builder.py::"
        "test_a_record_becomes_topic_key_value_and_timestamp"
    ),
    "KafkaSink": "tests/e2e/test_kafka_sink.py::test_exactly_once_under_a_random_worker_kill",
    "KafkaSinkBuilder": (
        "tests/e2e/test_kafka_sink.py::test_exactly_once_under_a_random_worker_kill"
    ),
    "KafkaSourceBuilder": (
        "tests/e2e/test_kafka_source.py::test_oracle_through_kafka_survives_a_worker_kill"
    ),
    "KafkaTopicPartition": (
        "tests/connectors/kafka/test_kafka_offsets.py::"
        "test_specific_offsets_fall_back_to_the_reset_strategy"
    ),
    "KafkaTopicSelector": (
        "tests/connectors/kafka/test_kafka_sink_builder.py::"
        "test_a_topic_selector_class_and_the_last_topic_call_win"
    ),
    "Types": (
        "tests/conformance/test_stream_execution_environment.py::"
        "test_from_collection_with_data_types"
    ),
    "ValueState": (
        "tests/e2e/test_keyed_state.py::test_state_ttl_expires_values_after_their_time_to_live"
    ),
    "ValueStateDescriptor": (
        "tests/e2e/test_keyed_state.py::test_state_ttl_expires_values_after_their_time_to_live"
    ),
    "WatermarkStrategy": (
        "tests/common/test_watermark_strategy.py::test_bounded_out_of_orderness_watermark"
    ),
    "Window": "tests/conformance/test_window.py::test_event_time_sliding_window",
    "WindowAssigner": (
        "tests/datastream/test_window_assigners.py::test_sliding_windows_match_brute_force"
    ),
    "WindowFunction": "tests/runtime/test_window_operator.py::test_aggregate_with_window_function",
    "WindowedStream": "tests/conformance/test_window.py::test_chained_window",
}
