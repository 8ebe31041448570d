package tools

import (
	"fmt"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// Limits on how much work the gate does for one command line. Reaching one
// never allows anything: the line needs approval instead.
const (
	maxShellBytes = 256 << 10 // bytes of one command line
	maxShellUnits = 10000     // simple commands, nested ones included
	maxShellDepth = 8         // nesting of bash -c, eval and trap strings
)

// shellWord is one word of a command as the gate sees it.
type shellWord struct {
	// text is the word with its quoting removed where it is literal, and its
	// source text where it expands at run time ($x, $(...), globs).
	text string
	// literal reports that text is exactly what the command will receive.
	literal bool
	// splits reports that the word may become several words, or none, at
	// run time: an unquoted expansion or glob, or "$@".
	splits bool
	// procSubst reports that the word is one process substitution, <(cmd)
	// or >(cmd): a /dev/fd path to a command checked on its own.
	procSubst bool
}

// unitKind says how a command unit is checked.
type unitKind uint8

const (
	// unitCommand runs a program or builtin and needs an allow rule.
	unitCommand unitKind = iota
	// unitWrapper runs the command that follows it (sudo, timeout, bash -c),
	// which is a unit of its own; only deny and ask rules and the wrapper's
	// floor apply to the wrapper itself.
	unitWrapper
	// unitBuiltin runs nothing (export, declare): only deny and ask rules apply.
	unitBuiltin
)

// floor is a reason a command can at best be asked about.
type floor struct {
	reason string
	// always keeps the floor in bypass mode as well.
	always bool
	// protected is the protected directory the floor is about; an allow rule
	// naming it lifts the floor.
	protected string
	// contained floors are about writes and programs an option adds; the
	// sandbox holds them in edit mode, where they do not ask.
	contained bool
	// liftable floors are lifted by any allow rule matching the command.
	liftable bool
	// hides marks a command the gate cannot see (a name or script known
	// only at run time): in bypass mode it still needs approval when deny or
	// ask rules exist, as they might match it.
	hides bool
}

// cmdUnit is one command of a command line, checked on its own.
type cmdUnit struct {
	kind   unitKind
	words  []shellWord
	floors []floor
	// wrapperFloor holds unless an allow rule matches the wrapper itself
	// (sudo, xargs, find -exec).
	wrapperFloor string
}

// writeUnit is a redirection or option that writes to a file.
type writeUnit struct {
	target shellWord
	// cmd is the command that writes it by an argument (cp x .git/y), or
	// nil for a redirection.
	cmd []shellWord
}

// shellAnalysis is what the gate needs to know about one command line.
type shellAnalysis struct {
	cmds   []cmdUnit
	writes []writeUnit
	floors []floor // floors of the line as a whole
	err    error   // the line, or a string it runs, could not be parsed
	capped bool    // a work limit was reached
	// cds are the directories the line changes to (cd, pushd), in order;
	// relative paths after them may point there.
	cds []shellWord
	// dotglob: the line may turn on dotglob, under which * matches .git.
	dotglob bool
	// reads are the files the line reads by redirection (< FILE).
	reads []shellWord
	// expands: a heredoc or here-string expands a parameter, arithmetic or
	// a substitution, which edit mode's readers do not take.
	expands bool
}

// shellAnalyzer collects the units of a command line and the strings it
// runs (bash -c, eval), parsing each with the same grammar bash uses.
type shellAnalyzer struct {
	out       shellAnalysis
	protected [][]string
}

// analyzeShell parses line and returns every command, write and floor in it,
// including those inside substitutions, function bodies and strings run by
// bash -c or eval.
func analyzeShell(line string, protected [][]string) *shellAnalysis {
	a := &shellAnalyzer{protected: protected}
	if len(line) > maxShellBytes {
		a.cap(fmt.Sprintf("the command is %d bytes long, more than the %d the gate checks", len(line), maxShellBytes))
		return &a.out
	}
	a.parse(line, 0)
	return &a.out
}

// parse parses src and walks it; depth counts the strings it is nested in.
func (a *shellAnalyzer) parse(src string, depth int) {
	if depth > maxShellDepth {
		a.cap(fmt.Sprintf("commands are nested more than %d levels deep", maxShellDepth))
		return
	}
	if strings.IndexByte(src, 0) >= 0 {
		a.fail(fmt.Errorf("the command contains a NUL byte"))
		return
	}
	a.noteDotglob(src)
	if commentContinuation.MatchString(src) {
		a.lineFloor("a comment ends in a backslash: bash runs the next line, which a parser may read as part of the comment")
	}
	f, err := syntax.NewParser(syntax.Variant(syntax.LangBash)).Parse(strings.NewReader(src), "")
	if err != nil {
		if depth > 0 {
			err = fmt.Errorf("nested script %s: %w", quoteSnippet(src), err)
		}
		a.fail(err)
		return
	}
	v := &shellVisitor{a: a, src: src, depth: depth}
	syntax.Walk(f, v.visit)
}

// fail records the first error that makes the line uncheckable.
func (a *shellAnalyzer) fail(err error) {
	if a.out.err == nil {
		a.out.err = err
	}
}

// cap records that a work limit was reached, once.
func (a *shellAnalyzer) cap(reason string) {
	if !a.out.capped {
		a.out.capped = true
		a.out.floors = append(a.out.floors, floor{reason: reason, always: true})
	}
}

// add records a command unit, up to the limit.
func (a *shellAnalyzer) add(u cmdUnit) {
	if len(a.out.cmds) >= maxShellUnits {
		a.cap(fmt.Sprintf("the command line has more than %d commands", maxShellUnits))
		return
	}
	a.out.cmds = append(a.out.cmds, u)
}

// lineFloor records a floor of the whole line.
func (a *shellAnalyzer) lineFloor(reason string) {
	a.out.floors = append(a.out.floors, floor{reason: reason})
}

// command records one simple command, unwrapping wrappers such as sudo,
// timeout and bash -c so the command they run is checked too.
func (a *shellAnalyzer) command(words []shellWord, floors []floor, depth int) {
	if len(words) == 0 {
		return
	}
	floors = append(floors, a.protectedFloors(words)...)
	name := words[0]
	if !name.literal {
		floors = append(floors, floor{reason: fmt.Sprintf("its command name %s is only known at run time, so no rule can vouch for it", quoteSnippet(name.text)), hides: true})
		a.add(cmdUnit{kind: unitCommand, words: words, floors: floors})
		return
	}
	if a.recordWrapped(words, floors, depth) {
		return
	}
	a.noteWrites(words)
	floors = append(floors, commandFloors(words)...)
	floors = append(floors, dangerousFloors(words)...)
	kind := unitCommand
	if name.text == "exec" && len(words) == 1 {
		kind = unitBuiltin // exec with only redirections
	}
	a.add(cmdUnit{kind: kind, words: words, floors: floors})
}

// protectedFloors returns a floor for each word that names a protected
// directory (cp x .git/hooks/pre-commit): the command may write there.
func (a *shellAnalyzer) protectedFloors(words []shellWord) []floor {
	var out []floor
	for _, w := range words {
		if dir := mentionsProtected(w.text, a.protected); dir != "" {
			out = append(out, floor{
				reason:    fmt.Sprintf("it names %s inside %s/, which decode protects", quoteSnippet(w.text), dir),
				always:    true,
				protected: dir,
			})
		}
	}
	return out
}

// mentionsProtected returns the protected directory that text names, or
// "": the name standing on its own (.git, --git-dir=.git, $(echo .git)), or
// followed by a slash even when glued to something (-o.git/x).
func mentionsProtected(text string, protected [][]string) string {
	if !strings.ContainsRune(text, '.') && allDotted(protected) {
		return "" // fast path: every protected name starts with a dot
	}
	lower := strings.ToLower(text)
	for _, p := range protected {
		dir := strings.Join(p, "/")
		name := strings.ToLower(dir)
		for i := 0; i < len(lower); {
			j := strings.Index(lower[i:], name)
			if j < 0 {
				break
			}
			start, end := i+j, i+j+len(name)
			if end < len(lower) && lower[end] == '/' {
				return dir
			}
			if (start == 0 || !nameByte(lower[start-1])) && (end == len(lower) || !nameByte(lower[end])) {
				return dir
			}
			i = start + 1
		}
	}
	return globMayName(lower, protected)
}

// nameByte reports whether c can be part of a file name next to a
// protected name without making it another name (.gitignore, x.git).
func nameByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '_' || c == '-' || c == '.' || c >= 0x80
}

