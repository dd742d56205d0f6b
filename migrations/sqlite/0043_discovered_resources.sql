-- Resources that discovery handlers (a `DiscoveryHandler`'s `discover_resources`) found on the
-- managed machines and reported with `POST /api/v2/discovered` (reference/api.md). One row per
-- environment and discovered resource id; a new report of the same id replaces it.
CREATE TABLE discovered_resource (
    environment TEXT NOT NULL REFERENCES environment(id) ON DELETE CASCADE,
    -- the resource id as reported (Inmanta keeps it as given)
    discovered_resource_id TEXT NOT NULL,
    -- its parts, for filtering and sorting
    resource_type TEXT NOT NULL,
    agent TEXT NOT NULL,
    resource_id_value TEXT NOT NULL,
    -- the JSON object of the values the handler reported
    resource_values TEXT NOT NULL,
    -- the id of the discovery resource whose handler reported it
    discovery_resource_id TEXT NOT NULL,
    discovered_at TEXT NOT NULL,
    PRIMARY KEY (environment, discovered_resource_id)
);
