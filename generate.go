// Package prose is the root of the Prose module. Its only code is the generate
// directive that rebuilds gen/ from proto/ with the pinned tools in go.mod.
package prose

//go:generate go tool buf format -w proto
//go:generate go tool buf lint
//go:generate go tool buf generate
