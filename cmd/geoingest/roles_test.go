package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/geoingest/geoingest/internal/testsupport/pgtest"
	"github.com/geoingest/geoingest/migrations"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/stretchr/testify/require"
)

// Least privilege (migration 0003): the schema owner migrates; serve,
// ingest and verify run as a LOGIN user in geoingest_writer; reports and
// verify run as one in geoingest_analyst.

var roleCounter atomic.Int64

// leastPrivilegeDB is a database set up as an operator would: owned by a
// LOGIN role that is not a superuser, PostGIS created by a superuser,
// hardened (PUBLIC may not connect or create temporary tables, and gets no
// EXECUTE on the owner's functions), migrated by `geoingest migrate` as
// the owner, with a LOGIN user in each group role.
type leastPrivilegeDB struct {
	admin                  string // superuser, in the database
	owner, writer, analyst string // connection strings of the LOGIN users
	ownerRole              string
	writerRole             string
	analystRole            string
}

func setupLeastPrivilege(t *testing.T) *leastPrivilegeDB {
	t.Helper()
	ctx := context.Background()
	adminPG := pgtest.AdminURL(t)
	sfx := fmt.Sprintf("%d_%d", os.Getpid(), roleCounter.Add(1))
	dbName := "geoingest_roles_" + sfx
	d := &leastPrivilegeDB{ownerRole: "gi_owner_" + sfx, writerRole: "gi_writer_" + sfx, analystRole: "gi_analyst_" + sfx}
	d.admin = userURL(t, adminPG, "", "", dbName)
	d.owner = userURL(t, adminPG, d.ownerRole, "owner-pw", dbName)
	d.writer = userURL(t, adminPG, d.writerRole, "writer-pw", dbName)
	d.analyst = userURL(t, adminPG, d.analystRole, "analyst-pw", dbName)

	execEach(t, adminPG,
		fmt.Sprintf(`CREATE ROLE %s LOGIN PASSWORD 'owner-pw'`, d.ownerRole),
		fmt.Sprintf(`CREATE DATABASE %s OWNER %s`, dbName, d.ownerRole))
	t.Cleanup(func() {
		c, err := pgx.Connect(ctx, adminPG)
		if err != nil {
			return
		}
		defer c.Close(ctx)
		_, _ = c.Exec(ctx, "DROP DATABASE IF EXISTS "+dbName+" WITH (FORCE)")
		for _, r := range []string{d.writerRole, d.analystRole, d.ownerRole} {
			_, _ = c.Exec(ctx, "DROP ROLE IF EXISTS "+r)
		}
	})
	execEach(t, d.admin,
		`CREATE EXTENSION postgis`,
		fmt.Sprintf(`REVOKE ALL ON DATABASE %s FROM PUBLIC`, dbName),
		fmt.Sprintf(`ALTER DEFAULT PRIVILEGES FOR ROLE %s REVOKE EXECUTE ON FUNCTIONS FROM PUBLIC`, d.ownerRole))

	code, out, errOut := run(t, nil, "migrate", "--database-url", d.owner)
	require.Equal(t, 0, code, errOut)
	require.Equal(t, fmt.Sprintf("schema at version %d\n", migrations.Latest()), out)

	// docs/operations.md, "Roles and least privilege": what an operator runs.
	execEach(t, adminPG,
		fmt.Sprintf(`CREATE ROLE %s LOGIN PASSWORD 'writer-pw' IN ROLE geoingest_writer`, d.writerRole),
		fmt.Sprintf(`CREATE ROLE %s LOGIN PASSWORD 'analyst-pw' IN ROLE geoingest_analyst`, d.analystRole))
	return d
}