// allDotted reports whether every protected name starts with a dot.
func allDotted(protected [][]string) bool {
	for _, p := range protected {
		if !strings.HasPrefix(p[0], ".") {
			return false
		}
	}
	return true
}

// protectedIn returns the first protected directory whose components appear,
// in order and case-insensitively (as on macOS), among comps.
func protectedIn(comps []string, protected [][]string) string {
	for _, p := range protected {
		for i := 0; i+len(p) <= len(comps); i++ {
			match := true
			for j := range p {
				if !strings.EqualFold(comps[i+j], p[j]) {
					match = false
					break
				}
			}
			if match {
				return strings.Join(p, "/")
			}
		}
	}
	return ""
}

// shellVisitor walks one parsed string.
type shellVisitor struct {
	a     *shellAnalyzer
	src   string
	depth int
	// fedShell is a shell whose script, a heredoc, is checked on its own: it
	// is then a wrapper like bash -c.
	fedShell *syntax.CallExpr
}

func (v *shellVisitor) visit(n syntax.Node) bool {
	switch n := n.(type) {
	case *syntax.Stmt:
		for _, r := range n.Redirs {
			v.redirect(r)
		}
		v.stdinScript(n)
	case *syntax.BinaryCmd:
		if n.Op == syntax.Pipe || n.Op == syntax.PipeAll {
			v.pipedScript(n.Y)
		}
	case *syntax.CallExpr:
		v.call(n)
	case *syntax.DeclClause:
		v.decl(n)
	case *syntax.ArithmCmd:
		v.arithm(n.X)
	case *syntax.ArithmExp:
		v.arithm(n.X)
	case *syntax.LetClause:
		for _, x := range n.Exprs {
			v.arithm(x)
		}
	case *syntax.CStyleLoop:
		v.arithm(n.Init)
		v.arithm(n.Cond)
		v.arithm(n.Post)
	case *syntax.ParamExp:
		v.param(n)
	case *syntax.Assign:
		v.arithm(n.Index)
	case *syntax.ArrayElem:
		v.arithm(n.Index)
	case *syntax.UnaryTest:
		if w, ok := n.X.(*syntax.Word); ok && n.Op == syntax.TsVarSet && testVarCode(w) {
			v.a.lineFloor("[[ -v ]] evaluates the subscript of its operand as code")
		}
	case *syntax.BinaryTest:
		if n.Op >= syntax.TsEql && n.Op <= syntax.TsGtr {
			v.arithmOperand(n.X)
			v.arithmOperand(n.Y)
		}
	}
	return true
}

