// Package lang is the Prose language: lexer and parser (with byte spans),
// values (exact decimals, dates, durations, lists, dictionaries, tables,
// sets, files) and an interpreter whose state can be suspended to bytes and
// resumed anywhere.
//
// The contract is LANGUAGE.md, extended by docs/language.md (the
// project's language reference); testdata/cases holds the language's cases.
//
// A run engine uses it like this:
//
//	prog, err := lang.Parse(code)               // *SyntaxError with a Span
//	res := lang.Start(ctx, prog, inputs, opts)  // Completed | Suspended | Failed | Stopped
//	// Suspended: store res.State and res.Exception; hold nothing else.
//	// Later, in any process, with the guidance a person or an agent gave:
//	res, err = lang.Resume(ctx, prog, state, lang.Resolution{Kind: lang.ProvideValues, Values: …}, opts)
//
// The state is self-contained and versioned JSON: the facts of every open
// scope, the position in every open block, loop and call, the replacement
// code given as guidance, and the journal of book results and clock readings.
// Book calls go through Options.Books; each result is journaled before the
// run goes on, and Options.Checkpoint receives a state from which a
// recovered run replays the step without calling the book again.
package lang
