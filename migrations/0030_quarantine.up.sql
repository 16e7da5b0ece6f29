-- geoingest schema, version 30: the quarantine. A feature that a policy
-- leaves out of its job (null or empty geometry, a geometry that is not
-- polygonal, one with no polygonal area left after repair) is kept, with
-- the rule and the reason, instead of only a count (ingest/quarantine.go).
--
-- geoingest_quarantine holds one row per feature left out: its job, its
-- index and layer in the file, the rule (null-geometry, wrong-type,
-- collapsed) and a reason in words, its raw attributes and its geometry
-- where it had one, in the file's CRS (or EPSG:4326 for a collapsed one,
-- which was transformed before the repair). It is written in the write
-- gate's transaction, so a job's quarantine is committed with it, once:
-- a duplicate delivery stops at a gate and quarantines nothing twice.
-- Its geometry is of the domain geoingest_internal_geometry (0017), so
-- that clients (QGIS, ogrinfo) do not list it as a layer.
CREATE TABLE geoingest_quarantine (
    job_id        text NOT NULL REFERENCES jobs (job_id) ON DELETE CASCADE,
    feature_index bigint NOT NULL,
    layer         text NOT NULL,
    rule          text NOT NULL,
    reason        text NOT NULL,
    properties    jsonb NOT NULL,
    geom          geoingest_internal_geometry,
    PRIMARY KEY (job_id, layer, feature_index)
);

-- jobs.quarantined is the number of the job's features in the
-- quarantine, recorded by the write gate (NULL for a job written before
-- this migration, whose left-out features were only counted): verify
-- checks it against the quarantine and against skipped_null +
-- skipped_type.
ALTER TABLE jobs ADD COLUMN quarantined bigint;

-- geoingest_finish_job_table with job_id: as the 0014 function, except
-- that a feature with no polygonal area left after repair goes to the
-- quarantine under job_id, with its geometry before the repair, instead
-- of only being deleted and counted. repaired counts every feature
-- repaired (collapsed ones too), as before.
CREATE FUNCTION geoingest_finish_job_table(target text, job_ref bigint, repair boolean,
                                           invalid bigint[], server_check boolean, job_id text,
                                           OUT written bigint, OUT area_m2 double precision,
                                           OUT features_checksum text, OUT repaired bigint,
                                           OUT collapsed bigint)
LANGUAGE plpgsql AS $$
DECLARE
    t text := format('geoingest_store.%I', geoingest_job_table(target, job_ref));
    bad bigint[] := coalesce(invalid, '{}');
    found bigint[];
    first record;
