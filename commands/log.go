package commands

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/urfave/cli/v2"

	"decode/agent"
	"decode/session"
)

// LogOptions are the inputs of `decode log`.
type LogOptions struct {
	F   *Factory
	Dir string
	// Sessions are the SESSION arguments: none (list), one, or two (--diff).
	Sessions []string
	JSON     bool
	JSONL    bool
	Stat     bool
	Check    bool
	Diff     bool
	// Limit caps the list at the newest N sessions; 0 lists all.
	Limit int
}

// NewCmdLog builds `decode log`.
func NewCmdLog(f *Factory, runF func(*cli.Context, *LogOptions) error) *cli.Command {
	if runF == nil {
		runF = func(c *cli.Context, o *LogOptions) error { return logRun(c.Context, o) }
	}
	return &cli.Command{
		Name:      "log",
		Usage:     "list sessions, or show one",
		ArgsUsage: "[SESSION] | --diff A B",
		Description: `With no SESSION, lists this repository's sessions, newest first: id, age,
model, status, turns, title. With one, prints its transcript, each entry
numbered (decode fork SESSION@N branches after entry N); with SESSION@N, entry
N in full (a tool output a compaction elided). SESSION is an id, a unique
prefix of one, @ for the latest or @~N for the N-th before it.

   decode log -n 10
   decode log @                 # the transcript
   decode log @@42              # entry 42 in full
   decode log --stat @          # tokens, cost, tool calls, time
   decode log --json @ | jq '.[] | select(.type=="tool_call") | .data.name'
   decode log --jsonl @         # the entries exactly as stored
   decode log --check           # every damage in every session, with its position (exit 1 if any)
   decode log --diff @~1 @      # where a fork or replay diverged, and what each did`,
		Flags: []cli.Flag{
			&cli.BoolFlag{Name: "json", Usage: "print JSON: the list, the session's entries, --stat or --diff as one JSON document"},
			&cli.BoolFlag{Name: "jsonl", Usage: "print the session's entries exactly as stored, one JSON object per line"},
			&cli.BoolFlag{Name: "stat", Usage: "print the session's figures: tokens, cost, model requests, tool calls, time"},
			&cli.BoolFlag{Name: "check", Usage: "check SESSION or every session and list each damage with its position (unreadable lines, missing chunks, broken refs); exit 1 if any"},
			&cli.BoolFlag{Name: "diff", Usage: "show where sessions A and B diverge and what each did after"},
			&cli.IntFlag{Name: "limit", Aliases: []string{"n"}, Usage: "list only the newest `N` sessions"},
			&cli.StringFlag{Name: "dir", Aliases: []string{"C"}, Usage: "run in `DIR` instead of the current directory"},
		},
		OnUsageError: onUsageError,
		Action: func(c *cli.Context) error {
			o := &LogOptions{
				F: f, Dir: c.String("dir"), Sessions: c.Args().Slice(),
				JSON: c.Bool("json"), JSONL: c.Bool("jsonl"), Stat: c.Bool("stat"),
				Check: c.Bool("check"), Diff: c.Bool("diff"), Limit: c.Int("limit"),
			}
			if err := o.validate(); err != nil {
				return err
			}
			return runF(c, o)
		},
	}
}

// validate checks that the flags and arguments go together.
func (o *LogOptions) validate() error {
	modes := 0
	for _, on := range []bool{o.JSONL, o.Stat, o.Check, o.Diff} {
		if on {
			modes++
		}
	}
	switch {
	case modes > 1:
		return usageErrorf("log takes one of --jsonl, --stat, --check, --diff")
	case o.JSON && (o.JSONL || o.Check):
		return usageErrorf("--json goes with a list, a SESSION, --stat or --diff")
	case o.Diff && len(o.Sessions) != 2:
		return usageErrorf("--diff takes two sessions: decode log --diff A B")
	case !o.Diff && len(o.Sessions) > 1:
		return usageErrorf("log takes at most one SESSION (two with --diff)")
	case (o.JSONL || o.Stat) && len(o.Sessions) == 0:
		return usageErrorf("--jsonl and --stat need a SESSION, such as @ for the latest")
	case o.Limit < 0:
		return usageErrorf("--limit must not be negative")
	}
	return nil
}

