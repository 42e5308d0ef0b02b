// Package safechange is how a change to an automation is made safely:
// tests written in the language's own terms (inputs, the answers a person
// gives, what each book call returns, what must come of it), run without
// calling any book; and replay, which re-executes a draft with what real
// runs of the published version recorded and says how each would change.
//
// One package owns the tests file format (NAME.tests.yaml beside
// NAME.prose; DecodeSuite, EncodeSuite), the runner (RunSuite, RunCase),
// coverage, the reports (WriteText, WriteJUnit) and replay (Replay).
// `prose test` and the server's :test, :replay and gated publish all use
// it. It imports the language and nothing else of Prose:
// docs/safe-change.md describes the format and the rules.
package safechange