// shellReadingStdin returns the words of stmt's command when it is a shell
// that reads its script from stdin (bash, sh -s).
func (v *shellVisitor) shellReadingStdin(stmt *syntax.Stmt) ([]shellWord, bool) {
	call, ok := stmt.Cmd.(*syntax.CallExpr)
	if !ok || len(call.Args) == 0 {
		return nil, false
	}
	words := make([]shellWord, len(call.Args))
	for i, w := range call.Args {
		words[i] = v.word(w)
	}
	if !words[0].literal {
		return nil, false
	}
	sc, ok := parseShellCall(words)
	return words, ok && sc.stdin && sc.opaque == ""
}

// stdinScript checks the script a shell reads from a heredoc or a here
// string (bash <<'EOF' ... EOF) like any other command line.
func (v *shellVisitor) stdinScript(stmt *syntax.Stmt) {
	words, ok := v.shellReadingStdin(stmt)
	if !ok {
		return
	}
	for _, r := range stmt.Redirs {
		body := r.Hdoc
		if r.Op == syntax.WordHdoc {
			body = r.Word
		}
		if body == nil || (r.Op != syntax.Hdoc && r.Op != syntax.DashHdoc && r.Op != syntax.WordHdoc) {
			continue
		}
		v.fedShell = stmt.Cmd.(*syntax.CallExpr)
		w := v.word(body)
		if !w.literal {
			v.a.out.floors = append(v.a.out.floors, floor{
				reason: fmt.Sprintf("%s reads a script with parts known only at run time", words[0].text), hides: true})
		}
		v.a.parse(w.text, v.depth+1)
	}
}

// pipedScript holds a shell that reads its script from a pipe
// (curl ... | bash): the gate cannot see that script.
func (v *shellVisitor) pipedScript(stmt *syntax.Stmt) {
	words, ok := v.shellReadingStdin(stmt)
	if !ok {
		return
	}
	for _, r := range stmt.Redirs {
		if r.Op == syntax.RdrIn || r.Op == syntax.Hdoc || r.Op == syntax.DashHdoc || r.Op == syntax.WordHdoc {
			return // stdin comes from elsewhere
		}
	}
	v.a.out.floors = append(v.a.out.floors, floor{
		reason: fmt.Sprintf("%s runs a script it reads from a pipe, which the gate cannot check", words[0].text), hides: true})
}