func logRun(ctx context.Context, o *LogOptions) error {
	st, err := openStore(o.F, o.Dir)
	if err != nil {
		return err
	}
	out := o.F.IO.Out
	switch {
	case o.Diff:
		return logDiff(ctx, o, st)
	case o.Check:
		return logCheck(ctx, o, st)
	case len(o.Sessions) == 0:
		infos, err := st.List(ctx)
		if err != nil {
			return err
		}
		infos = warnDamaged(o.F.IO.Err, infos)
		if o.Limit > 0 && len(infos) > o.Limit {
			infos = infos[:o.Limit]
		}
		if o.JSON {
			return writeJSON(out, listJSON(infos))
		}
		printList(out, infos, time.Now())
		return nil
	}
	ref, at, err := session.SplitEntryRef(o.Sessions[0])
	if err != nil {
		return &UsageError{Msg: err.Error()}
	}
	s, err := st.Open(ctx, ref)
	if err != nil {
		return err
	}
	warnProblems(o.F.IO.Err, s)
	if at > 0 {
		return printEntry(out, s, at, o.JSON || o.JSONL)
	}
	switch {
	case o.Stat:
		stat := statOf(s)
		code, err := codeSteps(ctx, st, s.Entries())
		if err != nil {
			return err
		}
		stat.Code = code
		if o.JSON {
			return writeJSON(out, stat)
		}
		printStat(out, stat)
		printCodeSteps(out, stat.Code)
		return nil
	case o.JSONL:
		data, err := s.JSONL(ctx)
		if err != nil {
			return err
		}
		_, err = out.Write(data)
		return err
	case o.JSON:
		return writeEntries(out, s.Entries())
	}
	printTranscript(out, s.Entries())
	return nil
}

// warnDamaged says on stderr which sessions cannot be read, and returns
// the list without those whose ref is broken (git lists those nowhere
// either); a session whose tip is unreadable stays listed as "damaged".
func warnDamaged(w io.Writer, infos []session.Info) []session.Info {
	out := infos[:0:0]
	for _, in := range infos {
		if in.Damage != "" {
			fmt.Fprintf(w, "decode: warning: session %s: %s (decode log --check lists every damage)\n", in.ID, in.Damage)
			if in.BrokenRef {
				continue
			}
			in.Status = "damaged"
		}
		out = append(out, in)
	}
	return out
}

// warnProblems says on stderr which lines were skipped while reading s.
func warnProblems(w io.Writer, s *session.Session) {
	for _, p := range s.Problems() {
		if p.Line > 0 {
			fmt.Fprintf(w, "decode: warning: session %s: %s line %d skipped: %s\n", s.ID(), p.Chunk, p.Line, p.Err)
		} else {
			fmt.Fprintf(w, "decode: warning: session %s: %s\n", s.ID(), p.Position())
		}
	}
}

// writeJSON prints v as one indented JSON document.
func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// writeEntries prints entries as one JSON array with an entry per line, so
// that the output is a single document for jq or json.load and still greps.
func writeEntries(w io.Writer, es []session.Entry) error {
	var b bytes.Buffer
	b.WriteString("[")
	for i, e := range es {
		line, err := json.Marshal(e)
		if err != nil {
			return fmt.Errorf("entry %d: %w", e.ID, err)
		}
		if i > 0 {
			b.WriteString(",")
		}
		b.WriteString("\n")
		b.Write(line)
	}
	b.WriteString("\n]\n")
	_, err := w.Write(b.Bytes())
	return err
}

// infoJSON is a listed session in --json output.
type infoJSON struct {
	ID      string    `json:"id"`
	Created time.Time `json:"created"`
	Updated time.Time `json:"updated"`
	Model   string    `json:"model"`
	Status  string    `json:"status"`
	Turns   int       `json:"turns"`
	Entries int       `json:"entries"`
	Title   string    `json:"title"`
}

