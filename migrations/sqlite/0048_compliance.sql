-- Compliance of report-only resources (Inmanta's last_handler_run_compliant and non_compliant_diff):
-- whether the last handler run for the current intent found the resource as desired (1) or not (0),
-- NULL before any; and, while the last run reported non_compliant, the attribute diff it found
-- ({attribute: {current, desired}} as JSON), which POST /api/v2/compliance_report serves.
ALTER TABLE resource_persistent_state ADD COLUMN last_handler_run_compliant BIGINT;
ALTER TABLE resource_persistent_state ADD COLUMN non_compliant_diff TEXT;
