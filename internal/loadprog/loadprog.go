// Package loadprog holds the automation cmd/prose-load runs, so that the
// benchmarks that measure one of its runs in process (the interpreter's,
// the engine's, the server's HTTP path) run the same program.
package loadprog

// Short is prose-load's automation: ten statements and no book, the kind
// of run the server executes at its creation.
const Short = `the a is 41 + 1
the b is the a * 2
the c is the b + 3
the d is the c - 1
the e is the d * 2
the f is the e + 5
the g is the f - 2
the h is the g * 3
the i is the h + 1
the output result is the i
`
