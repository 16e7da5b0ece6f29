package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/geoingest/geoingest/ingest"
	"github.com/geoingest/geoingest/ingest/inspect"
	"github.com/geoingest/geoingest/ingest/localfs"
	ingests3 "github.com/geoingest/geoingest/ingest/s3"
	"github.com/geoingest/geoingest/internal/awserr"
)

func init() {
	register(&command{name: "inspect", summary: "describe an upload before it is made: layers, CRS, checks, job key, route (no database)", run: runInspect})
}

// runInspect is the preflight: it reads a local file, or downloads an S3
// object into a temporary file, and prints what geoingest would do with
// it (package inspect). Exit status 0 when it would land, 1 when it would
// be refused (the reason is printed), 2 on a usage error.
func runInspect(ctx context.Context, m *Main, args []string) error {
	fs := m.flagSet("inspect", "[flags] PATH|s3://BUCKET/KEY")
	var p paramFlags
	m.addParamFlags(fs, &p)
	asJSON := fs.Bool("json", false, "print one JSON object")
	check := fs.Bool("check", false, "check every feature: invalid polygons (GEOS), null and non-polygonal geometries")
	suggest := fs.Bool("suggest-schema", false, "print the typed schema (YAML) the file's values suggest, losslessly: leading zeros stay text, whole numbers int8, decimals numeric (docs/schema.md)")
	var routes listFlag
	fs.Var(&routes, "route", "[BUCKET:]PREFIX=TARGET[+deletes][?OPTION=VALUE&...], repeatable, as serve's (env GEOINGEST_ROUTES); for s3:// the default is serve's (parcels/=parcels, admin/=admin_units); for a local file, routes are matched only when given, against --object-key or the path as given")
	// --key is the source's key, as ingest's and backfill's (the job
	// key then is theirs): inspect says what it finds in each layer. The
	// object key, which --key was before, is --object-key.
	m.addMatchFlags(fs, &p)
	key := fs.String("object-key", "", "for a local file: the object key it would be uploaded under, to match the routes against")
	pathStyle := fs.String("s3-path-style", "auto", "path-style S3 requests: true, false, or auto (true when AWS_ENDPOINT_URL_S3 is set)")
	var awsf awsFlags
	m.addAWSFlags(fs, &awsf)
	var lf limitFlags
	m.addLimitFlags(fs, &lf)
	if err := parse(fs, args); err != nil {
		return err
	}
	limits, err := lf.limits()
	if err != nil {
		return m.badParams("inspect", err) // a bad flag value: exit 2
	}
	if fs.NArg() != 1 {
		fs.Usage()
		return errUsage
	}
	target := fs.Arg(0)
	params := p.params()
	if p.schemaErr != nil {
		return p.schemaErr
	}
	if err := params.Validate(); err != nil {
		// A flag's value the job cannot take: a usage error.
		return m.badParams("inspect", err)
	}
	specs := []string(routes)
	if len(specs) == 0 && m.Getenv("GEOINGEST_ROUTES") != "" {
		specs = []string{m.Getenv("GEOINGEST_ROUTES")}
	}
	s3URL := strings.HasPrefix(target, "s3://")
	if len(specs) == 0 && s3URL {
		specs = defaultQueueRoutes
	}

	// The job is made by the planner every path shares; the routes, when
	// there are any, only say which one the upload would follow (or why
	// it would be filtered): the job is described either way.
	plan := &ingest.Planner{Params: params}
	var ev ingest.Event
	path := ""
	if s3URL {
		bucket, objKey, ok := strings.Cut(strings.TrimPrefix(target, "s3://"), "/")
		if !ok || bucket == "" || objKey == "" {
			return fmt.Errorf("%s: want s3://BUCKET/KEY", target)
		}
		if err := awsf.validate(); err != nil {
			return err
		}
		awsCfg, err := m.loadAWSConfig(ctx, awsf)
		if err != nil {
			return fmt.Errorf("aws config (check AWS_PROFILE, AWS_CONFIG_FILE and AWS_SHARED_CREDENTIALS_FILE): %w", err)
		}
		client := m.newS3Client(awsCfg, *pathStyle)
		if ev, err = headForInspect(ctx, awsCfg, client, bucket, objKey); err != nil {
			return err
		}
		plan.Objects = ingests3.Objects{Client: client, DownloadTimeout: awsf.downloadTimeout}
	} else {
		k := *key
		if k == "" {
			k = filepath.ToSlash(filepath.Clean(target))
		}
		size := int64(-1) // gone: Files.Source says so
		if st, err := os.Stat(target); err == nil {
			size = st.Size()
		}
		ev = ingest.Event{Name: "ObjectCreated:Put", Bucket: ingest.LocalBucket, Key: k, RawKey: k, Size: size}
		plan.Files, path = localfs.Files{}, target
	}

	o := inspect.Options{Check: *check, Limits: limits, Suggest: *suggest}
	if len(specs) > 0 {
		rs, err := ingest.ParseRoutes(specs)
		if err != nil {
			return m.badParams("inspect", err) // a usage error, exit 2, as serve's
		}
		plan.Router = ingest.NewRouter(rs, nil)
	}
	it := plan.Event(ev, path)
	if it.Routed {
		o.Route = it.Route.String()
	}
	o.Filtered = it.Filtered
	plan.Resolve(ctx, &it, true)
	if it.Err != nil {
		return it.Err
	}
	job := it.Job
	rep, err := inspect.Run(ctx, job, "", o)
	if err != nil {
		if errors.Is(err, ingest.ErrIncompleteShapefile) {
			// serve waits for the missing part and then gives up;
			// inspect looks once, so say what to do instead.
			return fmt.Errorf("%s: upload it beside the main file, with the same name before the extension, then inspect again",
				strings.TrimSuffix(err.Error(), " (gave up waiting)"))
		}
		return err
	}
	if *suggest && !*asJSON {
		name := strings.TrimSuffix(filepath.Base(target), filepath.Ext(target))
		fmt.Fprint(m.Stdout, inspect.SuggestSchema(rep, name))
		if rep.Refusal != "" {
			fmt.Fprintf(m.Stderr, "geoingest inspect: %s\n", rep.Refusal)
			return exitError(1)
		}
		return nil
	}
	if *asJSON {
		enc := jsonEncoder(m.Stdout)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(rep); err != nil {
			return err
		}
	} else {
		printInspection(m.Stdout, rep)
	}
	if rep.Refusal != "" || rep.Filtered != "" {
		return exitError(1)
	}
	return nil
}