// userURL is adminURL's server as user (the admin's own user when "") in
// database dbname.
func userURL(t *testing.T, adminURL, user, password, dbname string) string {
	t.Helper()
	cfg, err := pgx.ParseConfig(adminURL)
	require.NoError(t, err)
	if user == "" {
		user, password = cfg.User, cfg.Password
	}
	q := func(s string) string { return "'" + strings.NewReplacer(`\`, `\\`, `'`, `\'`).Replace(s) + "'" }
	return fmt.Sprintf("host=%s port=%d user=%s password=%s dbname=%s sslmode=disable",
		q(cfg.Host), cfg.Port, q(user), q(password), q(dbname))
}

// execEach runs each statement on url, failing the test on any error.
func execEach(t *testing.T, url string, stmts ...string) {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, url)
	require.NoError(t, err)
	defer conn.Close(ctx)
	for _, s := range stmts {
		_, err := conn.Exec(ctx, s)
		require.NoError(t, err, s)
	}
}

// requireRefused runs each statement on url and requires PostgreSQL's
// insufficient_privilege (42501) for every one.
func requireRefused(t *testing.T, url string, stmts ...string) {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, url)
	require.NoError(t, err)
	defer conn.Close(ctx)
	for _, s := range stmts {
		_, err := conn.Exec(ctx, s)
		var pgErr *pgconn.PgError
		require.True(t, errors.As(err, &pgErr), "%s: want permission denied, got %v", s, err)
		require.Equal(t, "42501", pgErr.Code, "%s: %v", s, err)
	}
}