// call records a simple command and the floors of its assignments.
func (v *shellVisitor) call(c *syntax.CallExpr) {
	var floors []floor
	for _, as := range c.Assigns {
		if as.Name != nil && riskyVar(as.Name.Value) {
			floors = append(floors, riskyVarFloor(as.Name.Value))
		}
		if as.Value != nil {
			// x=.git/hooks/pre-commit; cp evil "$x" names .git here.
			floors = append(floors, v.a.protectedFloors([]shellWord{v.word(as.Value)})...)
		}
	}
	if len(c.Args) == 0 {
		v.a.out.floors = append(v.a.out.floors, floors...)
		return
	}
	words := make([]shellWord, len(c.Args))
	for i, w := range c.Args {
		words[i] = v.word(w)
	}
	if c == v.fedShell {
		floors = append(floors, v.a.protectedFloors(words)...)
		v.a.add(cmdUnit{kind: unitWrapper, words: words, floors: floors})
		return
	}
	v.a.command(words, floors, v.depth)
}

// decl records export, declare, local, readonly and typeset, which run
// nothing but can set variables that change what later commands run.
func (v *shellVisitor) decl(d *syntax.DeclClause) {
	words := []shellWord{{text: d.Variant.Value, literal: true}}
	var floors []floor
	for _, as := range d.Args {
		switch {
		case as.Name != nil:
			text := as.Name.Value
			if !as.Naked {
				switch {
				case as.Value != nil:
					text += "=" + v.word(as.Value).text
				case as.Array != nil:
					text += "=" + v.source(as.Array)
				default:
					text += "="
				}
				if riskyVar(as.Name.Value) {
					floors = append(floors, riskyVarFloor(as.Name.Value))
				}
			}
			words = append(words, shellWord{text: text, literal: true})
		case as.Value != nil:
			w := v.word(as.Value)
			words = append(words, w)
			if !w.literal {
				floors = append(floors, floor{reason: fmt.Sprintf("%s gets %s, whose value is only known at run time", d.Variant.Value, quoteSnippet(w.text))})
			} else if strings.HasPrefix(w.text, "-") && strings.ContainsAny(w.text, "ni") {
				floors = append(floors, floor{reason: fmt.Sprintf("%s %s makes later assignments act on other variables or evaluate arithmetic", d.Variant.Value, w.text)})
			} else if name, _, isAssign := strings.Cut(w.text, "="); isAssign && riskyVar(strings.TrimSuffix(name, "+")) {
				// a quoted assignment: bash still assigns it
				floors = append(floors, riskyVarFloor(strings.TrimSuffix(name, "+")))
			} else if strings.Contains(w.text, "[") && strings.ContainsAny(w.text, "$`") {
				floors = append(floors, floor{reason: fmt.Sprintf("%s evaluates the subscript of %s as code", d.Variant.Value, quoteSnippet(w.text))})
			}
		}
	}
	floors = append(floors, v.a.protectedFloors(words)...)
	v.a.add(cmdUnit{kind: unitBuiltin, words: words, floors: floors})
}

// redirect records a redirection that writes to a file.
func (v *shellVisitor) redirect(r *syntax.Redirect) {
	switch r.Op {
	case syntax.RdrIn:
		v.a.out.reads = append(v.a.out.reads, v.word(r.Word))
		return
	case syntax.Hdoc, syntax.DashHdoc, syntax.WordHdoc:
		body := r.Hdoc
		if r.Op == syntax.WordHdoc {
			body = r.Word
		}
		if body != nil && !v.word(body).literal {
			v.a.out.expands = true
		}
		return
	case syntax.RdrOut, syntax.AppOut, syntax.RdrInOut, syntax.RdrClob, syntax.AppClob,
		syntax.RdrAll, syntax.RdrAllClob, syntax.AppAll, syntax.AppAllClob:
	case syntax.DplOut:
		// >&2 and >&- duplicate or close a descriptor; >&name writes a file.
		if lit := r.Word.Lit(); lit == "-" || isDigits(strings.TrimSuffix(lit, "-")) {
			return
		}
	default:
		return
	}
	if len(r.Word.Parts) == 1 {
		if _, ok := r.Word.Parts[0].(*syntax.ProcSubst); ok {
			return // > >(cmd) feeds a command, checked on its own
		}
	}
	w := v.word(r.Word)
	if w.literal && harmlessDevice(w.text) {
		return
	}
	v.a.out.writes = append(v.a.out.writes, writeUnit{target: w})
}

