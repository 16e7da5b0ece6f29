-- name: EnsureSubscriber :exec
-- EnsureSubscriber creates a change-feed subscriber at the feed's start
-- (migration 0031), unless it exists.
INSERT INTO change_subscribers (name) VALUES (@name) ON CONFLICT (name) DO NOTHING;

-- name: TakeSubscriber :one
-- TakeSubscriber makes holder the subscriber's holder for lease seconds
-- when it is free, already holder's, or its lease ran out; no row
-- otherwise.
UPDATE change_subscribers
SET holder = @holder::text, lease_until = now() + make_interval(secs => @lease_secs::float8), updated_at = now()
WHERE name = @name AND (holder IS NULL OR holder = @holder::text OR lease_until < now())
RETURNING cursor::text AS cursor;

-- name: SaveSubscriberCursor :execrows
-- SaveSubscriberCursor moves the cursor forward (never back; '' leaves it),
-- counts delivered records and renews holder's lease; no row when holder
-- does not hold it.
UPDATE change_subscribers
SET cursor = CASE WHEN @cursor::text = '' THEN cursor ELSE greatest(cursor, CAST(@cursor::text AS xid8)) END,
    delivered = delivered + @delivered::bigint,
    lease_until = now() + make_interval(secs => @lease_secs::float8), updated_at = now()
WHERE name = @name AND holder = @holder::text AND lease_until >= now();

-- name: ReleaseSubscriber :exec
-- ReleaseSubscriber ends holder's lease.
UPDATE change_subscribers SET holder = NULL, lease_until = NULL, updated_at = now()
WHERE name = @name AND holder = @holder::text;
