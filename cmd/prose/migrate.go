package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/proserun/prose/store/backend"
)

func newMigrateCmd() *cobra.Command {
	var d dataFlags
	cmd := &cobra.Command{
		Use:   "migrate",
		Short: "Apply the database migrations to a data directory or PostgreSQL database",
		Long: `Apply the database migrations that are not applied yet and print the schema
version. 'prose serve' and the other commands that open a store migrate it
too; run this first to migrate a PostgreSQL database before replicas start.`,
		Example: "  prose migrate --data ./prose-data\n  prose migrate --database postgres://prose@db/prose",
		Args:    noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			v, err := backend.Migrate(cmd.Context(), d.target())
			if err != nil {
				return &exitError{code: exitFailed, err: err}
			}
			fmt.Fprintf(cmd.OutOrStdout(), "schema version %d\n", v)
			return nil
		},
	}
	d.register(cmd.Flags())
	return cmd
}