// harmlessDevice reports whether writing to p writes no file.
func harmlessDevice(p string) bool {
	switch p {
	case "/dev/null", "/dev/stdout", "/dev/stderr", "/dev/tty":
		return true
	}
	return strings.HasPrefix(p, "/dev/fd/") && isDigits(p[len("/dev/fd/"):])
}

// param flags expansions that can run code hidden in a variable's value:
// indirection, prompt expansion and arithmetic subscripts.
func (v *shellVisitor) param(p *syntax.ParamExp) {
	if p.Excl && p.Names == 0 {
		v.a.lineFloor("the indirect expansion ${!...} can run commands hidden in a variable")
	}
	if p.Exp != nil && p.Exp.Op == syntax.OtherParamOps && p.Exp.Word != nil && strings.Contains(p.Exp.Word.Lit(), "P") {
		v.a.lineFloor("the ${...@P} expansion runs command substitutions found in a variable")
	}
	if p.Index != nil {
		if w, ok := p.Index.(*syntax.Word); !ok || (w.Lit() != "@" && w.Lit() != "*") {
			v.arithm(p.Index)
		}
	}
	if p.Slice != nil {
		v.arithm(p.Slice.Offset)
		v.arithm(p.Slice.Length)
	}
}

// arithm flags arithmetic that reads variables: bash evaluates a
// variable's value as an expression there, and a value such as
// a[$(cmd)] runs cmd.
func (v *shellVisitor) arithm(x syntax.ArithmExpr) {
	if x == nil {
		return
	}
	syntax.Walk(x, func(n syntax.Node) bool {
		if w, ok := n.(*syntax.Word); ok {
			v.arithmOperand(w)
			return false
		}
		return true
	})
}

// arithmOperand flags an arithmetic operand that is not a number.
func (v *shellVisitor) arithmOperand(x syntax.Node) {
	w, ok := x.(*syntax.Word)
	if ok && isArithmNumber(w.Lit()) {
		return
	}
	v.a.lineFloor("arithmetic on variables can run commands hidden in their values (a[$(cmd)])")
}

// isArithmNumber reports whether s is a numeric constant (12, 0x1f, 2#101).
func isArithmNumber(s string) bool {
	if s == "" || s[0] < '0' || s[0] > '9' {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '#' || c == '_' || c == '@') {
			return false
		}
	}
	return true
}

// isDigits reports whether s is a non-empty run of decimal digits.
func isDigits(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// word returns the gate's view of w.
func (v *shellVisitor) word(w *syntax.Word) shellWord {
	var b strings.Builder
	literal, splits := true, false
	for i, part := range w.Parts {
		switch p := part.(type) {
		case *syntax.Lit:
			s, plain := unescapeUnquoted(p.Value)
			splits = splits || !plain
			if i == 0 && strings.HasPrefix(p.Value, "~") {
				plain = false // tilde expansion
			}
			b.WriteString(s)
			literal = literal && plain
		case *syntax.SglQuoted:
			if !p.Dollar {
				b.WriteString(p.Value)
				continue
			}
			s, ok := decodeANSIC(p.Value)
			if !ok {
				s, literal = v.source(p), false
			}
			b.WriteString(s)
		case *syntax.DblQuoted:
			if p.Dollar {
				literal = false // $"..." is translated by the locale
			}
			for _, q := range p.Parts {
				if l, ok := q.(*syntax.Lit); ok {
					b.WriteString(unescapeDouble(l.Value))
					continue
				}
				src := v.source(q)
				b.WriteString(src)
				literal = false
				// "$@" and "${a[@]}" become several words even in quotes.
				_, param := q.(*syntax.ParamExp)
				splits = splits || (param && strings.Contains(src, "@"))
			}
		case *syntax.ProcSubst:
			b.WriteString(v.source(p))
			literal = false // one word: a /dev/fd path
		default:
			b.WriteString(v.source(p))
			literal, splits = false, true
		}
	}
	proc := false
	if len(w.Parts) == 1 {
		_, proc = w.Parts[0].(*syntax.ProcSubst)
	}
	return shellWord{text: b.String(), literal: literal, splits: splits, procSubst: proc}
}

// source returns the source text of n.
func (v *shellVisitor) source(n syntax.Node) string {
	start, end := int(n.Pos().Offset()), int(n.End().Offset())
	if start < 0 || end > len(v.src) || start > end {
		return "?"
	}
	return v.src[start:end]
}

// unescapeUnquoted removes backslash escapes from an unquoted literal and
// reports whether it is plain: free of globs and brace expansions.
func unescapeUnquoted(s string) (string, bool) {
	if !strings.ContainsAny(s, "\\*?[{") {
		return s, true
	}
	var b strings.Builder
	plain := true
	// A bracket pair is a glob; a brace pair expands only with a comma or
	// .. inside ({a,b}, {1..3}), so find's {} stays literal.
	openBracket, openBrace, braceSep := false, false, false
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '\\' && i+1 < len(s):
			i++
			if s[i] != '\n' {
				b.WriteByte(s[i])
			}
			continue
		case c == '*' || c == '?':
			plain = false
		case c == '[':
			openBracket = true
		case c == ']' && openBracket:
			plain = false
		case c == '{':
			openBrace = true
		case openBrace && (c == ',' || c == '.' && i+1 < len(s) && s[i+1] == '.'):
			braceSep = true
		case c == '}' && braceSep:
			plain = false
		}
		b.WriteByte(c)
	}
	return b.String(), plain
}

