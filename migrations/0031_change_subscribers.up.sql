-- geoingest schema, version 31: the change feed's durable consumers
-- (docs/changes.md, "The webhook").
--
-- change_subscribers: one row per named consumer of the change feed (a
-- webhook): the cursor of the last record it delivered, and the lease of
-- the one process that delivers for it at a time (holder, lease_until),
-- taken and renewed by that process, free when it ends or its lease runs
-- out. The cursor only moves forward, and only while its holder holds the
-- lease: a process that lost it cannot move it back.
CREATE TABLE change_subscribers (
    name        text PRIMARY KEY,
    cursor      xid8 NOT NULL DEFAULT '0',
    holder      text,
    lease_until timestamptz,
    delivered   bigint NOT NULL DEFAULT 0,
    created_at  timestamptz NOT NULL DEFAULT now(),
    updated_at  timestamptz NOT NULL DEFAULT now()
);
