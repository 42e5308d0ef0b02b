package main

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/proserun/prose/server/app"
	"github.com/spf13/pflag"
)

// parseServe parses serve's flags from args, env and the config file as
// serveCmd does.
func parseServe(t *testing.T, args []string, env map[string]string) (app.Config, error) {
	t.Helper()
	var cfg app.Config
	fs := pflag.NewFlagSet("serve", pflag.ContinueOnError)
	fs.SetOutput(io.Discard)
	serveFlags(fs, &cfg)
	if err := fs.Parse(args); err != nil {
		t.Fatalf("parse %v: %v", args, err)
	}
	err := applyEnvAndConfig(fs, nil, func(k string) string { return env[k] })
	return cfg, err
}

func writeFile(t *testing.T, name, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestServeFlagsPrecedence(t *testing.T) {
	yml := writeFile(t, "prose.yaml", "max-uploads: 3\nlease: 45s\naddr: 127.0.0.1:9001\nlog-level: debug\n")
	cases := []struct {
		name    string
		args    []string
		env     map[string]string
		uploads int
		lease   time.Duration
		addr    string
		level   string
	}{
		{name: "defaults", uploads: 8, addr: "127.0.0.1:8080", level: "info"},
		// PROSE_CONFIG is the client's profile file, never serve's config.
		{name: "PROSE_CONFIG ignored", env: map[string]string{"PROSE_CONFIG": yml}, uploads: 8, addr: "127.0.0.1:8080", level: "info"},
		{name: "file", args: []string{"--config", yml}, uploads: 3, lease: 45 * time.Second, addr: "127.0.0.1:9001", level: "debug"},
		{name: "file from env", env: map[string]string{"PROSE_SERVE_CONFIG": yml}, uploads: 3, lease: 45 * time.Second, addr: "127.0.0.1:9001", level: "debug"},
		{name: "env over file", args: []string{"--config", yml}, env: map[string]string{"PROSE_MAX_UPLOADS": "7", "PROSE_LEASE": "1m"},
			uploads: 7, lease: time.Minute, addr: "127.0.0.1:9001", level: "debug"},
		{name: "flag over env over file", args: []string{"--config", yml, "--max-uploads", "9", "--addr", ":1"}, env: map[string]string{"PROSE_MAX_UPLOADS": "7", "PROSE_ADDR": ":2"},
			uploads: 9, lease: 45 * time.Second, addr: ":1", level: "debug"},
		{name: "flag set to its default still wins", args: []string{"--config", yml, "--max-uploads", "8"}, uploads: 8, lease: 45 * time.Second, addr: "127.0.0.1:9001", level: "debug"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cfg, err := parseServe(t, c.args, c.env)
			if err != nil {
				t.Fatal(err)
			}
			if cfg.MaxUploads != c.uploads || cfg.Lease != c.lease || cfg.Addr != c.addr || cfg.LogLevel != c.level {
				t.Errorf("got uploads=%d lease=%s addr=%s level=%s, want %d %s %s %s", cfg.MaxUploads, cfg.Lease, cfg.Addr, cfg.LogLevel, c.uploads, c.lease, c.addr, c.level)
			}
		})
	}
}

func TestServeFlagsTOMLAndCustomValues(t *testing.T) {
	// Flags of custom types (sizes with units) take their text from either source.
	tml := writeFile(t, "prose.toml", "max-uploads = 4\nmax-title-bytes = \"2KiB\"\nmax-steps = 1000\nlease = \"10s\"\n")
	cfg, err := parseServe(t, []string{"--config", tml}, map[string]string{"PROSE_MAX_DESCRIPTION_BYTES": "4KiB"})
	if err != nil {
		t.Fatal(err)
	}
	if cfg.MaxUploads != 4 || cfg.Sizes.TitleBytes != 2048 || cfg.Limits.MaxSteps != 1000 || cfg.Lease != 10*time.Second || cfg.Sizes.TextBytes != 4096 {
		t.Errorf("got %+v / %+v", cfg.Sizes, cfg)
	}
}

func TestServeFlagsErrors(t *testing.T) {
	for _, c := range []struct {
		name, file string
		env        map[string]string
		want       string
	}{
		{name: "unknown key", file: "max-uplods: 3\n", want: `"max-uplods" is not a flag`},
		{name: "bad value in file", file: "max-uploads: many\n", want: "max-uploads"},
		{name: "nested value", file: "addr:\n  host: x\n", want: "want a string, number or boolean"},
		{name: "bad env", env: map[string]string{"PROSE_LEASE": "soon"}, want: "$PROSE_LEASE"},
		{name: "bad yaml", file: "addr: [\n", want: "config file"},
		{name: "missing file", env: map[string]string{"PROSE_SERVE_CONFIG": "/nonexistent/prose.yaml"}, want: "no such file"},
	} {
		t.Run(c.name, func(t *testing.T) {
			var args []string
			if c.file != "" {
				args = []string{"--config", writeFile(t, "c.yaml", c.file)}
			}
			_, err := parseServe(t, args, c.env)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err = %v, want it to mention %q", err, c.want)
			}
		})
	}
}

func TestServeHelpShowsDefaultsAndEnv(t *testing.T) {
	var out, errb bytes.Buffer
	if code := realMain([]string{"serve", "--help"}, nil, &out, &errb); code != 0 && code != 2 {
		t.Fatalf("exit %d", code)
	}
	help := out.String() + errb.String()
	for _, want := range []string{"--max-uploads", "PROSE_MAX_UPLOADS", "(default 8)", "--addr", `(default "127.0.0.1:8080")`, "PROSE_SERVE_CONFIG", "--config"} {
		if !strings.Contains(help, want) {
			t.Errorf("serve --help lacks %q:\n%s", want, help)
		}
	}
}

func TestServeBadEnvExits2(t *testing.T) {
	t.Setenv("PROSE_MAX_UPLOADS", "lots")
	var out, errb bytes.Buffer
	if code := realMain([]string{"serve", "--data", t.TempDir()}, nil, &out, &errb); code != 2 {
		t.Fatalf("exit %d, want 2; stderr %s", code, errb.String())
	}
	if !strings.Contains(errb.String(), "PROSE_MAX_UPLOADS") {
		t.Errorf("stderr %q does not name the variable", errb.String())
	}
}
