-- geoingest schema, version 4: the CRS of every upload, resolved with PROJ.
--
-- Privileges (migration 0003, on branches that have it): both tables take
-- the default privileges 0003 sets for tables the owner creates later
-- (geoingest_writer reads and writes them, geoingest_analyst reads them),
-- and 0003 grants the writer INSERT on spatial_ref_sys, which registering a
-- CRS needs. Nothing here needs a grant of its own.
--
-- custom_crs holds the CRSs geoingest registered in spatial_ref_sys, so
-- that ST_Transform in the write gate uses them by SRID like any other:
-- CRSs with no EPSG equivalent (a custom Lambert conformal conic, a
-- Robinson world map, ...; auth_name 'GEOINGEST', epsg NULL), and EPSG CRSs
-- that PROJ knows but PostGIS's older spatial_ref_sys lacks (auth_name
-- 'EPSG', so PostGIS builds them from PROJ's database by code). Their
-- SRIDs are in geoingest's range 990000-998999 (PostGIS allows user SRIDs
-- up to 998999). A definition is registered once: definition_sha256 is the
-- SHA-256 of the WKT PROJ writes for it (or of "EPSG:n"), so identical
-- definitions share one SRID, and two workers registering one at the same
-- moment serialise on an advisory lock (see query/crs.sql).
CREATE TABLE custom_crs (
    srid              integer PRIMARY KEY CHECK (srid BETWEEN 990000 AND 998999),
    definition_sha256 text NOT NULL UNIQUE,
    epsg              integer,
    name              text NOT NULL,
    srtext            text NOT NULL,
    proj4text         text NOT NULL,
    created_at        timestamptz NOT NULL DEFAULT now()
);

-- job_crs records, for each layer of a written job, which CRS it was read
-- in and how geoingest found it. It is written in the write-gate
-- transaction, so a job has rows here if and only if it was written.
--   method: authority (the file names its EPSG code), identified (PROJ
--   found an equivalent EPSG CRS, with confidence 0-100), custom (no EPSG
--   equivalent: the file's definition, registered under srid), override
--   (--source-srid), default (GeoJSON without crs: EPSG:4326), none.
CREATE TABLE job_crs (
    job_id         text NOT NULL REFERENCES jobs (job_id) ON DELETE CASCADE,
    layer          text NOT NULL,
    method         text NOT NULL CHECK (method IN ('authority', 'identified', 'custom', 'override', 'default', 'none')),
    srid           integer NOT NULL,
    epsg           integer,
    confidence     integer CHECK (confidence BETWEEN 0 AND 100),
    crs_name       text NOT NULL DEFAULT '',
    definition     text NOT NULL DEFAULT '',
    transformation text NOT NULL DEFAULT '',
    source_text    text NOT NULL DEFAULT '',
    PRIMARY KEY (job_id, layer)
);