// TestLeastPrivilegeRoles: the writer serves, backfills, ingests a file
// and a replacement version and verifies, and is refused any schema change;
// the analyst runs every report and verify and is refused any write.
func TestLeastPrivilegeRoles(t *testing.T) {
	t.Parallel()
	d := setupLeastPrivilege(t)
	asWriter := map[string]string{"DATABASE_URL": d.writer}
	asAnalyst := map[string]string{"DATABASE_URL": d.analyst}

	// serve as the writer: the local inbox routes admin/ to admin_units.
	inbox := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(inbox, "admin"), 0o755))
	copyWithMtime(t, synthAdmin, filepath.Join(inbox, "admin", "admin.geojson"), time.Now())
	srv := startServe(t, nil, "--inbox", inbox, "--workers", "2", "--database-url", d.writer, "--poll", "100ms", "--settle", "300ms")
	eventually(t, 30*time.Second, "serve to ingest the admin units", func() bool {
		return queryInt(t, d.owner, `SELECT count(*) FROM jobs WHERE target_table = 'admin_units' AND status = 'current'`) == 1
	})
	srv.stop(t)

	// backfill as the writer, over the same directory with one file more:
	// the admin units are skipped (committed), the new file is written.
	copyWithMtime(t, "../../testdata/corpus/montreal_landuse_overpass/export.geojson", filepath.Join(inbox, "montreal.geojson"), time.Now())
	code, out, errOut := run(t, asWriter, "backfill", "--dir", inbox, "--quiet")
	require.Equal(t, 0, code, out+errOut)
	require.EqualValues(t, 1, queryInt(t, d.owner, `SELECT count(*) FROM jobs WHERE target_table = 'parcels' AND status = 'current'`))
	require.EqualValues(t, 2, queryInt(t, d.owner, `SELECT count(*) FROM jobs`))

	// ingest as the writer: a file, then a replacement version of it (the
	// same path, other bytes, newer).
	path := filepath.Join(t.TempDir(), "parcels.geojson")
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	copyWithMtime(t, epinay, path, t0)
	code, out, errOut = run(t, asWriter, "ingest", "--json", path)
	require.Equal(t, 0, code, errOut)
	first := parseLines(t, out)[0]
	require.Equal(t, "written", first.Outcome, first.Error)
	require.EqualValues(t, 4241, first.Features)
	copyWithMtime(t, synthParcels, path, t0.Add(time.Hour))
	code, out, errOut = run(t, asWriter, "ingest", "--json", path)
	// Épinay, then Berlin: the guards hold the version (its extent moved);
	// the writer approves it.
	require.Equal(t, exitPending, code, errOut)
	second := parseLines(t, out)[0]
	require.Equal(t, "pending", second.Outcome, second.Error)
	code, out, errOut = run(t, asWriter, "pending", "approve", second.JobID, "--reason", "the county moved to Berlin")
	require.Equal(t, 0, code, out+errOut)
	require.Contains(t, out, "approved")
	require.EqualValues(t, 10000, second.Features)
	require.EqualValues(t, 1, queryInt(t, d.owner, `SELECT count(*) FROM jobs WHERE job_id = $1 AND status = 'replaced'`, first.JobID))
	require.EqualValues(t, 10000, queryInt(t, d.owner, `SELECT count(*) FROM parcels WHERE job_ref = geoingest_job_ref($1)`, second.JobID))
	require.EqualValues(t, 0, queryInt(t, d.owner, `SELECT count(*) FROM parcels WHERE job_ref = geoingest_job_ref($1)`, first.JobID))
	// A duplicate delivery, stopped at the claim gate.
	code, out, errOut = run(t, asWriter, "ingest", "--json", path)
	require.Equal(t, 0, code, errOut)
	require.Equal(t, "already-present", parseLines(t, out)[0].Outcome)

	code, out, errOut = run(t, asWriter, "verify")
	require.Equal(t, 0, code, out+errOut)
	require.Contains(t, out, "ok: every committed job's features are present exactly once")

	requireRefused(t, d.writer,
		`DROP VIEW parcels`,
		`DROP TABLE geoingest_store.parcels`,
		`DROP TABLE geoingest_store.parcels_shared`,
		`CREATE TABLE geoingest_store.geoingest_probe (x int)`,
		`TRUNCATE geoingest_store.parcels`,
		`ALTER TABLE geoingest_store.parcels_shared OWNER TO CURRENT_USER`,
		`ALTER TABLE jobs ADD COLUMN note text`,
		`ALTER TABLE jobs DROP CONSTRAINT jobs_pkey`,
		`CREATE TABLE geoingest_probe (x int)`,
		`CREATE INDEX ON jobs (source_key)`,
		`DROP VIEW geoingest_current_parcels`,
		`CREATE OR REPLACE FUNCTION geoingest_property(properties jsonb, key text) RETURNS text LANGUAGE sql AS 'SELECT NULL::text'`,
		`UPDATE schema_migrations SET dirty = true`,
		`ALTER TABLE parcels OWNER TO CURRENT_USER`,
		`DROP SCHEMA public CASCADE`)

	// The analyst: every report function and view, as SQL, gives what the
	// owner gets; `report area` matches the oracle; verify and jobs work.
	for _, q := range []string{
		`SELECT coalesce(geoingest_newest_pipeline_version(), '')`,
		`SELECT string_agg(format('%s %s %s', admin_unit, parcels, round(area_m2)), ',' ORDER BY admin_unit) FROM geoingest_area_by_point_on_surface()`,
		`SELECT string_agg(format('%s %s %s', admin_unit, parcels, round(area_m2)), ',' ORDER BY admin_unit) FROM geoingest_area_by_intersection('name', '1')`,
		`SELECT format('%s %s', count(*), round(sum(ST_Area(geom::geography)))) FROM geoingest_current_parcels`,
		`SELECT format('%s %s', count(*), string_agg(DISTINCT pipeline_version, ',')) FROM geoingest_current_admin_units`,
		`SELECT count(*)::text FROM geoingest_current_parcels WHERE geoingest_property(properties, 'PARCEL_ID') LIKE 'BE-%'`,
		`SELECT format('%s %s', count(*), round(sum(area_m2))) FROM parcels`,
		`SELECT format('%s %s', count(*), round(sum(area_m2))) FROM admin_units WHERE geom && ST_MakeEnvelope(-180, -90, 180, 90, 4326)`,
	} {
		want := queryString(t, d.owner, q)
		require.NotEmpty(t, want, q)
		require.Equal(t, want, queryString(t, d.analyst, q), q)
	}
	var oracle struct {
		ByPointOnSurface []oracleRow `json:"by_point_on_surface"`
		ByIntersection   []oracleRow `json:"by_intersection"`
	}
	b, err := os.ReadFile(synthOracle)
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(b, &oracle))
	for method, want := range map[string][]oracleRow{"point-on-surface": oracle.ByPointOnSurface, "intersection": oracle.ByIntersection} {
		code, out, errOut := run(t, asAnalyst, "report", "area", "--method", method, "--format", "json")
		require.Equal(t, 0, code, errOut)
		var rep struct {
			Rows []reportRow `json:"rows"`
		}
		require.NoError(t, json.Unmarshal([]byte(out), &rep))
		requireMatchesOracle(t, want, rep.Rows)
	}
	code, out, errOut = run(t, asAnalyst, "verify")
	require.Equal(t, 0, code, out+errOut)
	require.Contains(t, out, "ok: every committed job's features are present exactly once")
	code, out, errOut = run(t, asAnalyst, "jobs", "list")
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, second.JobID[:12])

	requireRefused(t, d.analyst,
		`INSERT INTO jobs (job_id, source_bucket, source_key, version_token, params, pipeline, pipeline_version, target_table, status, content_hash)
		 VALUES (repeat('a', 64), 'b', 'k', 'v', '{}', 'p', '1', 'parcels', 'current', 'h')`,
		`UPDATE jobs SET feature_count = 0`,
		`DELETE FROM jobs`,
		`INSERT INTO parcels (job_ref, feature_index, geom) VALUES (-1, 0, 'SRID=4326;MULTIPOLYGON(((0 0,1 0,1 1,0 0)))')`,
		`UPDATE parcels SET layer = 'x'`,
		`DELETE FROM parcels`,
		`UPDATE claims SET state = 'FAILED'`,
		`UPDATE sources SET current_job_id = NULL`,
		`TRUNCATE geoingest_store.parcels`,
		`DROP VIEW parcels`,
		`DROP TABLE geoingest_store.parcels`,
		`SELECT count(*) FROM geoingest_store.parcels`,
		`SELECT count(*) FROM geoingest_store.admin_units_shared`)
	// And ingest as the analyst fails at the claim gate, writing nothing.
	code, _, errOut = run(t, asAnalyst, "ingest", epinay)
	require.Equal(t, 1, code)
	require.Contains(t, errOut, "permission denied")
	require.EqualValues(t, 3, queryInt(t, d.owner, `SELECT count(*) FROM jobs WHERE target_table = 'parcels'`))

	requireCatalogLeastPrivilege(t, d)
}

