-- Environment metrics (Inmanta's environment_metrics_gauge / _timer, GET /api/v2/metrics):
-- one row per environment, metric, category (a resource or agent state, or '__None__') and
-- collection minute. Timers hold how many events the minute had and their summed seconds.
CREATE TABLE environment_metrics_gauge (
    environment TEXT NOT NULL REFERENCES environment(id) ON DELETE CASCADE,
    metric_name TEXT NOT NULL,
    category TEXT NOT NULL,
    timestamp TEXT NOT NULL,
    count BIGINT NOT NULL,
    PRIMARY KEY (environment, metric_name, category, timestamp)
);
CREATE TABLE environment_metrics_timer (
    environment TEXT NOT NULL REFERENCES environment(id) ON DELETE CASCADE,
    metric_name TEXT NOT NULL,
    category TEXT NOT NULL,
    timestamp TEXT NOT NULL,
    count BIGINT NOT NULL,
    value DOUBLE PRECISION NOT NULL,
    PRIMARY KEY (environment, metric_name, category, timestamp)
);
CREATE INDEX environment_metrics_gauge_time ON environment_metrics_gauge (environment, timestamp);
CREATE INDEX environment_metrics_timer_time ON environment_metrics_timer (environment, timestamp);
