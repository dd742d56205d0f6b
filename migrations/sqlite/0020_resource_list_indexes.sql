-- The resource list sorts on type, agent or id value (then the id, for stable keyset pages):
-- with these indexes a page of 100 walks 100 index entries instead of sorting every resource
-- of the environment, and counts before/after a page read the index only.
CREATE INDEX resource_state_by_type ON resource_persistent_state (environment, resource_type, resource_id);
CREATE INDEX resource_state_by_agent ON resource_persistent_state (environment, agent, resource_id);
CREATE INDEX resource_state_by_value ON resource_persistent_state (environment, id_value, resource_id);
