-- Undoes 0060: geoingest_prefilter_match as in 0057.
CREATE OR REPLACE FUNCTION geoingest_prefilter_match(target text, old_ref bigint, key_fields text[], copied bigint, OUT total bigint, OUT kept bigint)
 RETURNS record
 LANGUAGE plpgsql
 SET work_mem TO '256MB'
 SET jit TO 'off'
AS $function$
DECLARE
    ot      text := format('geoingest_store.%I', geoingest_job_table(target, old_ref));
    keyed   boolean := cardinality(coalesce(key_fields, '{}')) > 0;
    sig     text := key_fields::text || ':';
    kx      text := 'NULL::text';
    npairs  bigint;
    nunkept bigint;
    nbypass bigint;
    barea   double precision;
    moved   bigint := 0;
    marea   double precision := 0;
    nstale  bigint;
BEGIN
    IF keyed THEN
        -- As geoingest_diff_plan computes an old row's key.
        kx := format('nullif(CASE WHEN starts_with(o.match_key, $2) THEN o.match_key ELSE $2 || %s END, $2)',
                     geoingest_match_key_expr(key_fields, 'o.properties', 3));
    END IF;
    DROP TABLE IF EXISTS pg_temp.geoingest_kept, pg_temp.geoingest_bypass, pg_temp.geoingest_unkept,
                         pg_temp.geoingest_bypass_n, pg_temp.geoingest_bypass_rep, pg_temp.geoingest_match_old,
                         pg_temp.geoingest_match_old_of;
    CREATE TEMP TABLE geoingest_kept (fi bigint, rid tid, fid bigint, match_key text, geom_hash uuid, props_hash uuid,
                                      area_m2 double precision) ON COMMIT DROP;
    CREATE TEMP TABLE geoingest_bypass (fi bigint, rid tid, kh bigint) ON COMMIT DROP;
    CREATE TEMP TABLE geoingest_unkept (fi bigint) ON COMMIT DROP;
    CREATE TEMP TABLE geoingest_bypass_n (n bigint, area_m2 double precision) ON COMMIT DROP;
    CREATE TEMP TABLE geoingest_match_old (rid tid, fid bigint, k text, gh uuid, ph uuid) ON COMMIT DROP;
    ANALYZE pg_temp.geoingest_raw;
    -- One pass: each old row with the features of its raw hash (a row is
    -- taken only when the writer would give the feature its very match
    -- columns: hashes in the current form and, keyed, its key under the
    -- same fields), each feature with none once. c: 0 an old row not
    -- kept, 1 a kept pair in the match, 2 a bypass pair, 3 a feature not
    -- kept. Only what each needs is kept of it.
    EXECUTE format('
        WITH o AS (SELECT o.ctid AS rid, coalesce(o.feature_id, o.id) AS fid, o.match_key, %2$s AS k,
                          CASE WHEN o.geom_hash < geoingest_hash_form_end() THEN o.geom_hash
                               ELSE geoingest_geom_hash(o.geom) END AS gh,
                          CASE WHEN o.props_hash < geoingest_hash_form_end() THEN o.props_hash
                               ELSE geoingest_props_hash(o.properties) END AS ph,
                          o.area_m2,
                          CASE WHEN o.geom_hash < geoingest_hash_form_end() AND o.props_hash < geoingest_hash_form_end()
                                    AND (NOT $4 OR starts_with(o.match_key, $2)) THEN o.raw_hash END AS rh,
                          $4 AND o.match_key IS NOT NULL AND o.match_key <> $2 AS byp,
                          o.geom IS NOT NULL AND (o.geom_hash >= geoingest_hash_form_end()
                                                  OR o.props_hash >= geoingest_hash_form_end()) AS stale
                   FROM %1$s o WHERE o.job_ref = $1),
             j AS (SELECT r.fi, o.rid,
                          CASE WHEN r.fi IS NULL THEN 0 WHEN o.rid IS NULL THEN 3 WHEN o.byp THEN 2 ELSE 1 END AS c,
                          CASE WHEN r.fi IS NULL OR NOT o.byp THEN o.fid END AS fid,
                          CASE WHEN r.fi IS NULL THEN o.k WHEN NOT o.byp THEN o.match_key END AS k,
                          CASE WHEN r.fi IS NULL OR NOT o.byp THEN o.gh END AS gh,
                          CASE WHEN r.fi IS NULL OR NOT o.byp THEN o.ph END AS ph,
                          CASE WHEN r.fi IS NOT NULL AND o.byp THEN hashtextextended(o.match_key, 0) END AS kh,
                          CASE WHEN r.fi IS NOT NULL THEN o.area_m2 END AS area,
                          o.stale
                   FROM o FULL JOIN pg_temp.geoingest_raw r ON r.raw = o.rh),
             a AS (INSERT INTO pg_temp.geoingest_match_old SELECT j.rid, j.fid, j.k, j.gh, j.ph FROM j WHERE j.c = 0),
             b AS (INSERT INTO pg_temp.geoingest_kept SELECT j.fi, j.rid, j.fid, j.k, j.gh, j.ph, j.area FROM j WHERE j.c = 1),
             d AS (INSERT INTO pg_temp.geoingest_bypass SELECT j.fi, j.rid, j.kh FROM j WHERE j.c = 2),
             e AS (INSERT INTO pg_temp.geoingest_unkept SELECT j.fi FROM j WHERE j.c = 3)
        SELECT count(*) FILTER (WHERE j.c = 3), count(*) FILTER (WHERE j.c IN (1, 2)),
               count(*) FILTER (WHERE j.c = 2), coalesce(sum(j.area) FILTER (WHERE j.c = 2), 0),
               count(*) FILTER (WHERE j.stale)
        FROM j', ot, kx) INTO nunkept, npairs, nbypass, barea, nstale USING old_ref, sig, key_fields, keyed;
    IF nstale = 0 THEN
        -- No row of the generation holds a match hash of a form before
        -- the current one; the version adds none (its rows are hashed
        -- in the current form, or not at all).
        INSERT INTO geoingest_hashes_current (job_ref) VALUES (old_ref) ON CONFLICT DO NOTHING;
    END IF;
    total := copied;
    kept := total - nunkept;
    IF nbypass > 0 THEN
        -- The keys found more than once among the bypass pairs and the old
        -- rows left in the match (by a 64-bit hash: a collision only puts
        -- a pair back): their pairs go back into the match, from their rows.
        PERFORM geoingest_prefilter_repeats();
        IF EXISTS (SELECT FROM pg_temp.geoingest_bypass_rep) THEN
            EXECUTE format('WITH d AS (DELETE FROM pg_temp.geoingest_bypass b
                                       WHERE b.kh IN (SELECT r.kh FROM pg_temp.geoingest_bypass_rep r)
                                       RETURNING b.fi, b.rid),
                                 i AS (INSERT INTO pg_temp.geoingest_kept
                                       SELECT d.fi, d.rid, coalesce(o.feature_id, o.id), o.match_key, o.geom_hash, o.props_hash, o.area_m2
                                       FROM d JOIN %s o ON o.ctid = d.rid
                                       WHERE o.job_ref = $1
                                       RETURNING area_m2)
                            SELECT count(*), coalesce(sum(i.area_m2), 0) FROM i', ot) INTO moved, marea USING old_ref;
        END IF;
    END IF;
    INSERT INTO pg_temp.geoingest_bypass_n VALUES (nbypass - moved, barea - marea);
    -- The kept pairs' rows in the match, each once (bytes repeated in the
    -- file pair one row with several features), with the key the match
    -- computes for them (none where the row's key is the empty one).
    INSERT INTO pg_temp.geoingest_match_old (rid, fid, k, gh, ph)
    SELECT DISTINCT k.rid, k.fid, CASE WHEN keyed THEN nullif(k.match_key, sig) END, k.geom_hash, k.props_hash
    FROM pg_temp.geoingest_kept k;
    IF npairs = 0 THEN
        -- Nothing kept: the version is read whole (prefilter.go), and the
        -- match's old side is every row, as listed here; the match takes
        -- it rather than read the generation again.
        CREATE TEMP TABLE geoingest_match_old_of ON COMMIT DROP AS SELECT old_ref AS old_ref, coalesce(key_fields, '{}') AS key_fields;
    END IF;
    IF npairs > kept THEN
        -- A feature's bytes are several rows' (of one content, so never a
        -- bypass pair: their key repeats): one of them stands for it.
        DELETE FROM pg_temp.geoingest_kept k
        WHERE k.ctid NOT IN (SELECT min(d.ctid) FROM pg_temp.geoingest_kept d GROUP BY d.fi);
    END IF;
END
$function$;
