package main

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/BurntSushi/toml"
	"github.com/spf13/pflag"
	"go.yaml.in/yaml/v3"
)

// EnvPrefix is the prefix of the environment variables that give flags:
// PROSE_MAX_UPLOADS is --max-uploads.
const EnvPrefix = "PROSE_"

// ConfigFlag names the flag of the optional config file; ConfigEnv is its
// variable (not PROSE_CONFIG, which names the client's profile file).
const (
	ConfigFlag = "config"
	ConfigEnv  = "PROSE_SERVE_CONFIG"
)

// EnvName is the environment variable of the flag name: PROSE_ and the
// name in upper case, dashes as underscores.
func EnvName(flagName string) string {
	return EnvPrefix + strings.ToUpper(strings.ReplaceAll(flagName, "-", "_"))
}

// applyEnvAndConfig gives every flag of fs that the command line did not
// set a value from the environment (EnvName), else from the config file
// (--config, else $PROSE_SERVE_CONFIG; YAML, or TOML by its .toml extension,
// keyed by the flag names), else leaves its default: a flag on the command
// line wins over the environment, which wins over the file. Call it after
// fs.Parse; changed tells whether the command line set a flag (nil: fs's
// own record, from fs.Parse; a caller parsing with another library, e.g.
// cobra over fs, passes its own). getenv is os.Getenv outside tests. A key of the file or a
// value that no flag takes is an error naming it (a typo is not silently
// ignored); an unknown PROSE_ variable is not (the environment is shared).
func applyEnvAndConfig(fs *pflag.FlagSet, changed func(name string) bool, getenv func(string) string) error {
	set := map[string]bool{}
	if changed == nil {
		fs.Visit(func(f *pflag.Flag) { set[f.Name] = true })
	} else {
		fs.VisitAll(func(f *pflag.Flag) { set[f.Name] = changed(f.Name) })
	}

	path := ""
	if f := fs.Lookup(ConfigFlag); f != nil {
		path = f.Value.String()
	}
	if path == "" && !set[ConfigFlag] {
		path = getenv(ConfigEnv)
	}
	file := map[string]string{}
	if path != "" {
		var err error
		if file, err = readFlagFile(path); err != nil {
			return err
		}
		keys := make([]string, 0, len(file))
		for k := range file {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			if fs.Lookup(k) == nil || k == ConfigFlag {
				return fmt.Errorf("config file %s: %q is not a flag of this command (see --help)", path, k)
			}
		}
	}
	var errs []error
	fs.VisitAll(func(f *pflag.Flag) {
		if set[f.Name] || f.Name == ConfigFlag {
			return
		}
		if v, ok := lookupEnv(getenv, EnvName(f.Name)); ok {
			if err := fs.Set(f.Name, v); err != nil {
				errs = append(errs, fmt.Errorf("$%s: %w", EnvName(f.Name), err))
			}
			return
		}
		if v, ok := file[f.Name]; ok {
			if err := fs.Set(f.Name, v); err != nil {
				errs = append(errs, fmt.Errorf("config file %s: %s: %w", path, f.Name, err))
			}
		}
	})
	return errors.Join(errs...)
}

// lookupEnv is getenv, where an empty value counts as unset (as an unset
// variable reads in tests' getenv funcs).
func lookupEnv(getenv func(string) string, name string) (string, bool) {
	v := getenv(name)
	return v, v != ""
}

// readFlagFile reads a config file of flag values: a YAML mapping, or a
// TOML table when the name ends in .toml. Values are scalars (strings,
// numbers, booleans), given to the flags as their text.
func readFlagFile(path string) (map[string]string, error) {
	data, err := os.ReadFile(path) //nolint:gosec // G304: the operator names the file
	if err != nil {
		return nil, fmt.Errorf("config file: %w", err)
	}
	raw := map[string]any{}
	if strings.EqualFold(filepath.Ext(path), ".toml") {
		if _, err := toml.NewDecoder(bytes.NewReader(data)).Decode(&raw); err != nil {
			return nil, fmt.Errorf("config file %s: %w", path, err)
		}
	} else if err := yaml.Unmarshal(data, &raw); err != nil {
		return nil, fmt.Errorf("config file %s: %w", path, err)
	}
	out := make(map[string]string, len(raw))
	for k, v := range raw {
		switch v := v.(type) {
		case string:
			out[k] = v
		case bool, int, int64, uint64, float64:
			out[k] = fmt.Sprint(v)
		case nil:
			return nil, fmt.Errorf("config file %s: %s has no value", path, k)
		default:
			return nil, fmt.Errorf("config file %s: %s: want a string, number or boolean, not a %T", path, k, v)
		}
	}
	return out, nil
}

// flagUsageWithEnv prints fs's flags with their defaults, each with its
// environment variable, and says where values may come from.
func flagUsageWithEnv(fs *pflag.FlagSet, cmd string) func() {
	return func() {
		w := fs.Output()
		fmt.Fprintf(w, "usage: prose %s [flags]\n\n", cmd)
		fmt.Fprintf(w, "Every flag may also be given by the environment (PROSE_ and the flag's name in upper case,\n"+
			"dashes as underscores: --max-uploads is PROSE_MAX_UPLOADS) or by a config file (--config F or\n"+
			"PROSE_SERVE_CONFIG; YAML, or TOML if it ends in .toml; the flag names as keys). A flag on the command\n"+
			"line wins over the environment, which wins over the file.\n\nFlags:\n")
		fs.VisitAll(func(f *pflag.Flag) {
			name, usage := pflag.UnquoteUsage(f)
			line := "  --" + f.Name
			if name != "" {
				line += " " + name
			}
			line += "\t(" + EnvName(f.Name) + ")\n    \t" + strings.ReplaceAll(usage, "\n", "\n    \t")
			if f.DefValue != "" && f.DefValue != "0" && f.DefValue != "0s" && f.DefValue != "false" {
				line += " (default " + f.DefValue + ")"
			}
			fmt.Fprintln(w, line)
		})
	}
}
