-- The log lines and the resource links of an action lose their foreign keys to resource_action on
-- PostgreSQL. Each inserted row's check looked the action up and locked it (FOR KEY SHARE): a
-- deploy of 100 000 NullResources writes 500 000 log lines and 100 000 links, and those checks
-- were 2.7 s of the database's CPU, a fifth of all it spent on the deploy's writes. What the keys
-- guarded holds without them: these rows are written only in the transaction that inserts their
-- action, right after it (orchestrator/src/resources.rs), and no action is deleted on its own;
-- clearing or deleting an environment deletes the log lines and links first, table by table
-- (ENVIRONMENT_DATA_TABLES in orchestrator/src/environments.rs), so their ON DELETE CASCADE was
-- never the path that removed them. SQLite keeps its keys: its check is an in-process B-tree
-- lookup, and dropping a key there means rebuilding the two largest tables.
ALTER TABLE resource_log DROP CONSTRAINT resource_log_environment_action_id_fkey;
ALTER TABLE resource_action_resource DROP CONSTRAINT resource_action_resource_environment_action_id_fkey;