BEGIN
    repaired := 0;
    collapsed := 0;
    IF server_check THEN
        EXECUTE format('WITH m AS (UPDATE %s SET area_m2 = ST_Area(geom::geography)
                                   WHERE job_ref = $1 AND area_m2 IS NULL
                                   RETURNING feature_index, geom)
                        SELECT array_agg(feature_index) FILTER (WHERE NOT ST_IsValid(geom)) FROM m', t)
            INTO found USING job_ref;
        bad := bad || coalesce(found, '{}');
    END IF;
    IF cardinality(bad) > 0 THEN
        IF NOT repair THEN
            EXECUTE format('SELECT feature_index, ST_IsValidReason(geom) AS reason FROM %s
                            WHERE job_ref = $1 AND feature_index = (SELECT min(i) FROM unnest($2::bigint[]) i)
                            ORDER BY id LIMIT 1', t)
                INTO first USING job_ref, bad;
            RAISE EXCEPTION 'feature %: invalid geometry: %', first.feature_index, first.reason
                USING ERRCODE = 'data_exception';
        END IF;
        EXECUTE format('WITH r AS (SELECT id, ST_Multi(ST_CollectionExtract(ST_MakeValid(geom), 3)) AS g
                                   FROM %1$s WHERE job_ref = $1 AND feature_index = ANY($2)),
                             up AS (UPDATE %1$s t SET (geom, area_m2) = (r.g, ST_Area(r.g::geography))
                                    FROM r WHERE t.job_ref = $1 AND t.id = r.id AND NOT ST_IsEmpty(r.g)
                                    RETURNING 1),
                             gone AS (DELETE FROM %1$s t USING r WHERE t.job_ref = $1 AND t.id = r.id AND ST_IsEmpty(r.g)
                                      RETURNING t.feature_index, t.layer, t.properties, t.geom),
                             q AS (INSERT INTO geoingest_quarantine (job_id, feature_index, layer, rule, reason, properties, geom)
                                   SELECT $3, feature_index, layer, ''collapsed'',
                                          ''no polygonal area left after repair: '' || ST_IsValidReason(geom), properties, geom
                                   FROM gone WHERE $3 <> ''''
                                   ON CONFLICT DO NOTHING)
                        SELECT (SELECT count(*) FROM up), (SELECT count(*) FROM gone)', t)
            INTO repaired, collapsed USING job_ref, bad, coalesce(job_id, '');
        repaired := repaired + collapsed;
    END IF;
    EXECUTE format('SELECT count(*), coalesce(sum(area_m2), 0), coalesce(sum(geoingest_row_hash(feature_index, properties, geom)), 0)::text
                    FROM %s WHERE job_ref = $1', t)
        INTO written, area_m2, features_checksum USING job_ref;
    IF job_ref > 0 THEN
        EXECUTE format('CREATE INDEX ON %s USING gist (geom)', t);
    END IF;
END
$$;

-- geoingest_finish_incoming with job_id: the 0026 function with the
-- quarantine of geoingest_finish_job_table above. SECURITY INVOKER: the
-- temporary table is the session's.
CREATE FUNCTION geoingest_finish_incoming(repair boolean, invalid bigint[], server_check boolean, job_id text,
                                          OUT written bigint, OUT area_m2 double precision,
                                          OUT features_checksum text, OUT repaired bigint,
                                          OUT collapsed bigint)
LANGUAGE plpgsql AS $$
DECLARE
    bad bigint[] := coalesce(invalid, '{}');
    found bigint[];
    first record;
BEGIN
    repaired := 0;
    collapsed := 0;
    IF server_check THEN
        WITH m AS (UPDATE pg_temp.geoingest_incoming i SET area_m2 = ST_Area(i.geom::geography)
                   WHERE i.area_m2 IS NULL RETURNING i.feature_index, i.geom)
        SELECT array_agg(m.feature_index) FILTER (WHERE NOT ST_IsValid(m.geom)) INTO found FROM m;
        bad := bad || coalesce(found, '{}');
    END IF;
    IF cardinality(bad) > 0 THEN
        IF NOT repair THEN
            SELECT i.feature_index, ST_IsValidReason(i.geom) AS reason INTO first FROM pg_temp.geoingest_incoming i
            WHERE i.feature_index = (SELECT min(x) FROM unnest(bad) x) ORDER BY i.id LIMIT 1;
            RAISE EXCEPTION 'feature %: invalid geometry: %', first.feature_index, first.reason
                USING ERRCODE = 'data_exception';
        END IF;
        WITH r AS (SELECT i.id, ST_Multi(ST_CollectionExtract(ST_MakeValid(i.geom), 3)) AS g
                   FROM pg_temp.geoingest_incoming i WHERE i.feature_index = ANY(bad)),
             up AS (UPDATE pg_temp.geoingest_incoming i SET (geom, area_m2) = (r.g, ST_Area(r.g::geography))
                    FROM r WHERE i.id = r.id AND NOT ST_IsEmpty(r.g) RETURNING 1),
             gone AS (DELETE FROM pg_temp.geoingest_incoming i USING r WHERE i.id = r.id AND ST_IsEmpty(r.g)
                      RETURNING i.feature_index, i.layer, i.properties, i.geom),
             q AS (INSERT INTO geoingest_quarantine (job_id, feature_index, layer, rule, reason, properties, geom)
                   SELECT geoingest_finish_incoming.job_id, gone.feature_index, gone.layer, 'collapsed',
                          'no polygonal area left after repair: ' || ST_IsValidReason(gone.geom), gone.properties, gone.geom
                   FROM gone WHERE coalesce(geoingest_finish_incoming.job_id, '') <> ''
                   ON CONFLICT DO NOTHING)
        SELECT (SELECT count(*) FROM up), (SELECT count(*) FROM gone) INTO repaired, collapsed;
        repaired := repaired + collapsed;
    END IF;
    SELECT count(*), coalesce(sum(i.area_m2), 0), coalesce(sum(geoingest_row_hash(i.feature_index, i.properties, i.geom)), 0)::text
    INTO written, area_m2, features_checksum FROM pg_temp.geoingest_incoming i;
END
$$;

DO $$
BEGIN
    EXECUTE format('ALTER FUNCTION geoingest_finish_job_table(text, bigint, boolean, bigint[], boolean, text) SECURITY DEFINER SET search_path = %I, pg_temp', current_schema());
    REVOKE EXECUTE ON FUNCTION geoingest_finish_job_table(text, bigint, boolean, bigint[], boolean, text) FROM PUBLIC;
    IF EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'geoingest_analyst') THEN
        REVOKE EXECUTE ON FUNCTION geoingest_finish_job_table(text, bigint, boolean, bigint[], boolean, text) FROM geoingest_analyst;
    END IF;
    IF EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'geoingest_writer') THEN
        GRANT EXECUTE ON FUNCTION geoingest_finish_job_table(text, bigint, boolean, bigint[], boolean, text) TO geoingest_writer;
        GRANT SELECT, INSERT, DELETE ON geoingest_quarantine TO geoingest_writer;
    END IF;
END
$$;
