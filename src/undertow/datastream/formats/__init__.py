"""PyFlink's ``pyflink.datastream.formats``: file formats (``.csv``, ``.json``, ``.parquet``)."""
