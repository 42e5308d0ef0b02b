package lang

// opcode is the kind of a statement.
type opcode uint8

const (
	opAssign   opcode = iota + 1 // the X is E / the X are E, E / set the X to E
	opAlias                      // use the X as the Y
	opImagine                    // imagine a report
	opGet                        // get E [as the Y]
	opFind                       // find E [as the Y]
	opAsk                        // ask E
	opIf                         // if / else if / else
	opEach                       // process each X [in E] as follows
	opValidate                   // validate the following / ensure C
	opSay                        // say E
	opStop                       // stop
	opAdd                        // add E to T
	opSubtract                   // subtract E from T
	opMultiply                   // multiply T by E
	opDivide                     // divide T by E
	opRemove                     // remove E from T
	opCall                       // a procedure call
	opReturn                     // return E
	opStartRun                   // start a run where … (the procedure and its inputs)
	opWaitRuns                   // wait for the runs
)

// block is a sequence of statements. Blocks are numbered per source (the
// program, or one replacement) so that positions can be serialised.
type block struct {
	id    int
	stmts []*stmt
	// inline: the statement of a one-line `if C then S`, which counts
	// as standing where the if stands (for outputs).
	inline bool
}

type stmt struct {
	op   opcode
	span Span
	text string // the statement's text, for messages

	target *refExpr // assigned fact or field (assign, arithmetic, get/find as, alias, imagine)
	x      expr     // the main expression
	list   []expr   // the items of `the Xs are A, B, C`
	plural bool     // `are` (a list)
	bare   bool     // a noun phrase alone, read like get

	branches   []branch // if
	inlineElse bool     // the if's else is on its line: no else line may follow

	// process each
	item     string   // the item's fact name
	itemSlot int      // its slot
	plurals  []string // fact names the item may come from, when there is no `in`
	body     *block

	checks []check // validate

	choices []expr // ask

	call *callStmt

	// out: the statement sets a fact named `the output…` (outSlot); run
	// at the top level, it makes that fact an output of the run.
	out     bool
	outSlot int
}

type branch struct {
	cond expr // nil for else
	body *block
	span Span
	// inlineElse carries the `else S2` of a one-line `if C then S1 else
	// S2` from the parse of the condition to the if statement.
	inlineElse *branch
}

type check struct {
	cond expr
	text string
}

type callStmt struct {
	toks     []token // the sentence (without `as the Y` and a trailing where/with)
	bare     []token // the sentence without a leading `run`/`invoke`, tried after toks
	sentence string
	as       *refExpr
	args     *block // the where/with block, or nil
	proc     *procDef
	params   []param
	hint     string // why the line is not the keyword form it starts like
	run      bool   // the call of a started run (its block's procedure is no input)
}

type param struct {
	slot int // the callee's fact
	x    expr
	soft bool // named by its own words: passed only when the caller has it
}

// procDef is a procedure defined with `to …`.
type procDef struct {
	sig  []sigElem
	text string
	body *block
	span Span
	// def is the procedure's whole definition as written (its header and
	// block, unindented): what a child run of it executes.
	def string
}

// sigElem is a word of a signature, or an input noun (a/an NOUN).
type sigElem struct {
	word  string   // a literal word
	param []string // the input's noun words (when word == "")
	slot  int
}