// requireCatalogLeastPrivilege checks every object the owner has in the
// schema, so that tables and functions of later migrations are covered
// too: the writer reads and writes every table but schema_migrations
// (which it only reads), the analyst only reads, both execute every
// function (but a SECURITY DEFINER one, which only the writer may run and
// which must pin its search_path), and neither owns anything or may
// create anything.
func requireCatalogLeastPrivilege(t *testing.T, d *leastPrivilegeDB) {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, d.admin)
	require.NoError(t, err)
	defer conn.Close(ctx)
	rows, err := conn.Query(ctx, `
		SELECT c.relname, c.relkind::text,
		       has_table_privilege($2, c.oid, 'SELECT'), has_table_privilege($2, c.oid, 'INSERT'),
		       has_table_privilege($2, c.oid, 'UPDATE'), has_table_privilege($2, c.oid, 'DELETE'),
		       has_table_privilege($2, c.oid, 'TRUNCATE'),
		       has_table_privilege($3, c.oid, 'SELECT'),
		       has_table_privilege($3, c.oid, 'INSERT') OR has_table_privilege($3, c.oid, 'UPDATE')
		         OR has_table_privilege($3, c.oid, 'DELETE') OR has_table_privilege($3, c.oid, 'TRUNCATE'),
		       pg_has_role($2, c.relowner, 'USAGE') OR pg_has_role($3, c.relowner, 'USAGE')
		FROM pg_class c
		WHERE c.relnamespace = 'public'::regnamespace AND c.relkind IN ('r', 'p', 'v', 'm')
		  AND c.relowner = $1::regrole`, d.ownerRole, d.writerRole, d.analystRole)
	require.NoError(t, err)
	seen := map[string]bool{}
	for rows.Next() {
		var name, kind string
		var wSel, wIns, wUpd, wDel, wTrunc, aSel, aWrite, owns bool
		require.NoError(t, rows.Scan(&name, &kind, &wSel, &wIns, &wUpd, &wDel, &wTrunc, &aSel, &aWrite, &owns))
		seen[name] = true
		require.False(t, owns, "%s: a runtime role owns it", name)
		require.True(t, wSel, "%s: the writer may not read it", name)
		require.True(t, aSel, "%s: the analyst may not read it", name)
		require.False(t, aWrite, "%s: the analyst may write it", name)
		require.False(t, wTrunc, "%s: the writer may truncate it", name)
		if kind == "r" || kind == "p" {
			want := name != "schema_migrations"
			require.Equal(t, want, wIns && wUpd && wDel, "%s: the writer's INSERT, UPDATE, DELETE", name)
			if !want {
				require.False(t, wIns || wUpd || wDel, "%s: the writer may write it", name)
			}
		}
	}
	require.NoError(t, rows.Err())
	for _, name := range []string{"jobs", "claims", "sources", "parcels", "admin_units", "schema_migrations",
		"geoingest_current_parcels", "geoingest_current_admin_units"} {
		require.True(t, seen[name], "%s not checked", name)
	}

	// SECURITY DEFINER functions run with the owner's rights: each must
	// pin its search_path, and the analyst may not run it, unless it is
	// STABLE (PostgreSQL refuses a write in it): a read of what only the
	// owner may name, as a view is (geoingest_history_rows, migration
	// 0046).
	fns, err := conn.Query(ctx, `
		SELECT p.oid::regprocedure::text, p.prosecdef AND p.provolatile = 'v', p.prosecdef,
		       has_function_privilege($2, p.oid, 'EXECUTE'), has_function_privilege($3, p.oid, 'EXECUTE'),
		       EXISTS (SELECT FROM unnest(p.proconfig) c WHERE c LIKE 'search\_path=%')
		FROM pg_proc p
		WHERE p.pronamespace = 'public'::regnamespace AND p.proowner = $1::regrole
		  AND NOT EXISTS (SELECT FROM pg_depend d WHERE d.classid = 'pg_proc'::regclass AND d.objid = p.oid AND d.deptype = 'e')`,
		d.ownerRole, d.writerRole, d.analystRole)
	require.NoError(t, err)
	functions := 0
	for fns.Next() {
		var name string
		var definer, anyDefiner, wExec, aExec, pinned bool
		require.NoError(t, fns.Scan(&name, &definer, &anyDefiner, &wExec, &aExec, &pinned))
		functions++
		require.True(t, wExec, "%s: the writer may not execute it", name)
		if anyDefiner {
			require.True(t, pinned, "%s: SECURITY DEFINER without SET search_path", name)
		}
		switch {
		case definer:
			require.False(t, aExec, "%s: SECURITY DEFINER and executable by the analyst", name)
		case !anyDefiner:
			require.True(t, aExec, "%s: the analyst may not execute it", name)
		}
	}
	require.NoError(t, fns.Err())
	require.GreaterOrEqual(t, functions, 6, "the functions of 0001 and 0002")

	var canCreate bool
	require.NoError(t, conn.QueryRow(ctx, `
		SELECT has_schema_privilege($1, 'public', 'CREATE') OR has_schema_privilege($2, 'public', 'CREATE')
		    OR has_schema_privilege($1, 'geoingest_store', 'CREATE') OR has_schema_privilege($2, 'geoingest_store', 'CREATE')
		    OR has_database_privilege($1, current_database(), 'CREATE') OR has_database_privilege($2, current_database(), 'CREATE')`,
		d.writerRole, d.analystRole).Scan(&canCreate))
	require.False(t, canCreate, "a runtime role may create schemas or objects")

	// The storage schema (0014): the writer COPYs into its partitions and
	// may use it; the analyst has no right there at all, and reads the
	// views of the public schema.
	var wUsage, aUsage bool
	require.NoError(t, conn.QueryRow(ctx, `SELECT has_schema_privilege($1, 'geoingest_store', 'USAGE'), has_schema_privilege($2, 'geoingest_store', 'USAGE')`,
		d.writerRole, d.analystRole).Scan(&wUsage, &aUsage))
	require.True(t, wUsage, "the writer may not use geoingest_store")
	require.False(t, aUsage, "the analyst may use geoingest_store")
	stored, err := conn.Query(ctx, `
		SELECT c.relname,
		       has_table_privilege($2, c.oid, 'SELECT') AND has_table_privilege($2, c.oid, 'INSERT')
		         AND has_table_privilege($2, c.oid, 'UPDATE') AND has_table_privilege($2, c.oid, 'DELETE'),
		       has_table_privilege($2, c.oid, 'TRUNCATE'),
		       has_table_privilege($3, c.oid, 'SELECT') OR has_table_privilege($3, c.oid, 'INSERT')
		         OR has_table_privilege($3, c.oid, 'UPDATE') OR has_table_privilege($3, c.oid, 'DELETE'),
		       pg_has_role($2, c.relowner, 'USAGE') OR pg_has_role($3, c.relowner, 'USAGE')
		FROM pg_class c
		WHERE c.relnamespace = 'geoingest_store'::regnamespace AND c.relkind IN ('r', 'p') AND c.relowner = $1::regrole`,
		d.ownerRole, d.writerRole, d.analystRole)
	require.NoError(t, err)
	seen = map[string]bool{}
	for stored.Next() {
		var name string
		var wWrite, wTrunc, aAny, owns bool
		require.NoError(t, stored.Scan(&name, &wWrite, &wTrunc, &aAny, &owns))
		seen[name] = true
		require.True(t, wWrite, "geoingest_store.%s: the writer may not read and write it", name)
		require.False(t, wTrunc, "geoingest_store.%s: the writer may truncate it", name)
		require.False(t, aAny, "geoingest_store.%s: the analyst has a right on it", name)
		require.False(t, owns, "geoingest_store.%s: a runtime role owns it", name)
	}
	require.NoError(t, stored.Err())
	for _, name := range []string{"parcels", "parcels_shared", "admin_units", "admin_units_shared"} {
		require.True(t, seen[name], "geoingest_store.%s not checked", name)
	}
}