// headForInspect is ingests3.Head with errors a person can act on: no
// credentials at all (the SDK's message is about its last provider, the
// instance metadata service), access denied (HEAD has no body, so S3 says
// only "Forbidden"), and a missing bucket told from a missing key.
func headForInspect(ctx context.Context, cfg aws.Config, client *s3.Client, bucket, key string) (ingest.Event, error) {
	url := "s3://" + bucket + "/" + key
	if cfg.Credentials == nil {
		return ingest.Event{}, fmt.Errorf("%s: %s", url, noCredentials)
	}
	if _, err := cfg.Credentials.Retrieve(ctx); err != nil {
		return ingest.Event{}, fmt.Errorf("%s: %s (%v)", url, noCredentials, err)
	}
	ev, err := ingests3.Head(ctx, client, bucket, key)
	if err == nil {
		return ev, nil
	}
	if awserr.Status(err) == 403 {
		return ingest.Event{}, fmt.Errorf("%s: access denied (HTTP 403): the credentials are not valid for this endpoint, or do not allow s3:GetObject on the object (without s3:ListBucket on the bucket, a missing object is a 403 too)", url)
	}
	if errors.Is(err, ingests3.ErrNoSuchObject) {
		if _, berr := client.HeadBucket(ctx, &s3.HeadBucketInput{Bucket: &bucket}); berr != nil && awserr.Status(berr) == 404 {
			return ingest.Event{}, fmt.Errorf("%s: no such bucket %q", url, bucket)
		}
	}
	return ingest.Event{}, err
}

// noCredentials is what to do when the AWS SDK finds no credentials.
const noCredentials = "no AWS credentials found: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or AWS_PROFILE (a profile of ~/.aws/credentials or ~/.aws/config), or run where an IAM role provides them"

