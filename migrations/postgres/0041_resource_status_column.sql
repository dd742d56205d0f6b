-- The resource's single API status (reference/deploy.md §2.3, first match wins) as a column the
-- database keeps itself, with an index: the deploy summary, the status filter and the counts of
-- a filtered resource list read the index instead of evaluating the CASE for every resource of
-- the environment (at 100 000 resources that was most of a filtered list page's 76 ms).
-- PostgreSQL stores it (STORED is the only kind it has).
ALTER TABLE resource_persistent_state ADD COLUMN status TEXT GENERATED ALWAYS AS (CASE
    WHEN is_orphan = 1 THEN 'orphaned'
    WHEN is_deploying = 1 THEN 'deploying'
    WHEN is_undefined = 1 THEN 'undefined'
    WHEN blocked = 'blocked' THEN 'skipped_for_undefined'
    WHEN last_non_deploying_status IS NULL OR last_deployed_attribute_hash IS NULL
      OR last_deployed_attribute_hash <> current_intent_attribute_hash THEN 'available'
    ELSE last_non_deploying_status END) STORED;
-- (environment, status, agent): counts per status, and per agent within a status, index-only.
CREATE INDEX resource_state_by_status ON resource_persistent_state (environment, status, agent);
