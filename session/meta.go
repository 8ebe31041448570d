package session

import (
	"encoding/json"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Commit trailers that let List describe a session from its tip commit alone.
const (
	trailerEntries = "Decode-Entries"
	trailerModel   = "Decode-Model"
	trailerTitle   = "Decode-Title"
	trailerStatus  = "Decode-Status"
	trailerTurns   = "Decode-Turns"
)

const maxTitle = 72

// meta is what the trailers record, kept up to date entry by entry so that
// an append never rescans the session.
type meta struct {
	entries int
	turns   int
	model   string
	title   string
	status  Status
	// modelData is the data of the last assistant entry, decoded only when
	// the model is asked for: decoding every response of a long session
	// while loading it was a third of the time `decode resume` took.
	modelData json.RawMessage
}

// modelName returns the model that answered last (or the session's model).
func (m *meta) modelName() string {
	if m.modelData != nil {
		var d struct {
			Model string `json:"model"`
		}
		if json.Unmarshal(m.modelData, &d) == nil && d.Model != "" {
			m.model = oneLine(d.Model, 200)
		}
		m.modelData = nil
	}
	return m.model
}

// observe folds one entry into the summary.
func (m *meta) observe(e Entry) {
	m.entries++
	if e.Type == TypeApproval || e.Type == TypeSnapshot {
		// A decision (decode approve) runs nothing: the session stays
		// paused; a snapshot (decode rewind) leaves it as it stood.
		return
	}
	m.status = StatusRunning
	switch e.Type {
	case TypeUser:
		m.turns++
		if m.title == "" {
			var d UserData
			if e.Decode(&d) == nil {
				m.title = oneLine(d.Text, maxTitle)
			}
		}
	case TypePlan:
		// A run that carries out a plan is named by the plan's task (or
		// its first step), not by the instruction decode sends for it.
		var d PlanData
		if m.title == "" && e.Decode(&d) == nil {
			switch {
			case strings.TrimSpace(d.Task) != "":
				m.title = oneLine(d.Task, maxTitle)
			case len(d.Steps) > 0:
				m.title = oneLine(d.Steps[0].Text, maxTitle)
			}
		}
	case TypeStart:
		m.modelData = e.Data
		m.modelName()
	case TypeAssistant:
		m.modelData = e.Data
	case TypeApprovalReq:
		m.status = StatusPaused
	case TypeFork:
		m.status = StatusForked
	case TypeEnd:
		var d EndData
		if e.Decode(&d) == nil && d.Status != "" {
			m.status = Status(oneLine(string(d.Status), 40))
		}
	}
}

// trailers renders the summary as commit trailers.
func (m meta) trailers() string {
	var b strings.Builder
	add := func(k, v string) {
		if v != "" {
			b.WriteString(k + ": " + v + "\n")
		}
	}
	add(trailerEntries, strconv.Itoa(m.entries))
	add(trailerModel, m.modelName())
	add(trailerTitle, m.title)
	add(trailerStatus, string(m.status))
	add(trailerTurns, strconv.Itoa(m.turns))
	return b.String()
}

// parseTrailers reads the summary back from a commit message's last paragraph.
func parseTrailers(msg string) meta {
	var m meta
	msg = strings.TrimRight(msg, "\n")
	if i := strings.LastIndex(msg, "\n\n"); i >= 0 {
		msg = msg[i+2:]
	}
	for _, line := range strings.Split(msg, "\n") {
		k, v, ok := strings.Cut(line, ": ")
		if !ok {
			continue
		}
		switch k {
		case trailerEntries:
			m.entries, _ = strconv.Atoi(v)
		case trailerTurns:
			m.turns, _ = strconv.Atoi(v)
		case trailerModel:
			m.model = v
		case trailerTitle:
			m.title = v
		case trailerStatus:
			m.status = Status(v)
		}
	}
	return m
}

// subject names a batch of entries for the commit's first line:
// "tool_result edit main.go" for one entry, the types joined for several.
func subject(es []Entry) string {
	if len(es) == 1 && es[0].Type == "" {
		return "entry"
	}
	if len(es) == 1 {
		if n := oneLine(es[0].Note, 200); n != "" {
			return oneLine(es[0].Type, 60) + " " + n
		}
		return oneLine(es[0].Type, 60)
	}
	parts := make([]string, len(es))
	for i, e := range es {
		parts[i] = oneLine(e.Type, 60)
		if n := oneLine(e.Note, 60); n != "" {
			parts[i] += " " + n
		}
	}
	return oneLine(strings.Join(parts, "; "), 200)
}

// oneLine squeezes s onto one line of at most n runes, so that a value can
// never break the commit message's structure.
func oneLine(s string, n int) string {
	s = strings.Join(strings.FieldsFunc(s, func(r rune) bool {
		return unicode.IsSpace(r) || unicode.IsControl(r)
	}), " ")
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return strings.TrimSpace(string(r[:n-1])) + "…"
}
