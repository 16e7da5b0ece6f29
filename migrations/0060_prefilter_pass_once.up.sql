-- geoingest schema, version 60: the prefilter's one pass costs less
-- (docs/design.md, "Versions as changes").
--
-- geoingest_prefilter_match joins the current generation with the raw
-- hashes of the new version's features once (0051). For a keyed
-- 1M-parcel version with 1 % changed it took 4.0-4.8 s of the server's
-- 5 s (auto_explain): the FULL JOIN, whose result a CTE stored and then
-- read five times (an insert per class and the counts), and a hash table
-- of the million raw hashes at a work_mem of 256 MB. Now:
--   - the pass writes its result once, into one temp table, which
--     becomes the table of the class most pairs are in (the bypass pairs
--     of a keyed source, the kept pairs of another); the other rows, few
--     where few features changed, move to their tables in one pass;
--   - the function's work_mem is 8 MB: the hash join runs in batches
--     that fit a processor's cache. The join alone at 1M: 1.0-1.2 s of
--     CPU against 1.5-1.7 s in one table of 55 MB.
-- The function's whole CPU at 1M (a keyed generation, 1 % changed; the
-- backend's own CPU time from /proc, a new session for each call, the two
-- alternated four times on an idle machine): 3.1-4.4 s against 3.7-5.0 s,
-- 0.2-0.7 s less in each pair; the outputs were the same tables, row for
-- row. A whole job's server CPU varies by more than that from run to run
-- (4.4-6.4 s), so the gain is not visible in a few rounds of the
-- benchmark. Its tables
-- hold what they held: geoingest_kept and geoingest_bypass gain columns
-- their readers do not name (each reads its columns by name, and an
-- insert of geoingest_kept's first seven fills those).

-- geoingest_prefilter_match: total is how many raw hashes were copied,
-- kept how many of those features were found among the rows. As in 0057,
-- with the pass's result written once and the join in batches.
CREATE OR REPLACE FUNCTION geoingest_prefilter_match(target text, old_ref bigint, key_fields text[], copied bigint, OUT total bigint, OUT kept bigint)
 RETURNS record
 LANGUAGE plpgsql
 SET work_mem TO '8MB'
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
    most    smallint;
BEGIN
    IF keyed THEN
        -- As geoingest_diff_plan computes an old row's key.
        kx := format('nullif(CASE WHEN starts_with(o.match_key, $2) THEN o.match_key ELSE $2 || %s END, $2)',
                     geoingest_match_key_expr(key_fields, 'o.properties', 3));
    END IF;
    DROP TABLE IF EXISTS pg_temp.geoingest_kept, pg_temp.geoingest_bypass, pg_temp.geoingest_unkept,
                         pg_temp.geoingest_bypass_n, pg_temp.geoingest_bypass_rep, pg_temp.geoingest_match_old,
                         pg_temp.geoingest_match_old_of, pg_temp.geoingest_pairs;
    -- Every pair and every unpaired row or feature of the one pass, in
    -- the columns of geoingest_kept (so that a kept pair is its row as
    -- it is), then the bypass pair's key hash (kh), its class (c, below)
    -- and whether its row is stale. It becomes geoingest_kept or
    -- geoingest_bypass, whichever class most pairs are in.
    CREATE TEMP TABLE geoingest_pairs (fi bigint, rid tid, fid bigint, match_key text, geom_hash uuid, props_hash uuid,
                                       area_m2 double precision, kh bigint, c smallint, stale boolean) ON COMMIT DROP;
    CREATE TEMP TABLE geoingest_unkept (fi bigint) ON COMMIT DROP;
    CREATE TEMP TABLE geoingest_bypass_n (n bigint, area_m2 double precision) ON COMMIT DROP;
    CREATE TEMP TABLE geoingest_match_old (rid tid, fid bigint, k text, gh uuid, ph uuid) ON COMMIT DROP;
    ANALYZE pg_temp.geoingest_raw;
    -- One pass: each old row with the features of its raw hash (a row is
    -- taken only when the writer would give the feature its very match
    -- columns: hashes in the current form and, keyed, its key under the
    -- same fields), each feature with none once. c: 0 an old row not
    -- kept, 1 a kept pair in the match, 2 a bypass pair, 3 a feature not
    -- kept. Only what each needs is kept of it. The pass writes one table
    -- (a CTE read by one insert per class would store every pair once
    -- more and read them all five times), and the hash join takes the
    -- work_mem of a few megabytes the function sets: in batches that fit
    -- a processor's cache it costs less CPU than in one table of 55 MB
    -- (1.0-1.2 s against 1.5-1.7 s at 1M).
    EXECUTE format('
        INSERT INTO pg_temp.geoingest_pairs (fi, rid, fid, match_key, geom_hash, props_hash, area_m2, kh, c, stale)
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
                   FROM o FULL JOIN pg_temp.geoingest_raw r ON r.raw = o.rh)
        SELECT j.fi, j.rid, j.fid, j.k, j.gh, j.ph, j.area, j.kh, j.c, j.stale FROM j', ot, kx)
    USING old_ref, sig, key_fields, keyed;
    SELECT count(*) FILTER (WHERE p.c = 3), count(*) FILTER (WHERE p.c IN (1, 2)),
           count(*) FILTER (WHERE p.c = 2), coalesce(sum(p.area_m2) FILTER (WHERE p.c = 2), 0),
           count(*) FILTER (WHERE p.stale)
    INTO nunkept, npairs, nbypass, barea, nstale FROM pg_temp.geoingest_pairs p;
    -- The class most pairs are in stays where it is: the bypass pairs of a
    -- keyed source, the kept pairs of another. The others (few where few
    -- features changed) move to their tables.
    most := CASE WHEN 2 * nbypass >= npairs THEN 2 ELSE 1 END;
    IF most = 2 THEN
        ALTER TABLE pg_temp.geoingest_pairs RENAME TO geoingest_bypass;
        CREATE TEMP TABLE geoingest_kept (LIKE pg_temp.geoingest_bypass) ON COMMIT DROP;
        WITH x AS (DELETE FROM pg_temp.geoingest_bypass p WHERE p.c <> 2 RETURNING p.*),
             a AS (INSERT INTO pg_temp.geoingest_match_old
                   SELECT x.rid, x.fid, x.match_key, x.geom_hash, x.props_hash FROM x WHERE x.c = 0),
             b AS (INSERT INTO pg_temp.geoingest_kept SELECT x.* FROM x WHERE x.c = 1)
        INSERT INTO pg_temp.geoingest_unkept SELECT x.fi FROM x WHERE x.c = 3;
    ELSE
        ALTER TABLE pg_temp.geoingest_pairs RENAME TO geoingest_kept;
        CREATE TEMP TABLE geoingest_bypass (LIKE pg_temp.geoingest_kept) ON COMMIT DROP;
        WITH x AS (DELETE FROM pg_temp.geoingest_kept p WHERE p.c <> 1 RETURNING p.*),
             a AS (INSERT INTO pg_temp.geoingest_match_old
                   SELECT x.rid, x.fid, x.match_key, x.geom_hash, x.props_hash FROM x WHERE x.c = 0),
             b AS (INSERT INTO pg_temp.geoingest_bypass SELECT x.* FROM x WHERE x.c = 2)
        INSERT INTO pg_temp.geoingest_unkept SELECT x.fi FROM x WHERE x.c = 3;
    END IF;
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