// unescapeDouble removes the backslash escapes that work inside double quotes.
func unescapeDouble(s string) string {
	if !strings.Contains(s, "\\") {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+1 < len(s) {
			switch s[i+1] {
			case '$', '`', '"', '\\':
				b.WriteByte(s[i+1])
				i++
				continue
			case '\n':
				i++
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// decodeANSIC decodes the body of a $'...' string. It reports false for a
// NUL, which bash treats by cutting the string short.
func decodeANSIC(s string) (string, bool) {
	if !strings.Contains(s, "\\") {
		return s, true
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '\\' || i+1 == len(s) {
			b.WriteByte(s[i])
			continue
		}
		i++
		c := s[i]
		switch c {
		case 'a', 'b', 'e', 'E', 'f', 'n', 'r', 't', 'v':
			b.WriteByte(ansiSimple[c])
		case '\\', '\'', '"', '?':
			b.WriteByte(c)
		case 'x', 'u', 'U', '0', '1', '2', '3', '4', '5', '6', '7':
			r, n := ansiNumber(s[i:])
			if n == 0 {
				b.WriteByte('\\')
				b.WriteByte(c)
				continue
			}
			if r == 0 {
				return "", false
			}
			if c == 'u' || c == 'U' {
				b.WriteRune(r)
			} else {
				b.WriteByte(byte(r))
			}
			i += n - 1
		case 'c':
			if i+1 == len(s) {
				b.WriteString("\\c")
				continue
			}
			i++
			if s[i]&0x1f == 0 {
				return "", false
			}
			b.WriteByte(s[i] & 0x1f)
		default:
			b.WriteByte('\\')
			b.WriteByte(c)
		}
	}
	return b.String(), true
}

var ansiSimple = map[byte]byte{'a': 7, 'b': 8, 'e': 27, 'E': 27, 'f': 12, 'n': '\n', 'r': '\r', 't': '\t', 'v': 11}

// ansiNumber decodes a numeric escape at the start of s (after the
// backslash): xHH, uHHHH, UHHHHHHHH or octal NNN. It returns the value and
// how many bytes it used, 0 when no digit follows.
func ansiNumber(s string) (rune, int) {
	base, maxDigits, start := 16, 2, 1
	switch s[0] {
	case 'u':
		maxDigits = 4
	case 'U':
		maxDigits = 8
	case 'x':
	default:
		base, maxDigits, start = 8, 3, 0
	}
	var r rune
	n := 0
	for n < maxDigits && start+n < len(s) {
		d := digitVal(s[start+n])
		if d < 0 || d >= base {
			break
		}
		r = r*rune(base) + rune(d)
		n++
	}
	if n == 0 {
		return 0, 0
	}
	return r, start + n
}

// digitVal returns the value of a hex digit, or -1.
func digitVal(c byte) int {
	switch {
	case c >= '0' && c <= '9':
		return int(c - '0')
	case c >= 'a' && c <= 'f':
		return int(c-'a') + 10
	case c >= 'A' && c <= 'F':
		return int(c-'A') + 10
	}
	return -1
}

// quoteSnippet returns s in backticks, on one line and shortened, for a
// reason the model or the user reads.
func quoteSnippet(s string) string {
	const maxLen = 80
	s = strings.ReplaceAll(s, "\n", "⏎")
	if r := []rune(s); len(r) > maxLen {
		s = string(r[:maxLen-1]) + "…"
	}
	return "`" + s + "`"
}
