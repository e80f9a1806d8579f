"""Tables (CSV, Parquet, frames): the job reader (``job``) over a source (``source``,
``columns``), its typed view (``view``), read in place (``inplace``), in object storage
(``object_store``); summarised jobs (``summary``) and the Spark reduction (``spark``)."""
