-- The deploys of one version (the all-in-one deploy's summary reads what they changed) without
-- reading the environment's whole history of actions.
CREATE INDEX resource_action_version ON resource_action (environment, version);
