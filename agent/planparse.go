package agent

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"decode/session"
)

// planRules say what makes a plan usable.
type planRules struct {
	min, max int // step count; max 0 means no maximum
}

// Rules for decode plan's answer, for a re-plan's replacement steps, and
// for a hand-written --plan-file. A step's "Files:" and "Verify:" are asked
// for but optional: a numbered list of steps is a plan.
var (
	planAnswerRules = planRules{min: 3, max: 8}
	replanRules     = planRules{min: 1, max: 8}
	planFileRules   = planRules{min: 1, max: 50}
)

// ParsePlanFile reads a hand-written plan (decode run --plan-file): a
// numbered list of 1 to 50 steps, "Files:" and "Verify:" optional.
func ParsePlanFile(text string) ([]session.PlanStep, error) {
	return parsePlan(text, planFileRules)
}

// planPatterns are compiled on first use, not at start-up: most runs never
// parse a plan.
type planPatterns struct {
	step  *regexp.Regexp // a numbered item: "1. …", "2) …", "**3.** …", "Step 4: …"
	field *regexp.Regexp // a field marker inside a step: "Files:", "Verify:"
	label *regexp.Regexp // a section after the list: "Risks:", "**Open questions**", "## Notes"
}

func newPlanPatterns() planPatterns {
	return planPatterns{
		step: regexp.MustCompile(`(?i)^(\s*)(?:[*_]{2})?(?:step\s+)?(\d{1,3})\s*[.):](?:[*_]{2})?\s+(.*)$`),
		// Capitalised, as the prompt shows them, so "the config file: …"
		// in a step's text is not taken for a field.
		field: regexp.MustCompile(`(?:^|[\s(.;,-])(Files?|FILES?|Verify|VERIFY|Verification)\s*:`),
		label: regexp.MustCompile(`^(#|[*_]*[A-Z][A-Za-z ]{0,30}[*_]*:|[*_]{2}[A-Z][A-Za-z ]{0,30}[*_]{2}$)`),
	}
}

// rawStep is a numbered item before its fields are taken apart.
type rawStep struct {
	n    int
	text string
}

// parsePlan reads a numbered plan: the items of the first numbered list
// (text before it is a preamble; text after it, once a blank line and an
// unindented line that is not an item end it, is left out: open questions,
// risks). Each item's "Files:" and "Verify:" parts, inline or on lines of
// their own, fill the step's fields. The error lists every problem against
// rules, in words meant for the model that wrote the plan.
func parsePlan(text string, rules planRules) ([]session.PlanStep, error) {
	pp := newPlanPatterns()
	raws := numberedItems(pp, text)
	var problems []string
	if len(raws) == 0 {
		return nil, fmt.Errorf("no numbered steps found; write the plan as a numbered list (1. … 2. …)")
	}
	var nums []string
	inOrder := true
	for i, r := range raws {
		nums = append(nums, strconv.Itoa(r.n))
		if r.n != i+1 {
			inOrder = false
		}
	}
	if !inOrder {
		problems = append(problems, fmt.Sprintf("the steps are numbered %s; number them 1 to %d in order", strings.Join(nums, ", "), len(raws)))
	}
	switch {
	case len(raws) < rules.min:
		problems = append(problems, fmt.Sprintf("the plan has %d steps; it needs %s", len(raws), stepRange(rules)))
	case rules.max > 0 && len(raws) > rules.max:
		problems = append(problems, fmt.Sprintf("the plan has %d steps; it needs %s (merge small steps)", len(raws), stepRange(rules)))
	}
	steps := make([]session.PlanStep, 0, len(raws))
	for i, r := range raws {
		s := planFields(pp, r.text)
		s.N = i + 1
		if s.Text == "" {
			problems = append(problems, fmt.Sprintf("step %d says nothing to do", s.N))
		}
		steps = append(steps, s)
	}
	if len(problems) > 0 {
		return steps, fmt.Errorf("%s", strings.Join(problems, "; "))
	}
	return steps, nil
}

// stepRange says how many steps rules want.
func stepRange(r planRules) string {
	switch {
	case r.max == 0:
		return fmt.Sprintf("at least %d", r.min)
	case r.min == r.max:
		return strconv.Itoa(r.min)
	}
	return fmt.Sprintf("%d to %d steps", r.min, r.max)
}

// numberedItems collects the items of the first numbered list in text,
// with their continuation lines. Items nested deeper than the first item
// belong to the item above them.
func numberedItems(pp planPatterns, text string) []rawStep {
	var (
		items  []rawStep
		indent = -1
		blank  bool
	)
	for _, line := range strings.Split(strings.ReplaceAll(text, "\r\n", "\n"), "\n") {
		m := pp.step.FindStringSubmatch(line)
		if m != nil && (indent < 0 || len(m[1]) <= indent) {
			if indent < 0 {
				indent = len(m[1])
			}
			n, _ := strconv.Atoi(m[2])
			items = append(items, rawStep{n: n, text: m[3]})
			blank = false
			continue
		}
		if len(items) == 0 {
			continue // preamble
		}
		trimmed := strings.TrimSpace(line)
		if trimmed == "" {
			blank = true
			continue
		}
		indented := len(line)-len(strings.TrimLeft(line, " \t")) > indent
		isField := pp.field.MatchString(" " + strings.TrimLeft(trimmed, "-*• "))
		if !indented && !isField && (blank || pp.label.MatchString(trimmed)) {
			break // the list is over: open questions, risks
		}
		items[len(items)-1].text += "\n" + trimmed
		blank = false
	}
	return items
}

