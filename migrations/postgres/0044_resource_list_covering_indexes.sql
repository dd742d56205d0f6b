-- Nothing to do on PostgreSQL. SQLite's resource list indexes gain the immutable filter columns
-- here so that filters are tested on the index entry; a plain index scan of PostgreSQL tests
-- non-key columns only after reading the row from the table (only an index-only scan would
-- avoid that, and it needs pages the deploys keep changing marked all-visible), while each
-- deploy's updates of resource_persistent_state would write the wider entries.
SELECT 1;
