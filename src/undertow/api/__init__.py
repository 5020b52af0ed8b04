"""User-facing contracts that the runtime calls: function classes, output tags, windows.

They sit below the runtime (which invokes them) and above state and core; the public modules
:mod:`undertow.datastream.functions`, :mod:`undertow.datastream.output_tag` and
:mod:`undertow.datastream.window` re-export them under PyFlink's paths.
"""
