-- A filtered, sorted resource list walks the index of its sort column until it has a page of
-- rows that pass the filters. With only (environment, sort column, resource_id) in that index,
-- each row walked was read from the table to test its agent or type: at 100 000 resources,
-- filtering on 11 agents of 100 and sorting on the id value read ~60 000 rows of the table for a
-- page of 100, most of the console's 130 ms for that view. Each sort index now also holds the
-- other filter columns that never change for a resource (type, agent, id value): SQLite tests
-- the filters on the index entry and reads from the table only the rows of the page, and the
-- filtered counts read the index alone. The status stays out: it changes with every deploy, and
-- every index that held it would be written at each state change.
DROP INDEX resource_state_by_type;
DROP INDEX resource_state_by_agent;
DROP INDEX resource_state_by_value;
CREATE INDEX resource_state_by_type ON resource_persistent_state (environment, resource_type, resource_id, agent, id_value);
CREATE INDEX resource_state_by_agent ON resource_persistent_state (environment, agent, resource_id, resource_type, id_value);
CREATE INDEX resource_state_by_value ON resource_persistent_state (environment, id_value, resource_id, resource_type, agent);
