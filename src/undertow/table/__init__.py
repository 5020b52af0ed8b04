"""PyFlink's ``pyflink.table``, as far as DataStream programs use it: ``DataTypes``.

undertow has no Table API. PyFlink's DataStream formats take Table API types where Flink's Java
side wants a ``RowType``: ``CsvSchema.builder().add_number_column('id', DataTypes.INT())``,
``ParquetColumnarRowInputFormat(row_type=DataTypes.ROW([...]))``,
``ParquetBulkWriters.for_row_type(row_type)``. ``DataTypes`` here gives the equivalent
``TypeInformation`` (:mod:`undertow.table.types`), so those programs port by their imports.
"""

from undertow.table.types import DataTypeField, DataTypes

__all__ = ["DataTypeField", "DataTypes"]
