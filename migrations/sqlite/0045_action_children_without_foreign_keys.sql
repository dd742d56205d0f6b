-- Nothing to do on SQLite: PostgreSQL drops the foreign keys of resource_log and
-- resource_action_resource to resource_action here (a per-row check and lock that was a fifth of
-- its deploy writes); SQLite's check is an in-process B-tree lookup, and dropping a key there
-- means rebuilding the two largest tables.
SELECT 1;
