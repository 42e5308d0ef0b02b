package main

import (
	"encoding/json"
	"fmt"
	"runtime"
	"runtime/debug"

	"github.com/spf13/cobra"

	"github.com/proserun/prose/server"
)

// buildVersion is what `prose version` prints: the module version (or the
// -X set server.Version), the commit and the Go version, from the build
// information Go records in the binary.
type buildVersion struct {
	Version   string `json:"version"`
	Commit    string `json:"commit"`
	Modified  bool   `json:"modified,omitempty"`
	GoVersion string `json:"go_version"`
	Platform  string `json:"platform"`
}

func readBuildVersion() buildVersion {
	v := buildVersion{Version: server.Version, Commit: "unknown", GoVersion: runtime.Version(), Platform: runtime.GOOS + "/" + runtime.GOARCH}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return v
	}
	if v.Version == "dev" && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		v.Version = bi.Main.Version
	}
	v.GoVersion = bi.GoVersion
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			v.Commit = s.Value
		case "vcs.modified":
			v.Modified = s.Value == "true"
		}
	}
	return v
}

func newVersionCmd() *cobra.Command {
	var output string
	cmd := &cobra.Command{
		Use:   "version",
		Short: "Print the version, commit and Go version of this binary",
		Long: `Print the version of prose, the commit it was built from ("+dirty" when the
work tree had changes) and the Go version, as Go recorded them in the binary.
A binary built by 'go install' from a module version prints that version;
one built from a clone prints "dev" and the commit.`,
		Example: "  prose version\n  prose version -o json",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			v := readBuildVersion()
			switch output {
			case "json":
				b, _ := json.Marshal(v)
				fmt.Fprintln(cmd.OutOrStdout(), string(b))
			case "", "table", "text":
				commit := v.Commit
				if v.Modified {
					commit += "+dirty"
				}
				fmt.Fprintf(cmd.OutOrStdout(), "prose %s\ncommit %s\n%s %s\n", v.Version, commit, v.GoVersion, v.Platform)
			default:
				return usageErr("-o must be text or json, not %q", output)
			}
			return nil
		},
	}
	cmd.Flags().StringVarP(&output, "output", "o", "text", "text or json")
	return cmd
}
