// Package prose is the root of the Prose module. Its only code is the generate
// directive that rebuilds gen/ from proto/ with the tools pinned in tools/go.mod
// (a module of their own, so that importers of this one do not resolve them).
package prose

//go:generate go tool -modfile=tools/go.mod buf format -w proto
//go:generate go tool -modfile=tools/go.mod buf lint
//go:generate go tool -modfile=tools/go.mod buf generate
