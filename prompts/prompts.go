// Package prompts holds decode's system prompt, embedded from the .md files
// beside this one, and assembles it in one place.
//
// Every token of the system prompt is paid on every request, so the text is
// kept short and its size is tested (see prompts_test.go).
package prompts

import (
	_ "embed"
	"strings"
	"time"
)

var (
	//go:embed base.md
	base string
	//go:embed ask.md
	ask string
	//go:embed run.md
	run string
	//go:embed plan.md
	plan string
	//go:embed remember.md
	remember string
	//go:embed compact.md
	compact string
)

// Compact is the system prompt of the model call that summarises the
// earlier part of a long session when decode compacts its context.
func Compact() string { return compact }

// Remember is the system prompt of the short model call that --remember
// makes at the end of a run: one sentence for MEMORY.md, or NONE.
func Remember() string { return remember }

// commandPart returns the text a command adds after base.md.
func commandPart(command string) string {
	switch command {
	case "ask":
		return ask
	case "run":
		return run
	case "plan":
		return plan
	}
	return ""
}

// SkillLine is one skill as listed in the prompt.
type SkillLine struct {
	Name, Description string
	// Untrusted marks a skill from a repository the user has not trusted.
	Untrusted bool
}

// Options is what the system prompt is built from.
type Options struct {
	// Command is "ask", "run" or "plan" and picks the command's part of the
	// prompt; any other value adds none.
	Command string
	// Mode is the permission mode (default, plan, edit, bypass).
	Mode string
	// Cwd, OS, Date and GitRepo describe the environment. Date should be a
	// day ("2026-11-30"); a longer RFC 3339 time is cut to its day so the
	// prompt, and the provider's cache of it, changes at most daily.
	Cwd     string
	OS      string
	Date    string
	GitRepo bool
	// Memory is memory.Render's output.
	Memory string
	// Skills are listed by name and description for the model to load.
	Skills []SkillLine
	// Replace, when not empty, replaces the built-in instructions (base and
	// the command's part); memory, skills and environment are still added.
	Replace string
	// Append extends the built-in (or replacing) instructions.
	Append string
}

// System assembles the system prompt. The order keeps the text that changes
// least first, so a provider's prompt cache keeps matching: built-in
// instructions (or Replace), the command's part, Append, memory, skills, and
// the environment lines last.
func System(o Options) string {
	var parts []string
	if strings.TrimSpace(o.Replace) != "" {
		parts = append(parts, o.Replace)
	} else {
		parts = append(parts, base, commandPart(o.Command))
	}
	parts = append(parts, o.Append, o.Memory, skillsSection(o.Skills), environment(o))

	var b strings.Builder
	for _, p := range parts {
		p = strings.TrimSpace(p)
		if p == "" {
			continue
		}
		if b.Len() > 0 {
			b.WriteString("\n\n")
		}
		b.WriteString(p)
	}
	b.WriteByte('\n')
	return b.String()
}

// skillsSection lists skills one a line, or gives "" for none.
func skillsSection(skills []SkillLine) string {
	if len(skills) == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteString("Skills (load one with the skill tool when the task matches it):\n")
	for _, s := range skills {
		b.WriteString("- ")
		b.WriteString(oneLine(s.Name))
		if s.Untrusted {
			b.WriteString(" (untrusted: from this repository, not from the user)")
		}
		if d := oneLine(s.Description); d != "" {
			b.WriteString(": ")
			b.WriteString(d)
		}
		b.WriteByte('\n')
	}
	return b.String()
}

// environment gives the environment lines, leaving out unknown values.
func environment(o Options) string {
	var b strings.Builder
	b.WriteString("Environment:\n")
	line := func(k, v string) {
		if v = oneLine(v); v != "" {
			b.WriteString("- " + k + ": " + v + "\n")
		}
	}
	line("working directory", o.Cwd)
	line("OS", o.OS)
	line("date", day(o.Date))
	if o.GitRepo {
		line("git repository", "yes")
	} else {
		line("git repository", "no")
	}
	line("permission mode", o.Mode)
	return b.String()
}

// day cuts a timestamp to its date; other strings are kept as they are.
func day(s string) string {
	if len(s) > len(time.DateOnly) {
		if _, err := time.Parse(time.DateOnly, s[:len(time.DateOnly)]); err == nil {
			return s[:len(time.DateOnly)]
		}
	}
	return s
}

// oneLine collapses whitespace, newlines included, so a value cannot add
// lines of its own to the prompt.
func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}

// EstimateTokens estimates the tokens s costs as its length in bytes divided
// by four, rounded up. Four bytes a token is the usual rule of thumb for
// English and code with current tokenizers; counting bytes rather than
// characters errs high for non-ASCII text, which tokenizes less densely. It
// is for budgets and tests, not billing.
func EstimateTokens(s string) int {
	return (len(s) + 3) / 4
}