// TestLeastPrivilegeSchemaBehind: a runtime command run by the writer on
// a schema that is behind does not migrate and says who must.
func TestLeastPrivilegeSchemaBehind(t *testing.T) {
	t.Parallel()
	d := setupLeastPrivilege(t)
	latest := migrations.Latest()
	behind := latest - 1 // the migration before the latest
	for behind > 0 && !migrationEmbedded(behind) {
		behind--
	}
	execEach(t, d.admin, fmt.Sprintf(`UPDATE schema_migrations SET version = %d`, behind))
	code, _, errOut := run(t, map[string]string{"DATABASE_URL": d.writer}, "verify")
	require.Equal(t, 1, code)
	require.Contains(t, errOut, fmt.Sprintf("schema is at version %d, need %d: run geoingest migrate as the schema owner", behind, latest))
	code, _, errOut = run(t, nil, "migrate", "--database-url", d.analyst)
	require.Equal(t, 1, code)
	require.Contains(t, errOut, "migrations run as the schema owner")
	require.EqualValues(t, behind, queryInt(t, d.admin, `SELECT version FROM schema_migrations WHERE NOT dirty`),
		"the failed attempts left the version as it was")
}

// migrationEmbedded reports whether migrations/ has version v (the
// numbers may have gaps while branches land).
func migrationEmbedded(v uint) bool {
	m, _ := filepath.Glob(fmt.Sprintf("../../migrations/%04d_*.up.sql", v))
	return len(m) > 0
}

