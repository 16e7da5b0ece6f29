package main

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/geoingest/geoingest/ingest"
	"github.com/geoingest/geoingest/ingest/postgis"
)

func init() {
	register(&command{name: "schema", summary: "check a typed schema file, or apply it: create or extend the typed views", run: runSchema})
}

// runSchema is `geoingest schema check|apply --schema FILE`
// (docs/schema.md): check parses the file and lists its targets' columns
// and its mappings; apply also creates or extends the views
// geoingest_typed_<target>, adding columns only (online: no row is
// rewritten).
func runSchema(ctx context.Context, m *Main, args []string) error {
	sub := ""
	if len(args) > 0 && (args[0] == "check" || args[0] == "apply") {
		sub, args = args[0], args[1:]
	}
	fs := m.flagSet("schema", "check|apply --schema FILE")
	var d dbFlags
	m.addDBFlags(fs, &d)
	file := fs.String("schema", m.Getenv("GEOINGEST_SCHEMA"), "the typed schema file (YAML or JSON; env GEOINGEST_SCHEMA)")
	if err := parse(fs, args); err != nil {
		return err
	}
	if sub == "" || fs.NArg() != 0 || *file == "" {
		fs.Usage()
		return errUsage
	}
	s, err := ingest.LoadSchema(*file)
	if err != nil {
		return err
	}
	for _, t := range s.TargetNames() {
		cols := make([]string, len(s.Targets[t].Columns))
		for i, c := range s.Targets[t].Columns {
			cols[i] = c.Name + " " + c.Type
		}
		fmt.Fprintf(m.Stdout, "target %s: %s\n", t, strings.Join(cols, ", "))
	}
	for i := range s.Mappings {
		mp := &s.Mappings[i]
		cols, from := mp.Columns(), mp.SourceFields()
		each := make([]string, len(cols))
		for j, c := range cols {
			f := from[j]
			if f == "" || strings.ContainsAny(f, " ,\"\t\n") {
				f = strconv.Quote(f)
			}
			each[j] = c.Name + " from " + f
		}
		if len(each) == 0 {
			each = []string{"no columns"}
		}
		fmt.Fprintf(m.Stdout, "mapping %s -> %s: %s\n", mp.Name, mp.Target, strings.Join(each, ", "))
	}
	if sub == "check" {
		return nil
	}
	a, err := m.open(ctx, &d, nil)
	if err != nil {
		return err
	}
	defer a.Close()
	st, ok := a.store.(*postgis.Store)
	if !ok {
		return errors.New("this store has no typed views")
	}
	views, err := st.ApplySchema(ctx, s)
	for _, v := range views {
		fmt.Fprintf(m.Stdout, "view %s: applied\n", v)
	}
	return err
}
