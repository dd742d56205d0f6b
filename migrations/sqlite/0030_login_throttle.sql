-- The login throttle (docs/security.md), shared by every server on the database so that guesses
-- spread over several servers count once. One row per key (`subject`): a user name at one client address per
-- delay tier ("u<tier>:<address>|<user>") or a client address over all users ("a:<address>").
-- Each row is a GCRA cell: `tat` is the theoretical arrival time in milliseconds of the
-- database's clock; the key may fail `burst` times at once, then once per `period` milliseconds.
-- A row whose `tat` has passed is the same as no row and is deleted.
CREATE TABLE login_throttle (
    subject TEXT PRIMARY KEY,
    tat BIGINT NOT NULL,
    period BIGINT NOT NULL,
    burst BIGINT NOT NULL
);
CREATE INDEX login_throttle_tat ON login_throttle (tat);