// TestRolesMigrationDownUp: 0003's down file revokes what its up file
// granted on the relations it names, and the up file can run again (roles
// already there). Relations of later migrations, and the default
// privileges of 0014's geoingest_store, are theirs to grant.
func TestRolesMigrationDownUp(t *testing.T) {
	t.Parallel()
	db := pgtest.NewDB(t)
	up, err := os.ReadFile("../../migrations/0003_roles.up.sql")
	require.NoError(t, err)
	down, err := os.ReadFile("../../migrations/0003_roles.down.sql")
	require.NoError(t, err)
	grants := func() int64 {
		return queryInt(t, db, `
			SELECT (SELECT count(*) FROM pg_class c, unnest(ARRAY['geoingest_writer', 'geoingest_analyst']) r
			        WHERE c.relnamespace = 'public'::regnamespace
			          AND c.relname IN ('jobs', 'claims', 'sources', 'parcels', 'admin_units', 'schema_migrations',
			                            'geoingest_current_parcels', 'geoingest_current_admin_units')
			          AND has_table_privilege(r, c.oid, 'SELECT'))
			     + (SELECT count(*) FROM pg_default_acl d, aclexplode(d.defaclacl) a
			        WHERE d.defaclnamespace = 'public'::regnamespace
			          AND a.grantee IN ('geoingest_writer'::regrole, 'geoingest_analyst'::regrole))`)
	}
	before := grants()
	require.Positive(t, before)
	execEach(t, db, string(down))
	require.Zero(t, grants())
	execEach(t, db, string(up), string(up))
	require.Equal(t, before, grants())
}

// copyWithMtime writes src's bytes to dst with modification time mtime.
func copyWithMtime(t *testing.T, src, dst string, mtime time.Time) {
	t.Helper()
	b, err := os.ReadFile(src)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(dst, b, 0o644))
	require.NoError(t, os.Chtimes(dst, mtime, mtime))
}

func queryString(t *testing.T, db, sql string) string {
	t.Helper()
	conn, err := pgx.Connect(context.Background(), db)
	require.NoError(t, err)
	defer conn.Close(context.Background())
	var s *string
	require.NoError(t, conn.QueryRow(context.Background(), sql).Scan(&s), sql)
	if s == nil {
		return ""
	}
	return *s
}
