package main

import (
	"context"
	"flag"
	"fmt"
	"io"

	"github.com/proserun/prose/store/backend"
)

func init() {
	register("migrate", command{summary: "apply the database migrations", run: migrateCmd})
}

func migrateCmd(ctx context.Context, args []string, _ io.Reader, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("migrate", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var data, database string
	fs.StringVar(&data, "data", "./prose-data", "data directory of the embedded SQLite database")
	fs.StringVar(&database, "database", "", "a postgres://… URL; overrides --data")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "migrate: unexpected argument %q\n", fs.Arg(0))
		return 2
	}
	v, err := backend.Migrate(ctx, target(data, database))
	if err != nil {
		fmt.Fprintf(stderr, "migrate: %v\n", err)
		return 1
	}
	fmt.Fprintf(stdout, "schema version %d\n", v)
	return 0
}
