-- A dry run of what a ResourceFilter selects (`POST /api/v2/dryrun_filtered`, Inmanta 20.1): the
-- filter it was asked with and the caller's context, both JSON, returned as they were sent.
ALTER TABLE dryrun ADD COLUMN resource_filter TEXT;
ALTER TABLE dryrun ADD COLUMN context TEXT;
