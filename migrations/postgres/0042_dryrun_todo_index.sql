-- How far a dry run is (`todo`: its resources not reported yet) counts the rows whose
-- diff_status is still NULL; with this index that is a range of the index that shrinks as the
-- results come in, instead of a walk over every resource of the dry run on each poll.
CREATE INDEX dryrun_resource_todo ON dryrun_resource (dryrun, diff_status);
