"""The bottom layer: typed ids, the exception hierarchy and typed configuration options.

Nothing here imports from any other undertow package.
"""
