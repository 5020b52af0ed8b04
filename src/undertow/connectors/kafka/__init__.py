"""Kafka connector: ``KafkaSource`` (FLIP-27) on confluent-kafka.

Public names are re-exported by :mod:`undertow.datastream.connectors.kafka` (PyFlink's module
path). Modules, one concept each:

* :mod:`.offsets`: topic-partitions and offsets initializers (where reading starts and stops);
* :mod:`.split`: a split, one topic-partition and the next offset to read;
* :mod:`.assignment`: which reader subtask owns a partition (pure, deterministic);
* :mod:`.admin`: the broker lookups the enumerator needs (partitions, offsets), with errors
  naming the bootstrap servers and the time-out;
* :mod:`.enumerator`: discovers partitions and assigns them (JobMaster side);
* :mod:`.fetcher`: the thread that owns a reader's consumer;
* :mod:`.reader`: the source reader in each subtask;
* :mod:`.source`: ``KafkaSource`` and its builder.
"""