func listJSON(infos []session.Info) []infoJSON {
	out := make([]infoJSON, len(infos))
	for i, in := range infos {
		out[i] = infoJSON{ID: in.ID, Created: in.Created, Updated: in.Updated, Model: in.Model,
			Status: string(in.Status), Turns: in.Turns, Entries: in.Entries, Title: in.Title}
	}
	return out
}

// printList prints one line per session: id, age, model, status, turns,
// title, in columns as wide as their widest value (within limits).
func printList(w io.Writer, infos []session.Info, now time.Time) {
	modelW, statusW := 5, 4
	for _, in := range infos {
		modelW = max(modelW, min(utf8.RuneCountInString(in.Model), 32))
		statusW = max(statusW, utf8.RuneCountInString(string(in.Status)))
	}
	var b strings.Builder
	for _, in := range infos {
		fmt.Fprintf(&b, "%s  %4s  %-*s  %-*s  %3d  %s\n", in.ID, age(now.Sub(in.Updated)),
			modelW, clipRunes(orDash(in.Model), 32), statusW, orDash(string(in.Status)), in.Turns, in.Title)
	}
	io.WriteString(w, b.String())
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func clipRunes(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}

func age(d time.Duration) string {
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%ds", max(int(d.Seconds()), 0))
	case d < time.Hour:
		return fmt.Sprintf("%dm", int(d.Minutes()))
	case d < 48*time.Hour:
		return fmt.Sprintf("%dh", int(d.Hours()))
	}
	return fmt.Sprintf("%dd", int(d.Hours()/24))
}

// printTranscript renders entries as plain text: each entry's id in a
// gutter (the ENTRY of decode fork SESSION@ENTRY), then what it says.
func printTranscript(w io.Writer, es []session.Entry) {
	var b strings.Builder
	for _, e := range es {
		text := entryText(e)
		if text == "" {
			continue
		}
		for i, line := range strings.Split(text, "\n") {
			if i == 0 {
				fmt.Fprintf(&b, "%4d  %s\n", e.ID, line)
			} else {
				fmt.Fprintf(&b, "      %s\n", line)
			}
		}
	}
	io.WriteString(w, b.String())
}

// entryText is what the transcript shows of one entry; "" hides it (an
// assistant message with only tool calls, which the tool_call entries show).
func entryText(e session.Entry) string {
	switch e.Type {
	case session.TypeStart:
		var d session.StartData
		_ = e.Decode(&d)
		return fmt.Sprintf("# %s with %s, mode %s, in %s, %s", orDash(d.Command), orDash(d.Model), orDash(d.Mode), orDash(d.Cwd), e.TS.Format(time.RFC3339))
	case session.TypeUser, session.TypeSteer:
		var d session.UserData
		_ = e.Decode(&d)
		prefix := "> "
		if e.Type == session.TypeSteer {
			prefix = "> (steer) "
		}
		return prefix + strings.ReplaceAll(strings.TrimRight(d.Text, "\n"), "\n", "\n> ")
	case session.TypeAssistant:
		var d session.AssistantData
		_ = e.Decode(&d)
		return strings.TrimRight(d.Message.Text, "\n")
	case session.TypeToolCall:
		var d session.ToolCallData
		_ = e.Decode(&d)
		line := strings.TrimSpace("→ " + d.Name + " " + agent.Summarize(d.Args))
		if d.Decision != "" && d.Decision != "allow" {
			line += fmt.Sprintf(" [%s: %s]", d.Decision, firstLineOf(d.Reason))
		}
		return line
	case session.TypeToolResult:
		var d session.ToolResultData
		_ = e.Decode(&d)
		status := "ok"
		if d.IsError {
			status = "error"
		}
		line := fmt.Sprintf("← %s %s", d.Name, status)
		if first := strings.Join(strings.Fields(firstLineOf(d.Content)), " "); first != "" {
			line += ": " + first
		}
		return line
	case session.TypeApprovalReq, session.TypeApproval:
		return decisionText(e)
	case session.TypeFork:
		var d session.ForkData
		_ = e.Decode(&d)
		if d.Replay {
			return fmt.Sprintf("# replay of %s on %s", d.From, orDash(d.Model))
		}
		return fmt.Sprintf("# forked from %s after entry %d", d.From, d.At)
	case session.TypeSpec:
		var d session.SpecData
		_ = e.Decode(&d)
		parts := make([]string, len(d.Changes))
		for i, c := range d.Changes {
			parts[i] = c.String()
		}
		return "# resumed with " + strings.Join(parts, "; ")
	case session.TypeLimit:
		var d session.LimitData
		_ = e.Decode(&d)
		return fmt.Sprintf("# limit: %s (%s)", d.Limit, d.Value)
	case session.TypeError:
		var d session.ErrorData
		_ = e.Decode(&d)
		return fmt.Sprintf("# error %s: %s", orDash(d.Kind), firstLineOf(d.Message))
	case session.TypeInterrupted:
		var d session.InterruptedData
		_ = e.Decode(&d)
		return "# interrupted: " + d.Reason
	case session.TypeSnapshot:
		return snapshotText(e)
	case session.TypeCompaction:
		return compactionText(e)
	case session.TypeEnd:
		var d session.EndData
		_ = e.Decode(&d)
		return fmt.Sprintf("# %s (exit %d): %s, %d tokens in, %d out, %s",
			d.Status, d.Exit, plural(d.Turns, "request"), d.Usage.Input, d.Usage.Output, duration(d.Ms))
	}
	return fmt.Sprintf("[%s] %s", e.Type, firstLineOf(string(e.Data)))
}