// printInspection writes the report for a person.
func printInspection(w io.Writer, r *inspect.Report) {
	fmt.Fprintf(w, "source    %s (%d bytes, sha256 %s)\n", r.Source, r.Bytes, r.SHA256)
	fmt.Fprintf(w, "job key   %s (version %s)\n", r.JobKey, r.VersionToken)
	switch {
	case r.Filtered != "":
		fmt.Fprintf(w, "route     none: the trigger gate would drop it (%s), so no job\n", r.Filtered)
	case r.Route != "":
		fmt.Fprintf(w, "route     %s: table %s\n", r.Route, r.Target)
	default:
		fmt.Fprintf(w, "target    %s (no route: as geoingest ingest)\n", r.Target)
	}
	keys := make([]string, 0, len(r.Params))
	for k := range r.Params {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var ps []string
	for _, k := range keys {
		switch v := r.Params[k].(type) {
		case string, bool, int, int64, float64, json.Number:
			ps = append(ps, fmt.Sprintf("%s=%v", k, v))
		default:
			// A mapping's spec, a composite key: as JSON, as the job
			// key hashes it, not Go's map[...].
			var b strings.Builder
			enc := json.NewEncoder(&b)
			enc.SetEscapeHTML(false)
			if err := enc.Encode(v); err != nil {
				ps = append(ps, fmt.Sprintf("%s=%v", k, v))
				continue
			}
			ps = append(ps, k+"="+strings.TrimSuffix(b.String(), "\n"))
		}
	}
	fmt.Fprintf(w, "params    %s\n", strings.Join(ps, " "))
	for _, l := range r.Layers {
		fmt.Fprintf(w, "\nlayer %q (%s", l.Name, l.Format)
		if l.Encoding != "" {
			fmt.Fprintf(w, ", %s", l.Encoding)
		}
		fmt.Fprintln(w, ")")
		switch {
		case l.NotRead != "":
			fmt.Fprintf(w, "  not read  %s\n", l.NotRead)
		case l.Reason != "":
			fmt.Fprintf(w, "  job       %s: %s\n", l.Action, l.Reason)
		default:
			fmt.Fprintf(w, "  job       %s\n", l.Action)
		}
		fmt.Fprintf(w, "  features  %d\n", l.Features)
		var gt []string
		for t, n := range l.GeometryTypes {
			gt = append(gt, fmt.Sprintf("%s %d", t, n))
		}
		sort.Strings(gt)
		if len(gt) == 0 {
			gt = []string{"no features"}
		}
		fmt.Fprintf(w, "  geometry  %s (%s)\n", l.GeometryType, strings.Join(gt, ", "))
		c := l.CRS
		switch {
		case (c.Method == "none" || c.Method == "refused") && c.Refusal != "":
			fmt.Fprintf(w, "  crs       %s: %s\n", c.Method, c.Refusal)
		case c.Method == "none":
			fmt.Fprintln(w, "  crs       none")
		case c.Method == "custom":
			fmt.Fprintf(w, "  crs       custom %q (registered in spatial_ref_sys on first use)\n", c.Name)
		case c.Method == "identified":
			fmt.Fprintf(w, "  crs       EPSG:%d %q (identified, %d %%)\n", c.EPSG, c.Name, c.Confidence)
		default:
			fmt.Fprintf(w, "  crs       EPSG:%d %q (%s)\n", c.EPSG, c.Name, c.Method)
		}
		if c.Transformation != "" {
			fmt.Fprintf(w, "  to WGS 84 %s\n", c.Transformation)
		}
		if c.Better != nil {
			fmt.Fprintf(w, "  better    %s: %s\n", c.Better, c.BetterFix)
		}
		if l.Extent != nil {
			fmt.Fprintf(w, "  extent    %g %g, %g %g (%s)\n", l.Extent[0], l.Extent[1], l.Extent[2], l.Extent[3], l.ExtentCRS)
		}
		var fl []string
		for _, f := range l.Fields {
			fl = append(fl, f.Name+" "+f.Type)
		}
		fmt.Fprintf(w, "  fields    %s\n", strings.Join(fl, ", "))
		for _, f := range l.MappedFieldsMissing {
			fmt.Fprintf(w, "  mapping   field %s (column %s) is in no feature: %s would be NULL in every row, and the drift guard would hold the next version\n", f.Field, f.Column, f.Column)
		}
		if len(l.CandidateKeys) > 0 {
			fmt.Fprintf(w, "  keys      %s (unique and present in all of the first %d features: candidates for --key)\n", strings.Join(l.CandidateKeys, ", "), l.CandidateKeysOf)
		}
		if k := l.Key; k != nil {
			s := fmt.Sprintf("  key       %s: %d features with a key, %d without (a field missing, null or empty), %d sharing their value with another (the key matches them with nothing)",
				strings.Join(k.Fields, "|"), k.Keyed, k.Unkeyed, k.Duplicates)
			if len(k.FieldsMissing) > 0 {
				s += fmt.Sprintf("; in no feature: %s", strings.Join(k.FieldsMissing, ", "))
			}
			fmt.Fprintln(w, s)
		}
		if l.GeometryField != "" {
			fmt.Fprintf(w, "  geometry  field %q (the layer has several)\n", l.GeometryField)
		}
		if l.LinearisedCurves > 0 || l.DroppedZM > 0 {
			fmt.Fprintf(w, "  changed   %d with curves linearised, %d with Z/M dropped\n", l.LinearisedCurves, l.DroppedZM)
		}
		if l.Check != nil {
			fmt.Fprintf(w, "  check     %d invalid, %d null, %d non-polygonal\n", l.Check.Invalid, l.Check.Null, l.Check.NonPolygonal)
			if l.Check.Cast > 0 {
				fmt.Fprintf(w, "  cast      %d would not cast (quarantined, rule cast); the first: %s\n", l.Check.Cast, l.Check.CastFirst)
			}
		}
	}
	fmt.Fprintln(w)
	switch {
	case r.Refusal != "":
		fmt.Fprintf(w, "refused: %s\n", r.Refusal)
	case r.Filtered != "":
		fmt.Fprintln(w, "no job: no route takes it")
	default:
		fmt.Fprintln(w, "would land")
	}
}
