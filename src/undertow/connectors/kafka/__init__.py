"""Kafka connector: ``KafkaSource`` (FLIP-27) and ``KafkaSink`` on confluent-kafka.

Public names are re-exported by :mod:`undertow.datastream.connectors.kafka` (PyFlink's module
path). Modules, one concept each:

* :mod:`.offsets`: topic-partitions and offsets initializers (where reading starts and stops);
* :mod:`.split`: a split, one topic-partition and the next offset to read;
* :mod:`.assignment`: which reader subtask owns a partition (pure, deterministic);
* :mod:`.admin`: the broker lookups the enumerator needs (partitions, offsets);
* :mod:`.enumerator`, :mod:`.fetcher`, :mod:`.reader`, :mod:`.source`: the source;
* :mod:`.batch_deserializer`: values into record batches, for a batch-emitting source;
* :mod:`.record_serializer`: how a record becomes a Kafka record (topic, key, value);
* :mod:`.sink_protocol`: the exactly-once sink's pure decisions;
* :mod:`.producer_io`: the sink's client I/O; :mod:`.writer`: its writers;
* :mod:`.sink`: ``KafkaSink`` and its builder.
"""