// duration renders milliseconds for people: 850ms, 12.3s, 4m05s.
func duration(ms int64) string {
	d := time.Duration(ms) * time.Millisecond
	switch {
	case d < time.Second:
		return fmt.Sprintf("%dms", ms)
	case d < time.Minute:
		return fmt.Sprintf("%.1fs", d.Seconds())
	case d < time.Hour:
		return fmt.Sprintf("%dm%02ds", int(d.Minutes()), int(d.Seconds())%60)
	}
	return fmt.Sprintf("%dh%02dm", int(d.Hours()), int(d.Minutes())%60)
}

// compactionText is the transcript's line for a compaction: tokens before
// and after, what was folded and how.
func compactionText(e session.Entry) string {
	var d session.CompactionData
	if e.Decode(&d) != nil {
		return "# compaction (unreadable)"
	}
	kept := "no entry kept"
	if d.FirstKept > 0 {
		kept = fmt.Sprintf("kept from entry %d", d.FirstKept)
	}
	line := fmt.Sprintf("# compaction (%s, %s): %d → %d tokens, %s folded, %s", d.Trigger, d.Strategy,
		d.TokensBefore, d.TokensAfter, plural(d.Folded, "entry"), kept)
	if len(d.Elided) > 0 {
		line += fmt.Sprintf(", %s elided", plural(len(d.Elided), "tool output"))
	}
	if d.Reason != "" {
		line += "\n  provider: " + clipRunes(firstLineOf(d.Reason), 160)
	}
	if d.Focus != "" {
		line += "\n  focus: " + firstLineOf(d.Focus)
	}
	if d.Summary != "" {
		line += "\n  summary: " + clipRunes(strings.Join(strings.Fields(d.Summary), " "), 160)
	}
	return line
}

// printEntry prints entry id of s in full: a tool result's whole output, a
// message's whole text, or, with asJSON, the entry as stored.
func printEntry(w io.Writer, s *session.Session, id int, asJSON bool) error {
	for _, e := range s.Entries() {
		if e.ID != id {
			continue
		}
		if asJSON {
			b, err := json.Marshal(e)
			if err != nil {
				return err
			}
			_, err = w.Write(append(b, '\n'))
			return err
		}
		text := entryText(e)
		switch e.Type {
		case session.TypeToolResult:
			var d session.ToolResultData
			_ = e.Decode(&d)
			text = d.Content
		case session.TypeCompaction:
			var d session.CompactionData
			_ = e.Decode(&d)
			text += "\n\n" + agent.FoldedText(d, s.ID())
		}
		if !strings.HasSuffix(text, "\n") {
			text += "\n"
		}
		_, err := io.WriteString(w, text)
		return err
	}
	return fmt.Errorf("session %s has no entry %d (decode log %s lists them)", s.ID(), id, s.ID())
}