// planFields splits an item into what to do, the files and the check.
func planFields(pp planPatterns, item string) (s session.PlanStep) {
	// Markdown emphasis around the markers ("**Files:**") would hide them.
	text := strings.NewReplacer("**", "", "__", "").Replace(item)
	locs := pp.field.FindAllStringSubmatchIndex(text, -1)
	end := len(text)
	if len(locs) > 0 {
		end = locs[0][2]
	}
	s.Text = cleanValue(text[:end])
	for i, loc := range locs {
		stop := len(text)
		if i+1 < len(locs) {
			stop = locs[i+1][2]
		}
		value := cleanValue(text[loc[1]:stop])
		if strings.HasPrefix(strings.ToLower(text[loc[2]:loc[3]]), "file") {
			s.Files = append(s.Files, splitFiles(value)...)
		} else {
			s.Verify = strings.TrimSpace(s.Verify + " " + value)
		}
	}
	return s
}

// cleanValue joins a value's lines and trims list markers and separators.
func cleanValue(v string) string {
	var parts []string
	for _, line := range strings.Split(v, "\n") {
		line = strings.TrimSpace(strings.TrimLeft(strings.TrimSpace(line), "-*•"))
		if line != "" {
			parts = append(parts, line)
		}
	}
	v = strings.Join(parts, " ")
	v = strings.TrimRight(strings.TrimSpace(v), " ;,(-")
	if strings.Count(v, "`") == 2 && strings.HasPrefix(v, "`") && strings.HasSuffix(v, "`") {
		v = strings.Trim(v, "`")
	}
	return strings.TrimSpace(v)
}

// splitFiles reads "a.go, b.go and c_test.go" as three files; "none" or
// "-" as none.
func splitFiles(v string) []string {
	v = strings.ReplaceAll(v, " and ", ",")
	var files []string
	for _, f := range strings.FieldsFunc(v, func(r rune) bool { return r == ',' || r == ';' }) {
		f = strings.Trim(strings.TrimSpace(f), "`'\"")
		f = strings.TrimRight(f, ".")
		switch strings.ToLower(f) {
		case "", "none", "n/a", "-", "(none)", "no files":
			continue
		}
		files = append(files, f)
	}
	return files
}

// formatStep writes a step as the plan's one line: "2. Text Files: a, b.
// Verify: cmd".
func formatStep(s session.PlanStep) string {
	line := fmt.Sprintf("%d. %s", s.N, s.Text)
	if len(s.Files) > 0 {
		line += " Files: " + strings.Join(s.Files, ", ") + "."
	}
	if s.Verify != "" {
		line += " Verify: " + s.Verify
	}
	return line
}

// stepResult is what a step's final answer says about it.
type stepResult struct {
	failed bool
	// marked is whether the answer had the STEP DONE / STEP FAILED line.
	marked bool
	note   string
}

// readStepResult finds the contract line the step prompt asks for: the
// last line that reads "STEP DONE" or "STEP FAILED: reason" (Markdown
// emphasis and code quotes allowed). With no such line the step counts as
// done, with a note saying so: the model answered without claiming a
// failure.
func readStepResult(answer string) stepResult {
	lines := strings.Split(strings.TrimSpace(answer), "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		line := strings.Trim(strings.TrimSpace(lines[i]), "*_`#> ")
		upper := strings.ToUpper(line)
		var rest string
		var failed bool
		switch {
		case strings.HasPrefix(upper, "STEP FAILED"):
			rest, failed = line[len("STEP FAILED"):], true
		case strings.HasPrefix(upper, "STEP DONE"):
			rest = line[len("STEP DONE"):]
		default:
			continue
		}
		note := strings.TrimSpace(strings.Trim(strings.TrimSpace(rest), ":-—*_` "))
		if note == "" {
			note = lastSentence(lines[:i])
		}
		if failed && note == "" {
			note = "no reason given"
		}
		return stepResult{failed: failed, marked: true, note: clipText(note, 300)}
	}
	return stepResult{marked: false, note: clipText(lastSentence(lines), 300)}
}

// lastSentence is the last non-blank line, a short summary of an answer.
func lastSentence(lines []string) string {
	for i := len(lines) - 1; i >= 0; i-- {
		if l := strings.TrimSpace(lines[i]); l != "" {
			return l
		}
	}
	return ""
}
