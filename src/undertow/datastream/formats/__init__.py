"""PyFlink's ``pyflink.datastream.formats``: file formats (``.csv``, ``.json``, ``.parquet``)
and Kafka row schemas (``.avro``, ``.csv``, ``.json``)."""
