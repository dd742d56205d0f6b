-- The console's resourceSummary counts the managed resources of an environment by last handler
-- run, blocked, compliance and deploying. Evaluated per row (compliance's CASE) and grouped in a
-- temporary B-tree, that read the whole table: 13 to 16 ms of SQLite at 10 000 resources, most
-- of the resources view's query. The compliance (api::state::Compliance::sql, NULL for an
-- orphan) becomes a column the database keeps, and the status index, which is already rewritten
-- at every deploying/deployed change, also holds the summary's columns, in an order a GROUP BY
-- can stream: the summary reads the index alone (about 5 ms at 10 000). Whether a managed
-- resource is deploying is its status 'deploying' (the status puts an orphan first).
-- PostgreSQL stores it (STORED is the only kind it has).
ALTER TABLE resource_persistent_state ADD COLUMN compliance TEXT GENERATED ALWAYS AS (CASE
    WHEN is_orphan = 1 THEN NULL
    WHEN is_undefined = 1 THEN 'undefined'
    WHEN last_deployed_attribute_hash IS NULL OR last_deployed_attribute_hash <> current_intent_attribute_hash THEN 'has_update'
    WHEN last_handler_run_compliant = 1 THEN 'compliant'
    ELSE 'non_compliant' END) STORED;
DROP INDEX resource_state_by_status;
CREATE INDEX resource_state_by_status ON resource_persistent_state
    (environment, status, agent, last_handler_run, blocked, compliance);
